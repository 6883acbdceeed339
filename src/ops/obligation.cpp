// kc — the Judge every algebraic property reports through, and the pieces of
// kc/obligation.h an op's property file needs (the table of properties is the
// engine's: engine/obligation/registry.cpp reads Op::properties).
#include "kc/obligation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

using detail::fmt_g;

}  // namespace

Call Context::fresh_inputs() const {
  Call c = inputs ? *inputs : call;
  for (std::size_t k = 0; k < c.tensors.size(); ++k)
    if (c.roles[k] == Role::kOut) c.tensors[k].fill_storage(0);
  return c;
}

std::string Where::to_string() const {
  if (!label.empty()) return label;
  if (row >= 0 && col >= 0) return "(row " + std::to_string(row) + ", col " + std::to_string(col) + ")";
  if (row >= 0) return "(row " + std::to_string(row) + ")";
  return "(whole output)";
}

void Judge::check(double residual, double allowed, Where where) {
  residual = std::fabs(residual);
  double r = 0;
  // NaN anywhere, or an infinite residual, fails: an infinite allowance must
  // not turn inf/inf into a NaN ratio that compares as a pass.
  if (std::isnan(residual) || std::isnan(allowed) || std::isinf(residual))
    r = std::numeric_limits<double>::infinity();
  else if (residual == 0)
    r = 0;
  else
    r = allowed > 0 ? residual / allowed : std::numeric_limits<double>::infinity();
  out_.ratios.push_back(r);
  if (r > 1) ++out_.failures;
  if (out_.ratios.size() == 1 || r > out_.max_ratio) {
    out_.max_ratio = r;
    out_.worst = std::move(where);
    worst_residual_ = residual;
    worst_allowed_ = allowed;
    worst_what_.clear();
  }
}

void Judge::fail(Where where, std::string what) {
  const double r = std::numeric_limits<double>::infinity();
  out_.ratios.push_back(r);
  ++out_.failures;
  if (out_.ratios.size() == 1 || r > out_.max_ratio) {  // the first structural failure is the one shown
    out_.max_ratio = r;
    out_.worst = std::move(where);
    worst_what_ = std::move(what);
    worst_allowed_ = 0;
  }
}

Outcome Judge::outcome() const {
  Outcome o = out_;
  o.worst_residual = worst_what_.empty() ? worst_residual_ : std::numeric_limits<double>::quiet_NaN();
  o.worst_allowed = worst_allowed_;
  if (o.ratios.empty()) {
    o.evidence = "no checks made";
    return o;
  }
  const std::string n = std::to_string(o.ratios.size()) + " check" + (o.ratios.size() == 1 ? "" : "s");
  if (!worst_what_.empty()) {
    o.evidence =
        worst_what_ + " at " + o.worst.to_string() + " (" + std::to_string(o.failures) + " of " + n + " failed)";
  } else {
    o.evidence = quantity_ + " = " + fmt_g(worst_residual_) + " at " + o.worst.to_string() + ", allowed " +
                 fmt_g(worst_allowed_) + ", ratio " + fmt_g(o.max_ratio) + " (" +
                 (o.failures ? std::to_string(o.failures) + " of " + n + " failed" : "worst of " + n) + ")";
  }
  return o;
}

bool Property::applies_to(std::string_view op) const { return std::find(ops.begin(), ops.end(), op) != ops.end(); }

std::vector<Property> properties_for(std::string_view op, void (*add)(std::vector<Property>&)) {
  std::vector<Property> all, out;
  add(all);
  for (Property& p : all)
    if (p.applies_to(op)) out.push_back(std::move(p));
  return out;
}

}  // namespace kc::obligation
