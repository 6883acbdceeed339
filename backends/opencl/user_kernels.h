// kc — a user's .cl file as impls (`kc vet file.cl`): the kernel convention.
//
// A kernel named kc_<op> implements op <op> with a fixed argument list:
//   matmul       kc_matmul(int M, int N, int K, float alpha,
//                          __global const float* A, int lda, __global const float* B, int ldb,
//                          float beta, __global float* C, int ldc)
//                row-major, C = alpha A B + beta C (no transposes: calls with
//                trans_a/trans_b = T are not applicable); NDRange (N, M) rounded
//                up to the work-group, work-group (16, 16) unless the kernel
//                says reqd_work_group_size.
//   sum          kc_sum(int n, __global const float* x, int incx, __global float* out)
//                one work-group of 256 (or reqd_work_group_size) work-items.
//   softmax, log_softmax
//                kc_softmax(int rows, int cols, __global const float* x, int ldx,
//                           __global float* y, int ldy)
//                one work-group of 64 (or reqd) work-items per row.
//   any elementwise op (relu, exp, log, tanh, erf, gelu_erf, gelu_tanh, silu)
//                kc_<op>(int n, __global const float* x, __global float* y)
//                NDRange n rounded up to 64 (or reqd).
// Declarations are comments in the file:
//   // kc-declare kc_matmul: accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE
//   // kc-options: -cl-fast-relaxed-math        (build options for the whole file)
// Keys not declared take kc's defaults for built-in impls (FP32 accumulator
// for accumulating ops, BITWISE, IEEE_PROPAGATE, IEEE denormals).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/backend.h"

namespace kc::backends::opencl {

struct UserKernel {
  std::string kernel;   ///< kc_matmul
  Declaration decl;     ///< name <stem>.<op>, backend opencl_user
};

/// A parsed .cl file: its text, build options and kc_<op> kernels.
struct UserSource {
  std::string path;
  std::string text;
  std::string options;
  std::vector<UserKernel> kernels;
};

/// Reads and parses `path` (no OpenCL needed): kInvalidArgument for an
/// unreadable file, a malformed kc-declare line, a kc_<name> kernel naming no
/// known op, or no kc_<op> kernel at all.
Result<UserSource> parse_user_source(const std::string& path);

/// The impls of a parsed file (they build it on first run, in the worker).
std::vector<std::shared_ptr<const Impl>> user_impls(const UserSource& source);

}  // namespace kc::backends::opencl
