// The run profile: machine, libraries, environment knobs and the FP state.
#include "kc/profile.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cfenv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kc/json_writer.h"
#include "kc/report_common.h"
#include "kc_commit.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

extern char** environ;

namespace kc::report {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\n");
  const auto e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// The value of the first "key : value" line of a /proc-style file.
std::string field(const std::string& path, const std::string& key, char sep = ':') {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find(sep);
    if (at != std::string::npos && trim(line.substr(0, at)) == key) return trim(line.substr(at + 1));
  }
  return "";
}

std::string rounding_name(int mode) {
  switch (mode) {
    case FE_TONEAREST: return "to nearest";
    case FE_DOWNWARD: return "downward";
    case FE_UPWARD: return "upward";
    case FE_TOWARDZERO: return "toward zero";
    default: return "unknown";
  }
}

}  // namespace

bool profile_env_knob(const std::string& name) {
  static const char* const kPrefixes[] = {
      "OPENBLAS_", "GOTO_",   "BLIS_",  "OMP_",   "GOMP_",   "KMP_",    "MKL_",   "DNNL_",      "ONEDNN_",
      "CUDA_",     "CUBLAS",  "CUDNN_", "NVIDIA_", "TORCH_", "ATEN_",   "POCL_",  "OCL_",       "EIGEN_",
      "SLEEF_",    "HWY_",    "KC_",    "OPAL_",  "OMPI_MCA_", "CLBLAST_"};
  static const char* const kNames[] = {"LD_PRELOAD", "LD_LIBRARY_PATH", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES"};
  for (const char* p : kPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

Profile collect_profile(const std::vector<BackendInfo>& backends) {
  Profile p;
  auto& f = p.facts;
  f["host"] = host_name();
  if (utsname u{}; uname(&u) == 0) {
    f["kernel"] = std::string(u.sysname) + " " + u.release;
    f["machine"] = u.machine;
  }
  std::string os = field("/etc/os-release", "PRETTY_NAME", '=');
  if (os.size() >= 2 && os.front() == '"') os = os.substr(1, os.size() - 2);
  f["os"] = os;
  f["cpu_model"] = field("/proc/cpuinfo", "model name");
  f["cpu_flags"] = field("/proc/cpuinfo", "flags");
  f["logical_cpus"] = std::to_string(sysconf(_SC_NPROCESSORS_ONLN));
  f["memory"] = field("/proc/meminfo", "MemTotal");
  // GPUs as the NVIDIA driver lists them; kc's process never loads CUDA.
  std::error_code ec;
  const std::string nv = field("/proc/driver/nvidia/version", "NVRM version");
  if (!nv.empty()) f["nvidia_driver"] = nv;
  if (std::filesystem::is_directory("/proc/driver/nvidia/gpus", ec)) {
    int i = 0;
    for (const auto& d : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec))
      f["gpu_" + std::to_string(i++)] = field((d.path() / "information").string(), "Model") + " (" +
                                        d.path().filename().string() + ")";
  }
  // kc's own floating-point state when the record was made (workers restore
  // theirs; this is the state kc's oracles and judges ran under).
  f["fp_rounding"] = rounding_name(std::fegetround());
#if defined(__x86_64__) || defined(__i386__)
  const unsigned mxcsr = _mm_getcsr();
  f["fp_ftz"] = (mxcsr & 0x8000u) ? "on" : "off";
  f["fp_daz"] = (mxcsr & 0x0040u) ? "on" : "off";
#endif
  f["kc_version"] = std::string(kKcVersion);
  f["kc_commit"] = KC_GIT_COMMIT;
#if defined(__clang__)
  f["compiler"] = "clang " __clang_version__;
#elif defined(__GNUC__)
  f["compiler"] = "gcc " __VERSION__;
#endif
  for (const auto& b : backends) f["library_" + b.name] = b.available ? b.version : "unavailable: " + b.reason;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = kv.substr(0, eq);
    if (profile_env_knob(name)) p.env[name] = kv.substr(eq + 1);
  }
  return p;
}

void write_profile(JsonWriter& w, const Profile& p) {
  w.begin_object();
  for (const auto& [k, v] : p.facts) w.field(k, v);
  w.key("env").begin_object();
  for (const auto& [k, v] : p.env) w.field(k, v);
  w.end_object();
  w.end_object();
}

}  // namespace kc::report
