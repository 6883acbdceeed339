// kc — calibration impls of the training contracts (contracts/transformer/,
// docs/transformer-training.md). Each bad kernel is a defect seen in real
// training code, small enough to pass a KernelBench-style allclose at the
// op's default shape where that is possible, and caught by its contract with
// a named signature:
//   calib.adamw_coupled_decay   Adam with L2 weight decay (torch.optim.Adam's
//                               weight_decay) where AdamW is declared
//   calib.adamw_fixed_beta2     beta2 hard-coded to 0.999
//   calib.adamw_no_bias_correction
//   calib.xent_no_softmax       dz = z - onehot (the softmax left out)
//   calib.kd_no_t2              KL term not multiplied by T²
//   calib.bpe_drop_invalid      decode through a UTF-8 decoder that drops
//                               invalid bytes (Python's errors="ignore")
//   calib.grad_accum_sum        micro-batch gradients summed, not averaged
//   calib.slerp_lerp            linear interpolation sold as slerp
//   calib.wanda_magnitude_only  WANDA scored by |W| alone
//   calib.prune_rescaled        kept weights rescaled by 1 / (1 - s)
// plus the trios' baselines and good impls.
#include <cmath>
#include <vector>

#include "calibration/calibration_backend.h"
#include "backends/ref/train_kernels.h"
#include "ops/tokenize/bpe.h"

namespace kc::calibration {
namespace {

// AdamW in the paper's form (Loshchilov & Hutter, Algorithm 2): m̂ and v̂
// materialised, p -= lr m̂ / (sqrt(v̂) + eps). Another rounding order than
// the ref kernel, the same function.
Status adamw_textbook(Call& call) {
  float* p = call.t("param").data<float>();
  const float* g = call.t("grad").data<float>();
  float* m = call.t("m").data<float>();
  float* v = call.t("v").data<float>();
  const std::int64_t n = call.t("param").numel();
  const std::int64_t step = call.get_int("step", 10);
  const auto lr = static_cast<float>(call.get_double("lr", 1e-3));
  const auto b1 = static_cast<float>(call.get_double("beta1", 0.9));
  const auto b2 = static_cast<float>(call.get_double("beta2", 0.999));
  const auto eps = static_cast<float>(call.get_double("eps", 1e-8));
  const auto wd = static_cast<float>(call.get_double("weight_decay", 0.01));
  const float bc1 = 1 - std::pow(b1, static_cast<float>(step));
  const float bc2 = 1 - std::pow(b2, static_cast<float>(step));
  for (std::int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const float mh = m[i] / bc1, vh = v[i] / bc2;
    p[i] = p[i] - lr * wd * p[i] - lr * mh / (std::sqrt(vh) + eps);
  }
  return ok_status();
}

// Baseline: the parameter moves, the moments are never written back.
Status adamw_frozen_moments(Call& call) {
  const std::vector<double> m = call.t("m").to_doubles(), v = call.t("v").to_doubles();
  KC_RETURN_IF_ERROR(backends::adamw_fp32(call, false, true, -1));
  for (std::size_t i = 0; i < m.size(); ++i) {
    call.t("m").set(static_cast<std::int64_t>(i), m[i]);
    call.t("v").set(static_cast<std::int64_t>(i), v[i]);
  }
  return ok_status();
}

// The defect: the gradient of a regression loss, logits minus target.
Status xent_no_softmax(Call& call) { return backends::cross_entropy_fp32(call, /*softmax_gradient=*/false); }

// Baseline: only the hard-label term.
Status kd_ce_only(Call& call) {
  Call ce = call;
  ce.config.params["alpha"].assign(1, '0');  // not = "0": GCC 12 -O2 reports a false -Wrestrict
  KC_RETURN_IF_ERROR(backends::kd_loss_fp32(ce, true));
  // `ce` shares the output buffer inside a worker (tensor views) but not in
  // process: write the result back either way.
  const Tensor& from = ce.t("loss");
  Tensor& to = call.t("loss");
  for (std::int64_t i = 0; i < to.numel(); ++i) to.set(i, from.at(i));
  return ok_status();
}

/// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or 0.
std::size_t valid_utf8_at(const std::string& s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) { n = 3; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) { n = 3; hi = 0x9F; }
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) { n = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) { n = 4; hi = 0x8F; }
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

/// The decoded bytes through a "text" layer: UTF-8 decoding that drops what
/// is not valid (Python's bytes.decode("utf-8", errors="ignore")).
std::string drop_invalid_utf8(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = valid_utf8_at(s, i);
    if (n == 0) {
      ++i;  // the defect: the byte is dropped
      continue;
    }
    out += s.substr(i, n);
    i += n;
  }
  return out;
}

const tokenize::BpeTokenizer& tok() { return tokenize::BpeTokenizer::builtin(); }

/// The built-in tokenizer written out as a GPT-2 merges list and read back.
const tokenize::BpeTokenizer& tok_from_merges() {
  static const tokenize::BpeTokenizer t = [] {
    auto r = tokenize::BpeTokenizer::from_merges(tok().to_merges());
    KC_CHECK_MSG(r.ok(), "the built-in merges list does not load");
    return std::move(r).value();
  }();
  return t;
}

}  // namespace

void add_train_impls(ImplList& out) {
  add(out, calib_decl("calib.adamw_fp32", "adamw_step", "AdamW as in the paper's Algorithm 2, fp32"), adamw_textbook);
  add(out, calib_decl("calib.adamw_coupled_decay", "adamw_step",
                      "Adam with coupled L2 decay g += wd p, declared as AdamW"),
      [](Call& c) { return backends::adamw_fp32(c, /*coupled=*/true, true, -1); });
  add(out, calib_decl("calib.adamw_fixed_beta2", "adamw_step", "AdamW with beta2 hard-coded to 0.999"),
      [](Call& c) { return backends::adamw_fp32(c, false, true, /*beta2_override=*/0.999); });
  add(out, calib_decl("calib.adamw_no_bias_correction", "adamw_step", "AdamW without bias correction"),
      [](Call& c) { return backends::adamw_fp32(c, false, /*bias_correction=*/false, -1); });
  add(out, calib_decl("calib.adamw_frozen_moments", "adamw_step", "AdamW that never writes m and v back"),
      adamw_frozen_moments);
  add(out, calib_decl("calib.xent_no_softmax", "cross_entropy", "cross-entropy with dz = z - onehot"),
      xent_no_softmax);
  add(out, calib_decl("calib.kd_fp32", "kd_loss", "fp32 distillation loss with T² (the ref kernel)"),
      [](Call& c) { return backends::kd_loss_fp32(c, true); });
  add(out, calib_decl("calib.kd_no_t2", "kd_loss", "distillation loss without the T² factor"),
      [](Call& c) { return backends::kd_loss_fp32(c, false); });
  add(out, calib_decl("calib.kd_ce_only", "kd_loss", "the hard-label cross-entropy alone"), kd_ce_only);
  add(out, calib_decl("calib.grad_accum_sum", "grad_accum", "accumulation that sums micro-batch gradients (no 1 / A)"),
      [](Call& c) { return backends::grad_accum_fp32(c, /*average=*/false); });
  add(out, calib_decl("calib.grad_accum_no_two", "grad_accum",
                      "MSE gradient without the 2 of d(e^2)/de: half the gradient"),
      [](Call& c) { return backends::grad_accum_fp32(c, true, /*factor=*/1.0f); });
  add(out, calib_decl("calib.grad_accum_fp32", "grad_accum", "micro-batch gradients, each averaged, then scaled by 1 / A"),
      [](Call& c) { return backends::grad_accum_fp32(c, true); });
  add(out, calib_decl("calib.slerp_lerp", "slerp", "\"slerp\" that interpolates linearly"),
      [](Call& c) { return backends::slerp_fp32(c, /*linear=*/true); });
  add(out, calib_decl("calib.wanda_magnitude_only", "prune_wanda", "WANDA that ranks by |W| alone"),
      [](Call& c) { return backends::prune_fp32(c, /*magnitude_only=*/true, 1.0f); });
  add(out, calib_decl("calib.prune_rescaled", "prune_magnitude",
                      "magnitude pruning that rescales kept weights by 1 / (1 - s), dropout style"),
      [](Call& c) {
        return backends::prune_fp32(c, false, static_cast<float>(1.0 / (1.0 - c.get_double("sparsity", 0.5))));
      });
  add(out, calib_decl("calib.bpe_merges_file", "bpe_roundtrip",
                      "byte-level BPE loaded from a GPT-2 merges list (the built-in merges, written and read back)"),
      [](Call& c) {
        return backends::bpe_roundtrip_rows(c, [](const std::string& s) {
          return tok_from_merges().decode(tok_from_merges().encode(s));
        });
      });
  add(out, calib_decl("calib.bpe_drop_invalid", "bpe_roundtrip",
                      "BPE whose decode goes through UTF-8 text with errors=ignore: invalid bytes vanish"),
      [](Call& c) {
        return backends::bpe_roundtrip_rows(c, [](const std::string& s) -> Result<std::string> {
          KC_ASSIGN_OR_RETURN(std::string back, tok().decode(tok().encode(s)));
          return drop_invalid_utf8(back);
        });
      });
  add(out, calib_decl("calib.bpe_lowercase", "bpe_roundtrip", "BPE behind a lower-casing normalizer"),
      [](Call& c) {
        return backends::bpe_roundtrip_rows(c, [](const std::string& s) -> Result<std::string> {
          std::string lower = s;
          for (char& ch : lower)
            if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
          return tok().decode(tok().encode(lower));
        });
      });
}

}  // namespace kc::calibration
