// kc — the words the language knows: op classes, signatures; nearest-word suggestions.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "kc/lang.h"

namespace kc::lang {
namespace {

std::mutex& vocab_mutex() {
  static std::mutex m;
  return m;
}

std::vector<std::string>& op_classes() {
  static std::vector<std::string> v = {
      "matmul",      "reduction", "fused_attention", "elementwise", "softmax",
      "log_softmax", "variance",  "log_sum_exp",     "indexing",    "embedding",
      "collective",  "dot",       "asum",            "nrm2",        "scal",
      "iamax",       "sum",       "attention",       "fused_matmul", "gather",
      "mean",        "norm2",     "index_select",    "scatter_add", "relu",
      "gelu_erf",    "gelu_tanh", "silu",            "exp",         "log",
      "tanh",        "erf",       "all_reduce",      "reduce_scatter", "all_gather",
      "sequential_matmul",
      "mlp_train_step",
      "layernorm",   "rmsnorm",   "rope",        "swiglu",
      // training ops (issue #6, docs/transformer-training.md)
      "cross_entropy", "kd_loss", "adamw_step", "grad_accum", "slerp", "prune_magnitude", "prune_wanda",
      "bpe_roundtrip",
  };
  return v;
}

}  // namespace

const std::vector<std::string>& known_op_classes() {
  std::lock_guard<std::mutex> lock(vocab_mutex());
  return op_classes();
}

void add_known_op_class(const std::string& name) {
  std::lock_guard<std::mutex> lock(vocab_mutex());
  auto& v = op_classes();
  if (std::find(v.begin(), v.end(), name) == v.end()) v.push_back(name);
}

const std::vector<std::string>& known_signatures() {
  static const std::vector<std::string> v = {
      "SATURATION",          "OVERFLOW_TO_INF",      "PRECISION_FINGERPRINT",
      "CANCELLATION_COLLAPSE", "NAN_INTRODUCED",     "NAN_SWALLOWED",
      "INF_SIGN",            "OUTPUT_NOT_WRITTEN",   "CONSTANT_OUTPUT",
      "FUSION_DIVERGENCE",   "SCHEDULE_OUTLIER",     "RANK_COUNT_DEPENDENT",
      "SCALE_DEPENDENT",     "TILE_REMAINDER",       "HELD_OUT_SHAPE",
      "CONFIG_DEPENDENT",    "NONDETERMINISTIC",     "FTZ",
      "OOB_UNDECLARED",      "OOB_POLICY",           "NAN_POLICY",
      "DENORMAL_POLICY",     "INPUT_MUTATED",        "GUARD_OVERWRITTEN",
      "CRASH",               "TIMEOUT",              "TIMING_IMPLAUSIBLE",
      "ERROR_BOUND_EXCEEDED", "TOLERANCE_EXCEEDED",  "ORDER_DEPENDENT",
      "TYPE_COERCION",       "STALE_OUTPUT",         "LOSS_SCALE",
      "FTZ_OBSERVED",        "IEEE_OBSERVED",        "MISSING_RAISE",
      "UNEXPECTED_RAISE",    "WIRE_PRECISION",       "ACCUMULATOR_PRECISION",
      "PROPERTY_VIOLATED",   "ZERO_SIGN",           "LATE_WRITE",
      // training ops (engine/classify_train.cpp)
      "GRADIENT_WITHOUT_SOFTMAX", "MISSING_T2_SCALING", "KL_REVERSED", "COUPLED_WEIGHT_DECAY",
      "HYPERPARAMETER_IGNORED", "NO_BIAS_CORRECTION", "ACCUMULATION_NOT_AVERAGED", "LERP_NOT_SLERP",
      "SCORE_IGNORES_ACTIVATIONS", "BYTES_DROPPED", "BYTES_CHANGED",
  };
  return v;
}

std::string nearest_word(std::string_view word, const std::vector<std::string>& vocabulary) {
  auto lower = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const std::string& cand : vocabulary) {
    const std::size_t n = word.size(), m = cand.size();
    std::vector<std::size_t> prev(m + 1), cur(m + 1);
    for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= m; ++j) {
        const std::size_t sub = prev[j - 1] + (lower(word[i - 1]) == lower(cand[j - 1]) ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    if (prev[m] < best_d) {
      best_d = prev[m];
      best = cand;
    }
  }
  // Close means: at most a third of the word's letters changed (and at least 1 allowed).
  const std::size_t limit = std::max<std::size_t>(1, (word.size() + 2) / 3);
  if (best_d == 0 || best_d > limit) return {};
  return best;
}

}  // namespace kc::lang
