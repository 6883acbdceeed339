// kc — properties of rotary position embedding (src/ops/rope).
//
// Per-element rounding bound (the op's error model): |ŷ_a - y_a| <= (f + u) m_a,
// m_a = ||(x_a, x_b)|| (1 + t) for the pair (a, b) rotated by angle t, with f
// the contract's factor gamma(6, P), plus gradual underflow's absolute U per
// element and run (Op::underflow_allowance, (6 + 2) lambda): where x_a c or
// x_b s is subnormal the product rounds to the subnormal grid, which no
// relative term covers (a pair of subnormals loses up to a subnormal ulp).
#include <cmath>
#include <string>

#include "kc/obligation.h"
#include "kc/ops/rope.h"
#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

// rope.pair_norm: each declared pair is rotated, so its norm is preserved:
// | ||(ŷ_a, ŷ_b)|| - ||(x_a, x_b)|| | <= ||(e_a, e_b)|| <= sqrt 2 ((f + u) m + U).
// Stronger than the row norm: a kernel rotating other pairs preserves the
// row's norm but not the declared pairs' — the pairing is checked.
Result<Outcome> pair_norm(const Context& ctx) {
  const ops::RopeLayout l = ops::rope_layout(ctx.call);
  const std::vector<double> x = ctx.call.t("x").to_doubles();
  const std::vector<double> y = ctx.call.t("y").to_doubles();
  const double under = std::sqrt(2.0) * ctx.underflow_of(ctx.call);
  Judge judge("| ||y pair|| - ||x pair|| |");
  for (std::int64_t r = 0; r < l.seq; ++r)
    for (std::int64_t i = 0; i < l.dim / 2; ++i) {
      const auto [a, b] = l.pair(i);
      const auto ia = static_cast<std::size_t>(r * l.dim + a), ib = static_cast<std::size_t>(r * l.dim + b);
      const long double nx = std::hypot(static_cast<long double>(x[ia]), static_cast<long double>(x[ib]));
      const long double ny = std::hypot(static_cast<long double>(y[ia]), static_cast<long double>(y[ib]));
      const double m = static_cast<double>(std::sqrt(2.0L) * nx * (1 + l.angle(r, i)));
      judge.check(static_cast<double>(ny - nx), ctx.allowed(m, under),
                  Where{r, a, "(row " + std::to_string(r) + ", pair " + std::to_string(a) + "/" + std::to_string(b) + ")"});
    }
  return judge.outcome();
}

// rope.relative_position: <R(p_i) x_i, R(p_j) x_j> depends on p_j - p_i only.
// The property runs the impl again with every position shifted by s (offset
// + s, s random in [1, 512]) and compares the dot products of every pair of
// output rows j >= i, taken in long double. With ŷ = y + e: |D̂_ij - D_ij| <=
// sum_k |e_ik||y_jk| + |y_ik||e_jk| (+ second order), so each call allows
// (f + u) sum_k (m_ik |y_jk| + |y_ik| m_jk); both calls' allowances add.
// Underflow's U per element is not small against y where y is subnormal
// itself, so it enters with its second order: with E_k = (f + u) m_k + U
// (each output's whole allowance), each call adds, exactly,
// sum_k U (|y_jk| + |y_ik|) + E_ik E_jk.
Result<Outcome> relative_position(const Context& ctx) {
  const ops::RopeLayout l = ops::rope_layout(ctx.call);
  const std::int64_t s = ctx.rng.uniform_int(1, 512);
  Call shifted = ctx.fresh_inputs();
  shifted.config.params["offset"] = std::to_string(l.offset + s);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, shifted, "rope with positions shifted by " + std::to_string(s)));
  KC_ASSIGN_OR_RETURN(std::vector<double> m0, ctx.op.magnitude(ctx.call, "y"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m1, ctx.op.magnitude(shifted, "y"));
  const std::vector<double> y0 = ctx.call.t("y").to_doubles(), y1 = shifted.t("y").to_doubles();
  const double u0 = ctx.underflow_of(ctx.call), u1 = ctx.underflow_of(shifted);
  Judge judge("|<y_i, y_j> - <y'_i, y'_j>| (positions shifted by " + std::to_string(s) + ")");
  for (std::int64_t i = 0; i < l.seq; ++i)
    for (std::int64_t j = i; j < l.seq; ++j) {
      long double d0 = 0, d1 = 0, a0 = 0, a1 = 0, under = 0;
      for (std::int64_t k = 0; k < l.dim; ++k) {
        const auto ik = static_cast<std::size_t>(i * l.dim + k), jk = static_cast<std::size_t>(j * l.dim + k);
        d0 += static_cast<long double>(y0[ik]) * y0[jk];
        d1 += static_cast<long double>(y1[ik]) * y1[jk];
        a0 += m0[ik] * std::fabs(y0[jk]) + std::fabs(y0[ik]) * m0[jk];
        a1 += m1[ik] * std::fabs(y1[jk]) + std::fabs(y1[ik]) * m1[jk];
        under += u0 * (std::fabs(y0[jk]) + std::fabs(y0[ik])) +
                 static_cast<long double>(ctx.allowed(m0[ik], u0)) * ctx.allowed(m0[jk], u0);
        under += u1 * (std::fabs(y1[jk]) + std::fabs(y1[ik])) +
                 static_cast<long double>(ctx.allowed(m1[ik], u1)) * ctx.allowed(m1[jk], u1);
      }
      judge.check(static_cast<double>(d1 - d0),
                  ctx.allowed(static_cast<double>(1.01L * (a0 + a1)), static_cast<double>(under)),
                  Where{i, j, "(rows " + std::to_string(i) + ", " + std::to_string(j) + ")"});
    }
  return judge.outcome();
}

}  // namespace

void add_rope_properties(std::vector<Property>& out) {
  out.push_back({"rope.pair_norm", {"rope"}, "every declared pair keeps its norm (a rotation of that pair)", pair_norm});
  out.push_back({"rope.relative_position", {"rope"},
                 "<y_i, y_j> depends on the positions' difference only: unchanged when all positions shift",
                 relative_position});
}

}  // namespace kc::obligation
