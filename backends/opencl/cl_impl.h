// kc — pieces shared by the opencl backend's impls: the Impl class, argument
// checks, and the impl lists of each file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cl_buffer.h"
#include "kc/backend.h"

namespace kc::backends::opencl {

using RunFn = std::function<Status(Call&)>;

/// An impl whose run() takes the process's OpenCL runtime (created in the
/// worker on first use), serialises on its run mutex, and prefixes errors
/// with the impl name.
class ClImpl final : public Impl {
 public:
  ClImpl(Declaration decl, RunFn run) : decl_(std::move(decl)), run_(std::move(run)) {}
  const Declaration& declaration() const override { return decl_; }
  Status can_implement(const Call& call) const override;
  Status run(Call& call) const override;

 private:
  Declaration decl_;
  RunFn run_;
};

Status check_dtype(const Call& call, const char* name, DType dtype);
/// v as a 32-bit int (the kernels' index type), or kUnimplemented.
Result<int> to_int(std::int64_t v, const char* what);
/// Leading dimension of a row-major rows x cols matrix with unit inner stride.
Result<std::int64_t> leading_dim(const Tensor& t, const char* name, std::int64_t rows, std::int64_t cols);
/// A rank-1 tensor's element stride (>= 1).
Result<std::int64_t> vector_inc(const Tensor& t, const char* name);
Result<bool> trans_flag(const Call& call, const std::string& key);

/// matmul's problem read from a call.
struct MatmulArgs {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int lda = 1, ldb = 1, ldc = 1;
  float alpha = 1, beta = 0;
};
Result<MatmulArgs> matmul_args(const Call& call);
/// Pushes the device copies of matmul's A and B (inputs) and C (copied back)
/// onto `dev`, in that order. With beta = 0, C need not be set on input
/// (sgemm.f), so it is uploaded as NaN and a kernel that reads it anyway shows.
Status add_matmul_devices(std::vector<DeviceTensor>& dev, Call& call, const MatmulArgs& a);

/// sum's problem read from a call: n FP32 elements of x at stride incx into
/// the one-element FP32 out, x's storage indexable by the kernels' int.
struct SumArgs {
  int n = 0, incx = 1;
};
Result<SumArgs> sum_args(const Call& call);

/// gather's problem read from a call: n FP32 rows of `dim` columns picked from
/// `table` (rows x dim, leading dimension ldt) by the I64 `index` (stride inc)
/// into `out` (leading dimension ldo).
struct GatherArgs {
  std::int64_t rows = 0, inc64 = 1;
  int n = 0, dim = 0, inc = 1, ldt = 1, ldo = 1;
};
Result<GatherArgs> gather_args(const Call& call);

/// A row-wise op's problem (softmax, log_softmax) read from a call: FP32
/// x -> y, both rows x cols with unit inner stride.
struct RowsArgs {
  int rows = 0, cols = 0, ldx = 1, ldy = 1;
};
Result<RowsArgs> rows_args(const Call& call);

/// An elementwise op's element count: FP32 x -> y, both contiguous.
Result<int> unary_args(const Call& call);

/// A declaration with the fields every opencl impl shares.
Declaration base_declaration(const std::string& name, const std::string& op, const std::string& description);

/// The device facts declarations depend on (from the probe).
struct DeviceFacts {
  bool single_denorm = true;  ///< CL_DEVICE_SINGLE_FP_CONFIG has CL_FP_DENORM
};

/// In-project kernels (opencl_impls.cc), CLBlast routines (clblast_impls.cc).
std::vector<std::shared_ptr<const Impl>> project_impls(const DeviceFacts& facts);
std::vector<std::shared_ptr<const Impl>> clblast_impls();
/// The incident replays (incident_impls.cc): broken on purpose, declared
/// with extra[broken_on_purpose] so they run only when named.
std::vector<std::shared_ptr<const Impl>> incident_impls();

/// Every (source, options) pair the in-project impls build, for the probe's
/// build-time report.
std::vector<std::pair<std::string, std::string>> project_programs();

}  // namespace kc::backends::opencl
