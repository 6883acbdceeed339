// kc — the opencl and opencl_user backends (see opencl_backend.h).
#include "opencl_backend.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "cl_impl.h"
#include "cl_runtime.h"
#include "kc/child.h"
#include "user_kernels.h"

#if KC_OPENCL_HAVE_CLBLAST
#include <clblast.h>
#endif

namespace kc::backends {
namespace {

using opencl::Runtime;

// The probe's child writes key=value lines.
constexpr double kProbeTimeoutS = 120;  // a cold PoCL build takes seconds per program on 2 cores

std::string clblast_version() {
#if KC_OPENCL_HAVE_CLBLAST
  return std::to_string(CLBLAST_VERSION_MAJOR) + "." + std::to_string(CLBLAST_VERSION_MINOR) + "." +
         std::to_string(CLBLAST_VERSION_PATCH);
#else
  return {};
#endif
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Runs in the probe child: the runtime's identity and the cost of building
/// every in-project program (which also fills PoCL's on-disk kernel cache, so
/// workers find the programs built).
Result<std::string> probe_in_child() {
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::ostringstream o;
  o << "platform=" << opencl::platform_string(rt->platform(), CL_PLATFORM_NAME) << "\n";
  o << "platform_version=" << opencl::platform_string(rt->platform(), CL_PLATFORM_VERSION) << "\n";
  o << "device=" << opencl::device_string(rt->device(), CL_DEVICE_NAME) << "\n";
  o << "device_version=" << opencl::device_string(rt->device(), CL_DEVICE_VERSION) << "\n";
  o << "c_version=" << opencl::device_string(rt->device(), CL_DEVICE_OPENCL_C_VERSION) << "\n";
  o << "single_denorm=" << ((rt->single_fp_config() & CL_FP_DENORM) ? 1 : 0) << "\n";
  const auto t0 = std::chrono::steady_clock::now();
  // Two representative programs (the default-option common kernels and the
  // default 16x16 matmul tile): enough to measure what a build costs and to
  // catch a broken compiler here rather than in every case. The rest are built
  // on first use in each worker (PoCL keeps compiled kernels in its on-disk
  // cache, so later processes pay a fraction of the cold cost).
  const auto programs = opencl::project_programs();
  const int total = static_cast<int>(programs.size());
  for (const auto& [source, options] : programs) {
    if (!options.empty() && options != "-DTS=16 -DWPT=1") continue;
    auto built = rt->program(source, options);
    if (!built.ok()) return built.status().with_context("building the in-project kernels");
  }
  o << "programs_total=" << total << "\n";
  const auto [count, build_s] = rt->build_stats();
  o << "programs=" << count << "\n";
  o << "build_seconds=" << fixed(build_s, 2) << "\n";
  o << "wall_seconds=" << fixed(opencl::seconds_since(t0), 2) << "\n";
  return o.str();
}

std::map<std::string, std::string> parse_lines(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

class OpenclBackend final : public Backend {
 public:
  std::string_view name() const override { return "opencl"; }

  BackendInfo probe() override {
    if (info_) return *info_;
    BackendInfo info;
    info.name = "opencl";
    info.description =
        "in-project OpenCL C kernels (default, -cl-fast-relaxed-math, -cl-denorms-are-zero builds) and CLBlast";
    const std::string blast = clblast_version();
    auto probed = run_in_child(probe_in_child, kProbeTimeoutS, "the OpenCL child process");
    if (!probed.ok()) {
      info.available = false;
      info.reason = probed.status().message();
      info.version = blast.empty() ? "CLBlast absent at build time" : "CLBlast " + blast;
      info_ = info;
      return info;
    }
    auto kv = parse_lines(*probed);
    facts_.single_denorm = kv["single_denorm"] == "1";
    info.available = true;
    info.version = kv["platform_version"] + "; device " + kv["device"] + " (" + kv["device_version"] + ", " +
                   kv["c_version"] + ")" + (blast.empty() ? "; CLBlast absent at build time" : "; CLBlast " + blast);
    info.reason = "platform " + kv["platform"] + "; clBuildProgram of " + kv["programs"] + " of the " +
                  kv["programs_total"] + " in-project programs took " + kv["build_seconds"] +
                  " s (the others are built on first use, once per worker process)";
    info_ = info;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    if (!probe().available) return {};
    if (impls_.empty()) {
      impls_ = opencl::project_impls(facts_);
      for (auto& i : opencl::clblast_impls()) impls_.push_back(std::move(i));
      for (auto& i : opencl::incident_impls()) impls_.push_back(std::move(i));
    }
    return impls_;
  }

 private:
  std::optional<BackendInfo> info_;
  opencl::DeviceFacts facts_;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

/// Runs in a child: builds a user's file with its options and lists its impls.
Result<std::string> build_user_in_child(const opencl::UserSource& src) {
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(opencl::BuiltProgram b, rt->program(src.text, src.options));
  std::string out = "built in " + fixed(b.build_seconds, 2) + " s on " +
                    opencl::device_string(rt->device(), CL_DEVICE_NAME) + "\n";
  for (const auto& k : src.kernels) {
    // Creating each kernel checks that the name really is a kernel of the program.
    KC_RETURN_IF_ERROR(rt->kernel(src.text, src.options, k.kernel).status());
    out += "  " + k.decl.name + "  op " + k.decl.op + "  (kernel " + k.kernel + ")\n";
  }
  return out;
}

class OpenclUserBackend final : public Backend {
 public:
  explicit OpenclUserBackend(std::vector<std::string> sources) : sources_(std::move(sources)) {}
  std::string_view name() const override { return "opencl_user"; }

  BackendInfo probe() override {
    if (info_) return *info_;
    BackendInfo info;
    info.name = "opencl_user";
    info.description = "kernels from user .cl files (kc vet), by the kc_<op> convention";
    if (sources_.empty()) {
      info.reason = "no .cl file given (kc vet FILE.cl)";
      info_ = info;
      return info;
    }
    std::vector<opencl::UserSource> parsed;
    for (const auto& path : sources_) {
      auto src = opencl::parse_user_source(path);
      if (!src.ok()) {
        info.reason = src.status().message();
        info_ = info;
        return info;
      }
      auto built = run_in_child([&] { return build_user_in_child(*src); }, kProbeTimeoutS, "the OpenCL child process");
      if (!built.ok()) {
        info.reason = path + ": " + built.status().message();
        info_ = info;
        return info;
      }
      parsed.push_back(std::move(src).value());
    }
    for (const auto& src : parsed)
      for (auto& i : opencl::user_impls(src)) impls_.push_back(std::move(i));
    info.available = true;
    info.reason = std::to_string(impls_.size()) + " impl(s) from " + std::to_string(sources_.size()) + " file(s)";
    info_ = info;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    if (!probe().available) return {};
    return impls_;
  }

 private:
  std::vector<std::string> sources_;
  std::optional<BackendInfo> info_;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace

std::unique_ptr<Backend> make_opencl_backend() { return std::make_unique<OpenclBackend>(); }

std::unique_ptr<Backend> make_opencl_user_backend(std::vector<std::string> sources) {
  return std::make_unique<OpenclUserBackend>(std::move(sources));
}

Result<std::string> build_opencl_source(const std::string& path) {
  KC_ASSIGN_OR_RETURN(opencl::UserSource src, opencl::parse_user_source(path));
  auto built = run_in_child([&] { return build_user_in_child(src); }, kProbeTimeoutS, "the OpenCL child process");
  if (!built.ok()) {
    if (built.status().code() == StatusCode::kInvalidArgument)
      return invalid_argument("building " + path + " failed: " + built.status().message());
    return built.status();
  }
  return built;
}

}  // namespace kc::backends
