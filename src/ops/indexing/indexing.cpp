// kc — indexing ops (see indexing.h).
//
// Error model: gather-type ops copy values, so magnitude is |out| with
// accumulation_length 1 (a correct kernel is bitwise exact; any tolerance
// is slack). scatter_add sums, per output element, its initial value and the
// contributions of the indices that hit its row: magnitude |out0| + Σ|src|,
// accumulation_length = the largest number of hits on one row + 1.
#include "ops/indexing/indexing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kc/declaration.h"
#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

const char* index_name(IndexKind k) {
  switch (k) {
    case IndexKind::kGather:
      return "gather";
    case IndexKind::kIndexSelect:
      return "index_select";
    case IndexKind::kEmbedding:
      return "embedding";
    case IndexKind::kScatterAdd:
      return "scatter_add";
  }
  return "?";
}

bool is_scatter(const Call& call) { return call.op == "scatter_add"; }

/// Rows of the indexed tensor (table for gathers, out for scatter_add).
std::int64_t bound_rows(const Call& call) { return is_scatter(call) ? call.t("out").dim(0) : call.t("table").dim(0); }

bool in_range(std::int64_t idx, std::int64_t rows) { return idx >= 0 && idx < rows; }

class IndexingOp final : public Op {
 public:
  explicit IndexingOp(IndexKind kind) : kind_(kind), name_(index_name(kind)) {
    if (kind == IndexKind::kScatterAdd) {
      summary_ = "out[index[i], :] += src[i, :]";
      signature_ = {
          {"out", Role::kInOut, "accumulator {rows, dim}: initial values in, sums out"},
          {"index", Role::kIn, "row indices I64 {n}"},
          {"src", Role::kIn, "rows to add {n, dim}"},
      };
    } else {
      summary_ = kind == IndexKind::kEmbedding ? "out[i, :] = table[index[i], :] (embedding lookup)"
                                               : "out[i, :] = table[index[i], :]";
      signature_ = {
          {"table", Role::kIn, "rows to read {rows, dim}"},
          {"index", Role::kIn, "row indices I64 {n}"},
          {"out", Role::kOut, "gathered rows {n, dim}"},
      };
    }
    params_ = {
        {"rows", "128", "rows of the indexed tensor (the index bound)"},
        {"dim", "64", "row width"},
        {"n", "256", "number of indices"},
    };
    if (kind == IndexKind::kIndexSelect) params_.push_back({"axis", "0", "the indexed axis (0 only)"});
    if (kind == IndexKind::kEmbedding)
      params_.push_back({"padding_idx", "-1",
                         "row excluded from gradient updates (-1 = none); the forward lookup still returns "
                         "table[padding_idx], so the oracle ignores it"});
  }

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 128));
    KC_ASSIGN_OR_RETURN(std::int64_t dim, detail::positive(config, "dim", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 256));
    if (kind_ == IndexKind::kIndexSelect && config.get_int("axis", 0) != 0)
      return unimplemented("index_select: only axis=0 is defined");
    if (kind_ == IndexKind::kEmbedding) {
      const std::int64_t pad = config.get_int("padding_idx", -1);
      if (pad < -1 || pad >= rows) return invalid_argument("padding_idx must be -1 or in [0, rows)");
    }
    std::vector<detail::Slot> slots;
    if (kind_ == IndexKind::kScatterAdd) {
      slots.push_back({"out", Role::kInOut, Tensor(dt, {rows, dim})});
      slots.push_back({"index", Role::kIn, Tensor(DType::kI64, {n})});
      slots.push_back({"src", Role::kIn, Tensor(dt, {n, dim})});
    } else {
      slots.push_back({"table", Role::kIn, Tensor(dt, {rows, dim})});
      slots.push_back({"index", Role::kIn, Tensor(DType::kI64, {n})});
      slots.push_back({"out", Role::kOut, Tensor(dt, {n, dim})});
    }
    return detail::make_call_from(name_, config, std::move(slots));
  }

  /// Float tensors from the value_range fill; indices uniform in [0, rows-1].
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    Tensor& index = call.t("index");
    const std::int64_t rows = bound_rows(call);
    for (std::int64_t i = 0; i < index.numel(); ++i) index.set(i, static_cast<double>(rng.uniform_int(0, rows - 1)));
  }

  /// `oob(...)`: writes out-of-range indices into max(4, density * n) random
  /// positions (capped at n), the first four being the standard -1, -rows, rows,
  /// rows + 10 (C-EXC-02: "-1, -bound, bound, bound+10"), the rest cycling through
  /// them and any further out-of-range integer probe args. In-range indices stay
  /// as filled. The args the contract names are the standard four, so they are
  /// always used whatever the engine could evaluate.
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    if (probe.name != "oob") return Op::apply_probe(call, probe, rng);
    Tensor& index = call.t("index");
    const std::int64_t rows = bound_rows(call);
    const std::int64_t n = index.numel();
    std::vector<std::int64_t> values = {-1, -rows, rows, rows + 10};
    for (double a : probe.args) {
      if (!std::isfinite(a) || a != std::floor(a)) continue;
      const auto v = static_cast<std::int64_t>(a);
      if (!in_range(v, rows) && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    const auto want = static_cast<std::int64_t>(std::ceil(probe.density * static_cast<double>(n)));
    const std::int64_t count = std::min<std::int64_t>(n, std::max<std::int64_t>(4, want));
    // Partial Fisher-Yates: the first `count` entries of a random permutation of positions.
    std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) pos[i] = i;
    for (std::int64_t i = 0; i < count; ++i) std::swap(pos[i], pos[rng.uniform_int(i, n - 1)]);
    for (std::int64_t i = 0; i < count; ++i)
      index.set(pos[i], static_cast<double>(values[static_cast<std::size_t>(i) % values.size()]));
    return ok_status();
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const OobPolicy policy = options.oob.value_or(OobPolicy::kUndefined);
    const Tensor& index = call.t("index");
    const std::int64_t n = index.numel();
    const std::int64_t rows = bound_rows(call);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    OracleResult res;
    std::int64_t oob_count = 0, first_bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto idx = static_cast<std::int64_t>(index.at(i));
      if (!in_range(idx, rows)) {
        if (oob_count++ == 0) first_bad = idx;
      }
    }
    if (policy == OobPolicy::kRaise && oob_count > 0)
      res.raises = std::to_string(oob_count) + " index value(s) out of range [0, " + std::to_string(rows) + "), e.g. " +
                   std::to_string(first_bad);

    // Where an out-of-range index reads or writes under this policy: a row in
    // range, or -1 for "no row" (ZERO / RAISE / UNDEFINED).
    auto target = [&](std::int64_t idx) -> std::int64_t {
      if (in_range(idx, rows)) return idx;
      if (policy == OobPolicy::kClamp) return std::clamp<std::int64_t>(idx, 0, rows - 1);
      return -1;
    };

    if (kind_ == IndexKind::kScatterAdd) {
      const Tensor& out0 = call.t("out");
      const Tensor& src = call.t("src");
      const std::int64_t dim = out0.dim(1);
      std::vector<long double> acc(static_cast<std::size_t>(rows * dim));
      for (std::int64_t e = 0; e < rows * dim; ++e) acc[e] = out0.at(e);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t r = target(static_cast<std::int64_t>(index.at(i)));
        if (r < 0) continue;
        for (std::int64_t d = 0; d < dim; ++d) acc[r * dim + d] += src.at(i * dim + d);
      }
      std::vector<double> out(acc.size());
      // Under RAISE or UNDEFINED with an OOB index there is no defined output at all.
      const bool undefined = oob_count > 0 && (policy == OobPolicy::kRaise || policy == OobPolicy::kUndefined);
      for (std::size_t e = 0; e < acc.size(); ++e) out[e] = undefined ? nan : static_cast<double>(acc[e]);
      res.outputs.push_back(std::move(out));
    } else {
      const Tensor& table = call.t("table");
      const std::int64_t dim = table.dim(1);
      std::vector<double> out(static_cast<std::size_t>(n * dim));
      for (std::int64_t i = 0; i < n; ++i) {
        const auto idx = static_cast<std::int64_t>(index.at(i));
        const std::int64_t r = target(idx);
        for (std::int64_t d = 0; d < dim; ++d) {
          double v;
          if (r >= 0)
            v = table.at(r * dim + d);
          else if (policy == OobPolicy::kZero)
            v = 0.0;
          else
            v = nan;
          out[i * dim + d] = v;
        }
      }
      res.outputs.push_back(std::move(out));
    }
    res.output_names.push_back("out");
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "out") return not_found("no output '" + output + "' in " + name_);
    const Tensor& index = call.t("index");
    const std::int64_t rows = bound_rows(call);
    if (kind_ != IndexKind::kScatterAdd) {
      const Tensor& table = call.t("table");
      const std::int64_t dim = table.dim(1);
      std::vector<double> mag(static_cast<std::size_t>(index.numel() * dim), 0.0);
      for (std::int64_t i = 0; i < index.numel(); ++i) {
        const auto idx = static_cast<std::int64_t>(index.at(i));
        if (!in_range(idx, rows)) continue;
        for (std::int64_t d = 0; d < dim; ++d) mag[i * dim + d] = std::fabs(table.at(idx * dim + d));
      }
      return mag;
    }
    const Tensor& out0 = call.t("out");
    const Tensor& src = call.t("src");
    const std::int64_t dim = out0.dim(1);
    std::vector<double> mag(static_cast<std::size_t>(rows * dim));
    for (std::int64_t e = 0; e < rows * dim; ++e) mag[e] = std::fabs(out0.at(e));
    for (std::int64_t i = 0; i < index.numel(); ++i) {
      const auto idx = static_cast<std::int64_t>(index.at(i));
      if (!in_range(idx, rows)) continue;
      for (std::int64_t d = 0; d < dim; ++d) mag[idx * dim + d] += std::fabs(src.at(i * dim + d));
    }
    return mag;
  }

  double accumulation_length(const Call& call) const override {
    if (kind_ != IndexKind::kScatterAdd) return 1;
    const Tensor& index = call.t("index");
    const std::int64_t rows = bound_rows(call);
    std::vector<std::int64_t> hits(static_cast<std::size_t>(rows), 0);
    std::int64_t most = 0;
    for (std::int64_t i = 0; i < index.numel(); ++i) {
      const auto idx = static_cast<std::int64_t>(index.at(i));
      if (in_range(idx, rows)) most = std::max(most, ++hits[idx]);
    }
    return static_cast<double>(most + 1);
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Tensor& index = call.t("index");
    const Tensor& values = kind_ == IndexKind::kScatterAdd ? call.t("src") : call.t("table");
    const auto [mx, sum] = detail::abs_max_sum(values);
    return detail::with_base_vars(Op::expr_vars(call), {{"N", static_cast<double>(index.numel())},
                                                        {"n", static_cast<double>(index.numel())},
                                                        {"rows", static_cast<double>(bound_rows(call))},
                                                        {"bound", static_cast<double>(bound_rows(call))},
                                                        {"dim", static_cast<double>(values.dim(1))},
                                                        {"L", accumulation_length(call)},
                                                        {"max|x|", mx},
                                                        {"sum|x|", sum}});
  }

 private:
  IndexKind kind_;
  std::string name_;
  std::string summary_;
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<std::string> scope_classes() const override { return {"indexing"}; }
};

}  // namespace

std::unique_ptr<Op> make_indexing_op(IndexKind kind) { return std::make_unique<IndexingOp>(kind); }

std::vector<bool> oob_rows(const Call& call) {
  const bool known = call.op == "gather" || call.op == "index_select" || call.op == "embedding" || is_scatter(call);
  if (!known || !call.has("index")) return {};
  const Tensor& index = call.t("index");
  const std::int64_t rows = bound_rows(call);
  if (is_scatter(call)) {
    bool any = false;
    for (std::int64_t i = 0; i < index.numel() && !any; ++i)
      any = !in_range(static_cast<std::int64_t>(index.at(i)), rows);
    return std::vector<bool>(static_cast<std::size_t>(rows), any);
  }
  std::vector<bool> bad(static_cast<std::size_t>(index.numel()));
  for (std::int64_t i = 0; i < index.numel(); ++i) bad[i] = !in_range(static_cast<std::int64_t>(index.at(i)), rows);
  return bad;
}

}  // namespace kc::ops
