// kc — calibration trios for the exceptional-value contract classes:
//   C-EXC-01 NaN/Inf propagation   (relu)
//   C-EXC-02 out-of-bounds policy  (gather)
// Each kernel computes for real; the bad ones carry one documented defect
// (docs/classes/C-EXC-0*.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "calibration/calibration_backend.h"
#include "calibration/unary.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- C-EXC-01

void add_nan_trio(ImplList& out) {
  add(out,
      calib_decl("calib.relu_leaky", "relu", "C-EXC-01 baseline: leaky ReLU (slope 0.1) shipped as ReLU"),
      [](Call& call) { return unary_kernel(call, [](float v) { return v > 0 ? v : 0.1f * v; }); });
  // fmaxf returns the other operand when one is NaN (C99 7.12.12.2), so
  // fmaxf(NaN, 0) = 0: the NaN is swallowed although nan = IEEE_PROPAGATE is declared.
  add(out,
      calib_decl("calib.relu_fmaxf", "relu",
                 "C-EXC-01 bad: ReLU as fmaxf(x, 0), which turns NaN into 0; declares nan = IEEE_PROPAGATE"),
      [](Call& call) { return unary_kernel(call, [](float v) { return std::fmax(v, 0.0f); }); });
  add(out,
      calib_decl("calib.relu_propagating", "relu",
                 "C-EXC-01 good: ReLU that passes NaN through (x > 0 or NaN ? x : 0)"),
      [](Call& call) {
        return unary_kernel(call, [](float v) { return (v > 0 || std::isnan(v)) ? v : 0.0f; });
      });
}

// ---------------------------------------------------------------- C-EXC-02

/// A gather kernel's row read: `row` is the index as the kernel uses it.
enum class Bounds {
  kChecked,    ///< every index validated before any read; out of range raises
  kUnchecked,  ///< no check: an out-of-range row is read from neighbouring memory
  kOffByOne,   ///< reads row index + 1 (a 1-based convention slipping in), clamped to stay in bounds
};

/// What lies next to the table in memory, as an unchecked kernel would see
/// it: rows of an unrelated neighbouring allocation. A real out-of-range read
/// would be undefined behaviour in kc's own process, so the neighbours are
/// emulated by a deterministic pattern (a hash of the row offset from the
/// table base and the column, scaled to look like activations); the result
/// is reproducible and memory-safe, and equals neither the clamped row nor 0.
double neighbour_memory(std::int64_t row, std::int64_t col) {
  std::uint64_t h = static_cast<std::uint64_t>(row) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(col);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return std::ldexp(static_cast<double>(h % 4001) - 2000.5, -9);  // in (-3.91, 3.91), never 0
}

/// out[i, :] = table[index[i], :].
Status gather_kernel(Call& call, Bounds bounds) {
  const Tensor& table = call.t("table");
  const Tensor& index = call.t("index");
  Tensor& out = call.t("out");
  const std::int64_t rows = table.dim(0), dim = table.dim(1), n = index.numel();
  if (bounds == Bounds::kChecked) {
    for (std::int64_t i = 0; i < n; ++i) {
      const auto r = static_cast<std::int64_t>(index.at(i));
      if (r < 0 || r >= rows)
        return kernel_raised("gather: index[" + std::to_string(i) + "] = " + std::to_string(r) +
                             " is out of range [0, " + std::to_string(rows) + ")");
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    auto r = static_cast<std::int64_t>(index.at(i));
    if (bounds == Bounds::kOffByOne) r = std::min(r + 1, rows - 1);
    for (std::int64_t d = 0; d < dim; ++d) {
      const bool inside = r >= 0 && r < rows;
      out.set(i * dim + d, inside ? table.at(r * dim + d) : neighbour_memory(r, d));
    }
  }
  return ok_status();
}

void add_oob_trio(ImplList& out) {
  auto decl = [](const char* name, const char* description) {
    Declaration d = calib_decl(name, "gather", description);
    d.oob = OobPolicy::kRaise;
    return d;
  };
  add(out, decl("calib.gather_off_by_one", "C-EXC-02 baseline: gather reading row index + 1; declares oob = RAISE"),
      [](Call& call) { return gather_kernel(call, Bounds::kOffByOne); });
  add(out,
      decl("calib.gather_unchecked",
           "C-EXC-02 bad: gather without a bounds check (reads neighbouring memory); declares oob = RAISE"),
      [](Call& call) { return gather_kernel(call, Bounds::kUnchecked); });
  add(out,
      decl("calib.gather_checked",
           "C-EXC-02 good: gather that validates every index and raises on one out of range; declares oob = RAISE"),
      [](Call& call) { return gather_kernel(call, Bounds::kChecked); });
}

}  // namespace

void add_exceptional_impls(ImplList& out) {
  add_nan_trio(out);
  add_oob_trio(out);
}

}  // namespace kc::calibration
