// kc — the oracle functions behind the named references (kc/oracles.h). Each
// op folder owns its own: softmax/stable.cpp, stats/stable.cpp,
// reduce/stable.cpp, elementwise/spec.cpp; src/ops/oracles.cpp is the table.
#pragma once

#include "kc/op.h"

namespace kc::ops {

// Stable algorithms, evaluated in FP64 operation by operation.
Result<OracleResult> softmax_max_subtraction(const Call& call, const OracleOptions& options);
Result<OracleResult> log_softmax_max_subtraction(const Call& call, const OracleOptions& options);
Result<OracleResult> log_sum_exp_shifted(const Call& call, const OracleOptions& options);
Result<OracleResult> variance_two_pass(const Call& call, const OracleOptions& options);
Result<OracleResult> variance_welford(const Call& call, const OracleOptions& options);
Result<OracleResult> sum_kahan(const Call& call, const OracleOptions& options);
Result<OracleResult> sum_pairwise(const Call& call, const OracleOptions& options);

// Correctly rounded elementwise functions (MPFR), special values exact.
Result<OracleResult> exp_correctly_rounded(const Call& call, const OracleOptions& options);
Result<OracleResult> log_correctly_rounded(const Call& call, const OracleOptions& options);
Result<OracleResult> tanh_correctly_rounded(const Call& call, const OracleOptions& options);
Result<OracleResult> erf_correctly_rounded(const Call& call, const OracleOptions& options);
bool have_mpfr();

}  // namespace kc::ops
