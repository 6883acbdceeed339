// kc — the range properties of the bounded elementwise functions:
//   elementwise.range   exp(x) >= 0; -1 <= tanh(x) <= 1; -1 <= erf(x) <= 1
// checked exactly (tolerance none) on every element whose input is not NaN.
//
// Why exactly: rounding is monotone and 0 and +-1 are representable, so the
// correctly rounded value keeps each range, and so does any result within a
// documented bound b of the exact value f small enough: for tanh and erf, |f|
// < 1 and the float after 1 is 1 + 2u (u = 2^-24, the spacing below 1), so
// |y - f| <= b u with b < 2 keeps |y| <= 1; for exp, f > 0 and a negative
// result is at least the smallest subnormal s below 0, so |y - f| <= b s with
// b <= 1 keeps y >= -0. The contracts (contracts/elementwise/KC-ELEM-RANGE.kc)
// apply the property to impls whose declared bound implies it.
#include <cmath>
#include <string>

#include "kc/obligation.h"
#include "kc/ops/elementwise.h"

namespace kc::obligation {
namespace {

Result<Outcome> range(const Context& ctx) {
  const std::string op(ctx.op.name());
  const bool exp = op == "exp";
  const Tensor& xt = ctx.call.t("x");
  const Tensor& yt = ctx.call.t("y");
  Judge judge(exp ? "distance of y below 0" : "distance of y outside [-1, 1]");
  for (std::int64_t i = 0; i < xt.numel(); ++i) {
    const double x = xt.at(i);
    if (std::isnan(x)) continue;  // NaN in, NaN out: no range to keep
    const double y = yt.at(i);
    const double outside = std::isnan(y) ? y : exp ? std::max(0.0, -y) : std::max(0.0, std::fabs(y) - 1.0);
    judge.check(outside, ctx.allowed(0), Where{-1, -1, "[" + std::to_string(i) + "] x = " + std::to_string(x)});
  }
  return judge.outcome();
}

}  // namespace

void add_elementwise_properties(std::vector<Property>& out) {
  out.push_back({"elementwise.range", {"exp", "tanh", "erf"},
                 "exp(x) >= 0, |tanh(x)| <= 1, |erf(x)| <= 1 exactly (inputs other than NaN)", range});
}

}  // namespace kc::obligation
