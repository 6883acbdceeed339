#include "user_kernels.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#include "cl_buffer.h"
#include "cl_impl.h"
#include "cl_runtime.h"
#include "kc/ops/elementwise.h"

namespace kc::backends::opencl {
namespace {

enum class Convention { kMatmul, kSum, kRows, kUnary };

std::optional<Convention> convention_of(const std::string& op) {
  if (op == "matmul") return Convention::kMatmul;
  if (op == "sum") return Convention::kSum;
  if (op == "softmax" || op == "log_softmax") return Convention::kRows;
  if (const auto fn = ops::parse_unary_fn(op)) {
    const auto fns = ops::elementwise_fns();
    if (std::find(fns.begin(), fns.end(), *fn) != fns.end()) return Convention::kUnary;
  }
  return std::nullopt;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string stem_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = base.find_last_of('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

/// The work-group size the kernel requires (reqd_work_group_size), or `fallback`.
std::vector<std::size_t> local_size(const Runtime& rt, cl_kernel k, std::vector<std::size_t> fallback) {
  std::size_t req[3] = {0, 0, 0};
  if (clGetKernelWorkGroupInfo(k, rt.device(), CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof req, req, nullptr) ==
          CL_SUCCESS &&
      req[0] > 0) {
    for (std::size_t i = 0; i < fallback.size(); ++i) fallback[i] = req[i] > 0 ? req[i] : 1;
  }
  return fallback;
}

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

Status run_user(const UserSource& src, const std::string& kernel, Convention conv, Call& call) {
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(src.text, src.options, kernel));
  std::vector<DeviceTensor> dev;
  switch (conv) {
    case Convention::kMatmul: {
      KC_ASSIGN_OR_RETURN(MatmulArgs a, matmul_args(call));
      if (a.trans_a || a.trans_b) return unimplemented("the kc_matmul convention has no transposes");
      KC_RETURN_IF_ERROR(add_matmul_devices(dev, call, a));
      KC_RETURN_IF_ERROR(set_args(k, a.m, a.n, a.k, a.alpha, dev[0].buffer.mem(), a.lda, dev[1].buffer.mem(), a.ldb,
                                  a.beta, dev[2].buffer.mem(), a.ldc));
      const auto local = local_size(*rt, k, {16, 16});
      KC_RETURN_IF_ERROR(launch(k,
                                {round_up(static_cast<std::size_t>(a.n), local[0]),
                                 round_up(static_cast<std::size_t>(a.m), local[1])},
                                local, kernel));
      break;
    }
    case Convention::kSum: {
      KC_ASSIGN_OR_RETURN(SumArgs a, sum_args(call));
      KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"out"}));
      KC_RETURN_IF_ERROR(set_args(k, a.n, dev[0].buffer.mem(), a.incx, dev[1].buffer.mem()));
      const auto local = local_size(*rt, k, {256});
      KC_RETURN_IF_ERROR(launch(k, local, local, kernel));
      break;
    }
    case Convention::kRows: {
      KC_ASSIGN_OR_RETURN(RowsArgs a, rows_args(call));
      KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"y"}));
      KC_RETURN_IF_ERROR(set_args(k, a.rows, a.cols, dev[0].buffer.mem(), a.ldx, dev[1].buffer.mem(), a.ldy));
      const auto local = local_size(*rt, k, {64});
      KC_RETURN_IF_ERROR(launch(k, {static_cast<std::size_t>(a.rows) * local[0]}, local, kernel));
      break;
    }
    case Convention::kUnary: {
      KC_ASSIGN_OR_RETURN(int n, unary_args(call));
      KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"y"}));
      KC_RETURN_IF_ERROR(set_args(k, n, dev[0].buffer.mem(), dev[1].buffer.mem()));
      const auto local = local_size(*rt, k, {64});
      KC_RETURN_IF_ERROR(launch(k, {round_up(static_cast<std::size_t>(n), local[0])}, local, kernel));
      break;
    }
  }
  return finish(dev);
}

}  // namespace

Result<UserSource> parse_user_source(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  UserSource src;
  src.path = path;
  src.text = ss.str();
  const std::string stem = stem_of(path);

  // Kernels: `__kernel` / `kernel` ... `void kc_<name>(`.
  static const std::regex kKernel(R"((?:__kernel|\bkernel)\b[^;{]*?\bvoid\s+(kc_\w+)\s*\()");
  for (auto it = std::sregex_iterator(src.text.begin(), src.text.end(), kKernel); it != std::sregex_iterator(); ++it) {
    const std::string kernel = (*it)[1];
    const std::string op = kernel.substr(3);
    const auto conv = convention_of(op);
    if (!conv) {
      return invalid_argument(path + ": kernel '" + kernel + "' names no op with a kc kernel convention (matmul, sum, "
                              "softmax, log_softmax, or an elementwise op such as relu, exp, tanh, gelu_erf)");
    }
    UserKernel uk;
    uk.kernel = kernel;
    Declaration& d = uk.decl;
    d.name = stem + "." + op;
    d.op = op;
    d.backend = "opencl_user";
    d.runtime = kOpenclRuntime;
    d.dtypes = {DType::kF32};
    if (*conv == Convention::kMatmul || *conv == Convention::kSum || *conv == Convention::kRows)
      d.accumulator = DType::kF32;
    d.source = path + " (kernel " + kernel + "; declarations from its kc-declare comment, defaults otherwise)";
    d.description = "user OpenCL kernel " + kernel + " from " + path;
    src.kernels.push_back(std::move(uk));
  }
  if (src.kernels.empty()) {
    return invalid_argument(path + " defines no kernel named kc_<op> (e.g. kc_matmul, kc_relu); see "
                            "docs/backends/opencl.md, \"Vetting a .cl file\"");
  }

  // Comment directives.
  std::istringstream lines(src.text);
  std::string line;
  int lineno = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    const std::string t = trim(line);
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    if (t.rfind("// kc-options:", 0) == 0) {
      src.options = trim(t.substr(14));
    } else if (t.rfind("// kc-declare kc_", 0) == 0) {
      const std::string rest = t.substr(14);
      const auto colon = rest.find(':');
      if (colon == std::string::npos) return invalid_argument(where + "expected `// kc-declare kc_<op>: key = VALUE, ...`");
      const std::string kernel = trim(rest.substr(0, colon));
      auto uk = std::find_if(src.kernels.begin(), src.kernels.end(), [&](const UserKernel& u) { return u.kernel == kernel; });
      if (uk == src.kernels.end()) return invalid_argument(where + "kc-declare names '" + kernel + "', which the file does not define");
      std::stringstream items(rest.substr(colon + 1));
      std::string item;
      while (std::getline(items, item, ',')) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) return invalid_argument(where + "expected key = VALUE, got '" + trim(item) + "'");
        std::string error;
        if (!uk->decl.set(trim(item.substr(0, eq)), trim(item.substr(eq + 1)), &error))
          return invalid_argument(where + error);
      }
    }
  }
  if (!src.options.empty())
    for (auto& uk : src.kernels) uk.decl.extra["build_options"] = src.options;
  return src;
}

std::vector<std::shared_ptr<const Impl>> user_impls(const UserSource& source) {
  std::vector<std::shared_ptr<const Impl>> out;
  auto shared = std::make_shared<UserSource>(source);
  for (const UserKernel& uk : source.kernels) {
    const Convention conv = *convention_of(uk.decl.op);
    const std::string kernel = uk.kernel;
    out.push_back(std::make_shared<ClImpl>(
        uk.decl, [shared, kernel, conv](Call& call) { return run_user(*shared, kernel, conv, call); }));
  }
  return out;
}

}  // namespace kc::backends::opencl
