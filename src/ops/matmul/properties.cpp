// kc — properties of matmul (C = alpha op(A) op(B), beta = 0).
//
// Per-element rounding bound (the op's error model): |Ĉ_ij - C_ij| <= (f + u) M_ij
// with M = |alpha| |op(A)| |op(B)| from Op::magnitude and f the contract's
// factor (gamma(K + 2, P) for an fp32 accumulation), plus gradual underflow's
// absolute term per run, (K + 2) lambda (Op::underflow_allowance): a product of
// a subnormal and a small value rounds to the subnormal grid (A = -6.4e-39,
// B = -9.3e-7: A B1 + A B2 is off by one subnormal ulp, 2 lambda).
#include <cmath>
#include <string>

#include "kc/obligation.h"
#include "ops/matmul/matmul.h"
#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

Status needs_beta_zero(const Context& ctx, const std::string& name) {
  if (ctx.call.get_double("beta", 0) != 0)
    return invalid_argument(name + " states alpha op(A) op(B) alone: add `beta in {0}` to pre");
  return ok_status();
}

// matmul.linearity: A (B1 + B2) = A B1 + A B2. B2 is a random permutation of
// B1's values; B12 = fl(B1 + B2) carries the rounding d = B12 - (B1 + B2),
// which is exactly representable (the error of a floating-point addition is),
// so alpha op(A) op(d) is taken from the FP64 oracle and predicted exactly.
// The three calls' bounds add: (f + u)(M1 + M2 + M12), and their underflow.
// (A d is FP64, exact: the oracle's product has no FP32 underflow.)
Result<Outcome> linearity(const Context& ctx) {
  KC_RETURN_IF_ERROR(needs_beta_zero(ctx, "matmul.linearity"));
  const std::vector<double> b1 = ctx.call.t("B").to_doubles();
  Call c2 = ctx.fresh_inputs(), c12 = ctx.fresh_inputs(), cd = ctx.fresh_inputs();
  Tensor& b2 = c2.t("B");
  for (std::int64_t i = 0; i < b2.numel(); ++i)
    b2.set(i, b1[static_cast<std::size_t>(ctx.rng.uniform_int(0, static_cast<std::int64_t>(b1.size()) - 1))]);
  const std::vector<double> b2v = b2.to_doubles();
  for (std::int64_t i = 0; i < b2.numel(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    c12.t("B").set(i, b1[k] + b2v[k]);
    cd.t("B").set(i, c12.t("B").at(i) - (b1[k] + b2v[k]));  // exact in the format (TwoSum)
  }
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c2, "A B2"));
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c12, "A (B1 + B2)"));
  KC_ASSIGN_OR_RETURN(OracleResult ad, ctx.op.oracle(cd, OracleOptions{}));
  KC_ASSIGN_OR_RETURN(std::vector<double> m1, ctx.op.magnitude(ctx.call, "C"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m2, ctx.op.magnitude(c2, "C"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m12, ctx.op.magnitude(c12, "C"));
  const std::vector<double> y1 = ctx.call.t("C").to_doubles(), y2 = c2.t("C").to_doubles(),
                            y12 = c12.t("C").to_doubles();
  const std::int64_t n = ctx.call.t("C").dim(1);
  const double under = ctx.underflow_of(ctx.call) + ctx.underflow_of(c2) + ctx.underflow_of(c12);
  Judge judge("|A(B1 + B2) - A B1 - A B2 - A d|");
  for (std::size_t i = 0; i < y1.size(); ++i) {
    const long double r = static_cast<long double>(y12[i]) - y1[i] - y2[i] - ad.outputs[0][i];
    judge.check(static_cast<double>(r), ctx.allowed(m1[i] + m2[i] + m12[i], under),
                Where{static_cast<std::int64_t>(i) / n, static_cast<std::int64_t>(i) % n, {}});
  }
  return judge.outcome();
}

// matmul.transpose: (op(A) op(B))^T = op(B)^T op(A)^T. The property builds
// the transposed problem — M and N swapped, A' = B's storage with trans_a' =
// not trans_b, B' = A's storage with trans_b' = not trans_a — runs the impl on
// it and compares C'^T with C within both calls' bounds (M^T = M') and both
// runs' underflow.
Result<Outcome> transpose(const Context& ctx) {
  KC_RETURN_IF_ERROR(needs_beta_zero(ctx, "matmul.transpose"));
  auto flip = [](const std::string& t) { return (t == "T" || t == "t") ? std::string("N") : std::string("T"); };
  Config cfg = ctx.call.config;
  cfg.params["M"] = ctx.call.get("N");
  cfg.params["N"] = ctx.call.get("M");
  cfg.params["trans_a"] = flip(ctx.call.get("trans_b", "N"));
  cfg.params["trans_b"] = flip(ctx.call.get("trans_a", "N"));
  cfg.params["lda_pad"] = ctx.call.get("ldb_pad", "0");
  cfg.params["ldb_pad"] = ctx.call.get("lda_pad", "0");
  KC_ASSIGN_OR_RETURN(Call tc, ctx.op.make_call(cfg));
  const std::vector<double> a = ctx.call.t("A").to_doubles(), b = ctx.call.t("B").to_doubles();
  if (tc.t("A").numel() != static_cast<std::int64_t>(b.size()) || tc.t("B").numel() != static_cast<std::int64_t>(a.size()))
    return internal_error("matmul.transpose built mismatched operands");
  for (std::int64_t i = 0; i < tc.t("A").numel(); ++i) tc.t("A").set(i, b[static_cast<std::size_t>(i)]);
  for (std::int64_t i = 0; i < tc.t("B").numel(); ++i) tc.t("B").set(i, a[static_cast<std::size_t>(i)]);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, tc, "op(B)^T op(A)^T"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m0, ctx.op.magnitude(ctx.call, "C"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m1, ctx.op.magnitude(tc, "C"));
  const std::vector<double> c = ctx.call.t("C").to_doubles(), ct = tc.t("C").to_doubles();
  const std::int64_t rows = ctx.call.t("C").dim(0), cols = ctx.call.t("C").dim(1);
  const double under = ctx.underflow_of(ctx.call) + ctx.underflow_of(tc);
  Judge judge("|(AB)^T - B^T A^T|");
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto ij = static_cast<std::size_t>(i * cols + j), ji = static_cast<std::size_t>(j * rows + i);
      judge.check(c[ij] - ct[ji], ctx.allowed(m0[ij] + m1[ji], under), Where{i, j, {}});
    }
  return judge.outcome();
}

}  // namespace

void add_matmul_properties(std::vector<Property>& out) {
  out.push_back({"matmul.linearity", {"matmul"}, "A (B1 + B2) = A B1 + A B2 (the rounding of B1 + B2 predicted exactly)",
                 linearity});
  out.push_back({"matmul.transpose", {"matmul"}, "(op(A) op(B))^T = op(B)^T op(A)^T", transpose});
}

}  // namespace kc::obligation
