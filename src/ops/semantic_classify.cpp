// kc — signatures of the training ops (issue #6, docs/transformer-training.md).
//
// Two detectors, both by re-running the op's oracle on the failing call's
// inputs and asking whether that explains the output within the same
// per-element allowance the verdict used:
//  - a documented alternative semantics (an oracle option the op honours,
//    e.g. adamw_step `weight_decay = coupled`) names the defect;
//  - a hyper-parameter set to its default (the op's params table) instead of
//    the call's value: the kernel ignored it (HYPERPARAMETER_IGNORED(beta2)).
// The byte round trip of a tokenizer gets its own byte-level comparison.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/classify.h"
#include "kc/signature.h"

namespace kc::engine {
namespace {

struct Variant {
  const char* op;
  const char* key;
  const char* value;
  const char* signature;
  const char* meaning;
};

// One table: op, oracle option, the value that explains a defect, its name.
const Variant kVariants[] = {
    {"cross_entropy", "gradient", "logits_minus_onehot", sig::kGradientWithoutSoftmax,
     "dz matches z - onehot: the softmax is missing from the gradient"},
    {"kd_loss", "t2_scaling", "off", sig::kMissingT2Scaling,
     "the loss matches alpha KL + (1 - alpha) CE without the T² factor"},
    {"kd_loss", "kl_direction", "student_teacher", sig::kKlReversed,
     "the loss matches KL(p_student || p_teacher): the divergence runs the wrong way"},
    {"adamw_step", "weight_decay", "coupled", sig::kCoupledWeightDecay,
     "the step matches Adam with L2 decay folded into the gradient (coupled), not AdamW's decoupled decay"},
    {"adamw_step", "bias_correction", "off", sig::kNoBiasCorrection,
     "the step matches Adam without the 1 / (1 - beta^t) bias corrections"},
    {"grad_accum", "average", "off", sig::kAccumulationNotAveraged,
     "the gradient matches the sum of the micro-batch gradients, not their mean"},
    {"slerp", "interpolation", "linear", sig::kLerpNotSlerp,
     "the result matches linear interpolation (1 - t) a + t b, which leaves the sphere"},
    {"prune_wanda", "score", "magnitude", sig::kScoreIgnoresActivations,
     "the mask matches magnitude pruning: the activation norms were ignored"},
};

// Scalar hyper-parameters a kernel could silently hard-code, per op.
struct Hyper {
  const char* op;
  std::vector<const char*> params;
};
const Hyper kHypers[] = {
    {"adamw_step", {"lr", "beta1", "beta2", "eps", "weight_decay"}},
    {"kd_loss", {"alpha", "T"}},
    {"slerp", {"t"}},
    {"prune_magnitude", {"sparsity"}},
    {"prune_wanda", {"sparsity"}},
};

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

/// max ratio of the observation against the oracle output of `call` under `options`; < 0 if none.
double explained_by(const Op& op, const Call& call, const OracleOptions& options, const Observation& obs) {
  auto oracle = op.oracle(call, options);
  if (!oracle.ok()) return -1;
  for (std::size_t o = 0; o < oracle->output_names.size(); ++o)
    if (oracle->output_names[o] == obs.output) return max_ratio(obs.got, oracle->outputs[o], obs.allowed);
  return -1;
}

/// bpe_roundtrip: per row, the decoded bytes against the input bytes.
void classify_roundtrip(const Call& inputs, const Observation& obs, std::vector<Signature>* sigs,
                        std::vector<std::string>* notes) {
  if (obs.output != "y" || !inputs.has("x")) return;
  const Tensor& x = inputs.t("x");
  const std::int64_t rows = x.dim(0), len = x.dim(1);
  if (rows == 0) return;
  const std::size_t cap = obs.got.size() / static_cast<std::size_t>(rows);
  std::int64_t dropped_rows = 0, changed_rows = 0, dropped_bytes = 0;
  std::string example;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<int> in, out;
    for (std::int64_t i = 0; i < len; ++i) in.push_back(static_cast<int>(x.at(r * len + i)));
    for (std::size_t i = 0; i < cap; ++i) {
      const double v = obs.got[static_cast<std::size_t>(r) * cap + i];
      if (!(v >= 0 && v <= 255)) break;  // the -1 terminator (or garbage) ends the decoded string
      out.push_back(static_cast<int>(v));
    }
    if (out == in) continue;
    // `out` a proper subsequence of `in`: bytes were dropped, none changed.
    std::size_t j = 0;
    for (std::size_t i = 0; i < in.size() && j < out.size(); ++i)
      if (in[i] == out[j]) ++j;
    if (j == out.size() && out.size() < in.size()) {
      ++dropped_rows;
      dropped_bytes += static_cast<std::int64_t>(in.size() - out.size());
      if (example.empty()) {
        // The first dropped byte.
        std::size_t i = 0;
        while (i < out.size() && in[i] == out[i]) ++i;
        char buf[96];
        std::snprintf(buf, sizeof buf, "row %lld loses byte 0x%02x at offset %zu", static_cast<long long>(r), in[i], i);
        example = buf;
      }
    } else {
      ++changed_rows;
    }
  }
  if (dropped_rows > 0 && changed_rows == 0) {
    sigs->push_back({sig::kBytesDropped, {std::to_string(dropped_bytes)}});
    notes->push_back(std::to_string(dropped_bytes) + " input bytes are missing from decode(encode(x)) in " +
                     std::to_string(dropped_rows) + " rows, every other byte intact (" + example + ")");
  } else if (dropped_rows + changed_rows > 0) {
    sigs->push_back({sig::kBytesChanged, {std::to_string(dropped_rows + changed_rows)}});
    notes->push_back(std::to_string(dropped_rows + changed_rows) + " rows decode to other bytes than they encode");
  }
}

}  // namespace

void classify_training(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                       std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  if (op.name() == "bpe_roundtrip") {
    classify_roundtrip(inputs, obs, sigs, notes);
    return;
  }
  const double base = max_ratio(obs.got, obs.ref, obs.allowed);
  for (const Variant& v : kVariants) {
    if (op.name() != v.op) continue;
    OracleOptions alt = options;
    alt.with[v.key] = v.value;
    const double r = explained_by(op, inputs, alt, obs);
    if (r >= 0 && r <= 1) {
      sigs->push_back({v.signature, {}});
      notes->push_back(std::string(v.meaning) + " (max ratio " + fmt_g(r) + " against " + v.key + " = " + v.value +
                       ", " + fmt_g(base) + " against the contract's reference)");
      return;
    }
  }
  for (const Hyper& h : kHypers) {
    if (op.name() != h.op) continue;
    for (const char* p : h.params) {
      std::string fallback;
      for (const auto& param : op.params())
        if (param.name == p) fallback = param.default_value;
      const std::string have = inputs.config.get(p);
      if (fallback.empty() || have.empty() || have == fallback) continue;
      Call other = inputs;
      other.config.params[p] = fallback;
      const double r = explained_by(op, other, options, obs);
      if (r >= 0 && r <= 1) {
        sigs->push_back({sig::kHyperparameterIgnored, {p}});
        notes->push_back("the output matches " + std::string(p) + " = " + fallback + " (max ratio " + fmt_g(r) +
                         ") although the call sets " + p + " = " + have + ": the kernel does not read " + p);
        return;
      }
    }
  }
}

}  // namespace kc::engine
