// kc — seeded bugs that calibrate the verification ladder (docs/ladder.md):
// each is right on most inputs and wrong on a region a lower rung's few
// samples are unlikely to visit, so the rung that must catch it is the one
// that does, and its counterexample is known in advance:
//   calib.gelu_erf_cutoff5   gelu_erf with a "fast path" past |x| = 5: y = x
//                            for x > 5 and y = 0 for x < -5. Right to 1 ulp in
//                            16-bit for x > 5 (gelu(5) = 5 (1 - 2.9e-7)); wrong
//                            for every x < -5 (gelu(-5) = -1.4e-6, not 0). L3
//                            shrinks to the first representable x below -5.
//   calib.softmax_tile7      softmax whose normaliser skips column 6 (a lost
//                            lane of a 6-wide tile's remainder): right for
//                            cols <= 6. L3 shrinks to cols = 7, rows = 1, x = 0.
//   calib.tanh_pade          tanh as the [3/2] Pade approximant
//                            x (27 + x^2) / (27 + 9 x^2), clamped to +-1 past
//                            |x| = 3 (a common "fast tanh"); within 2.3% of tanh,
//                            which the L4 16-bit sweeps measure in ulps.
#include <cmath>

#include "calibration/calibration_backend.h"
#include "calibration/unary.h"

namespace kc::calibration {

void add_ladder_impls(ImplList& out) {
  add(out,
      sixteen_bit(calib_decl("calib.gelu_erf_cutoff5", "gelu_erf",
                             "ladder L3 calibration: gelu_erf returning x past 5 and 0 below -5")),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          if (v > 5.0f) return v;
          if (v < -5.0f) return 0.0f;
          return 0.5f * v * std::erfc(-v * 0.70710678118654752f);
        });
      });
  add(out, calib_decl("calib.softmax_tile7", "softmax", "ladder L3 calibration: softmax normaliser skips column 6"),
      [](Call& call) {
        Tensor& tx = call.t("x");
        Tensor& ty = call.t("y");
        const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
        for (std::int64_t r = 0; r < rows; ++r) {
          float m = -INFINITY;
          for (std::int64_t c = 0; c < cols; ++c) m = std::fmax(m, static_cast<float>(tx.at(r * cols + c)));
          float sum = 0.0f;
          for (std::int64_t c = 0; c < cols; ++c)
            if (c != 6) sum += std::exp(static_cast<float>(tx.at(r * cols + c)) - m);
          for (std::int64_t c = 0; c < cols; ++c)
            ty.set(r * cols + c, std::exp(static_cast<float>(tx.at(r * cols + c)) - m) / sum);
        }
        return ok_status();
      });
  add(out,
      sixteen_bit(calib_decl("calib.tanh_pade", "tanh", "ladder L4 calibration: [3/2] Pade tanh clamped past |x| = 3")),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          if (std::isnan(v)) return v;
          if (v > 3.0f) return 1.0f;
          if (v < -3.0f) return -1.0f;
          return v * (27.0f + v * v) / (27.0f + 9.0f * v * v);
        });
      });
}

}  // namespace kc::calibration
