#include "engine/classify.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include "kc/dtype.h"
#include "kc/signature.h"

namespace kc::engine {

namespace {

std::string fmt_g(double v) { return format_number(v); }

bool failing(double got, double ref, double allowed) { return element_ratio(got, ref, allowed) > 1; }

}  // namespace

namespace {

/// Counts over one observation that several value detectors use.
struct ValueFacts {
  std::size_t n = 0, fails = 0, unwritten = 0, unwritten_failing = 0;
  std::size_t nan_introduced = 0, nan_swallowed = 0, inf_sign = 0, zero_sign = 0;
};

ValueFacts value_facts(const Observation& obs) {
  ValueFacts f;
  f.n = std::min(obs.got.size(), obs.ref.size());
  for (std::size_t i = 0; i < f.n; ++i) {
    const double g = obs.got[i], r = obs.ref[i];
    const bool fail = failing(g, r, i < obs.allowed.size() ? obs.allowed[i] : 0);
    f.fails += fail;
    if (i < obs.unwritten.size() && obs.unwritten[i]) {
      // Still the poison: not a value the kernel produced, NaN or otherwise.
      ++f.unwritten;
      f.unwritten_failing += fail;
      continue;
    }
    if (std::isnan(g) && !std::isnan(r)) ++f.nan_introduced;
    if (!std::isnan(g) && std::isnan(r)) ++f.nan_swallowed;
    if (std::isinf(g) && std::isinf(r) && g != r) ++f.inf_sign;
    const double rounded = round_to(r, obs.dtype);
    if (obs.signed_zeros && g == 0 && rounded == 0 && std::signbit(g) != std::signbit(rounded)) {
      ++f.zero_sign;
      ++f.fails;  // the judge failed it (`ulp E signed`); IEEE comparison alone would not
    }
  }
  return f;
}

using Sigs = std::vector<Signature>;
using Notes = std::vector<std::string>;

/// Elements still holding kc's poison bits (engine/poison.h) were never
/// written; a NaN the kernel wrote has other bits and is judged as a value.
bool detect_unwritten(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (f.unwritten == f.n) {
    sigs->push_back({sig::kOutputNotWritten, {}});
    notes->push_back("output '" + obs.output + "' still holds kc's poison bits in all " + std::to_string(f.n) +
                     " elements: the kernel did not write it");
    return true;
  }
  if (f.unwritten == 0) return false;
  sigs->push_back({sig::kOutputNotWritten, {std::to_string(f.unwritten) + " of " + std::to_string(f.n)}});
  notes->push_back(std::to_string(f.unwritten) + " of " + std::to_string(f.n) + " elements of '" + obs.output +
                   "' still hold kc's poison bits: the kernel did not write them");
  return f.unwritten_failing == f.fails;  // other failures may have a name of their own
}

/// Flush to zero (before constant output: an output flushed everywhere is all
/// zeros): zeros where the reference, rounded to the output format, is a
/// nonzero subnormal.
bool detect_flush(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (!dtype_info(obs.dtype).is_float) return false;
  const double min_normal = dtype_info(obs.dtype).min_normal;
  std::size_t subnormal = 0, flushed = 0, flushed_failing = 0;
  for (std::size_t i = 0; i < f.n; ++i) {
    const double r = round_to(obs.ref[i], obs.dtype);
    if (r == 0 || !(std::fabs(r) < min_normal)) continue;
    ++subnormal;
    if (obs.got[i] != 0) continue;
    ++flushed;
    flushed_failing += failing(obs.got[i], obs.ref[i], i < obs.allowed.size() ? obs.allowed[i] : 0);
  }
  if (flushed == 0 || flushed_failing * 2 < f.fails) return false;
  sigs->push_back({sig::kFtzObserved, {std::to_string(flushed)}});
  notes->push_back(std::to_string(flushed) + " of " + std::to_string(subnormal) + " outputs whose reference is " +
                   "subnormal in " + std::string(dtype_info(obs.dtype).name) +
                   " came back as zero: subnormal results were flushed to zero");
  return true;
}

/// Saturation (before constant output: an all-inf result from an overflowing
/// accumulator is constant too, and saturation is the finer name): where the
/// reference exceeds a narrow format's maximum, the output is capped at that
/// maximum or overflowed to inf.
bool detect_saturation(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  for (DType t : {DType::kF16, DType::kFP8E4M3, DType::kFP8E5M2}) {
    const double cap = dtype_info(t).max_finite;
    // Inputs beyond the cap could not have passed through that format: an
    // infinite output then says nothing about it (an FP32 sum of squares of
    // 1e37-sized entries overflows FP32 itself).
    if (obs.input_max_abs > cap) continue;
    std::size_t beyond = 0, capped = 0;
    for (std::size_t i = 0; i < f.n; ++i) {
      const double r = obs.ref[i], g = obs.got[i];
      if (!std::isfinite(r) || std::fabs(r) <= cap) continue;
      ++beyond;
      if (std::isinf(g) || std::fabs(g) <= cap * (1 + 1e-3)) ++capped;
    }
    if (beyond == 0 || capped * 2 < beyond || capped * 2 < f.fails) continue;
    const std::string cap_text = fmt_g(cap);
    const std::string format(dtype_info(t).short_name);
    sigs->push_back({sig::kSaturation, {cap_text}});
    notes->push_back(std::to_string(capped) + " of " + std::to_string(beyond) + " elements whose reference exceeds " +
                     cap_text + " (" + format + " max) came back capped or infinite: a " + format +
                     " value is on the path");
    return true;
  }
  return false;
}

/// Inputs at the ends of the format's range: the largest input's square
/// overflows the input format (|x| > sqrt(max)), or every element of one
/// input tensor has a square below the smallest normal number. There a lost
/// result is named for the intermediate that left the range (detect_overflow,
/// detect_underflow), not as a constant.
bool squares_overflow(const Observation& obs) {
  return obs.inputs_finite && obs.input_format_max > 0 && obs.input_max_abs > std::sqrt(obs.input_format_max);
}
bool squares_underflow(const Observation& obs) {
  if (!obs.inputs_finite || !dtype_info(obs.dtype).is_float) return false;
  const double least = obs.least_input_max_abs > 0 ? obs.least_input_max_abs : obs.input_max_abs;
  return least > 0 && least * least < dtype_info(obs.dtype).min_normal;
}

/// Constant output where the reference varies (a NaN written everywhere is
/// named as a NaN, below).
bool detect_constant(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (f.n < 2 || std::isnan(obs.got[0])) return false;
  // 0 or +-Inf everywhere on range-probe inputs: x / sqrt(inf) = 0, x / 0 = inf.
  if ((obs.got[0] == 0 || std::isinf(obs.got[0])) && (squares_overflow(obs) || squares_underflow(obs))) return false;
  bool got_const = true, ref_const = true;
  // The constant must be wrong where the reference is a number: a constant
  // that fails only where the reference is NaN or Inf (zeros stored for
  // 0 * NaN) is a swallowed NaN, named below.
  auto allowed = [&](std::size_t i) { return i < obs.allowed.size() ? obs.allowed[i] : 0.0; };
  bool wrong_where_finite = std::isfinite(obs.ref[0]) && failing(obs.got[0], obs.ref[0], allowed(0));
  for (std::size_t i = 1; i < f.n; ++i) {
    got_const = got_const && std::memcmp(&obs.got[i], &obs.got[0], sizeof(double)) == 0;
    // An all-NaN reference is constant too (NaN != NaN).
    ref_const = ref_const && (obs.ref[i] == obs.ref[0] || (std::isnan(obs.ref[i]) && std::isnan(obs.ref[0])));
    wrong_where_finite =
        wrong_where_finite || (std::isfinite(obs.ref[i]) && failing(obs.got[i], obs.ref[i], allowed(i)));
  }
  if (!got_const || ref_const || !wrong_where_finite) return false;
  sigs->push_back({sig::kConstantOutput, {fmt_g(obs.got[0])}});
  notes->push_back("every element of '" + obs.output + "' equals " + fmt_g(obs.got[0]) + " while the reference varies");
  return true;
}

/// Underflow of intermediates: finite, nonzero inputs so small that any
/// product of two of them is below the output format's smallest normal number
/// (max|x|^2 < min_normal), a reference that is a normal number, and outputs
/// that are zero or subnormal there. A sum of squares of such entries is 0 in
/// the format; a scaled algorithm (nrm2's) keeps them.
/// A normalisation dividing by that underflowed sum gives +-Inf or NaN (x / 0,
/// 0 / 0) where the reference is a normal number: the same cause, counted
/// here (detect_overflow leaves non-finite outputs of such inputs alone).
/// The inputs are judged by the tensor of smallest magnitude (a row of tiny
/// values beside a gamma of order 1).
bool detect_underflow(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (!squares_underflow(obs)) return false;
  const double min_normal = dtype_info(obs.dtype).min_normal;
  const double least = obs.least_input_max_abs > 0 ? obs.least_input_max_abs : obs.input_max_abs;
  std::size_t lost = 0, divided = 0;
  for (std::size_t i = 0; i < f.n; ++i) {
    const double r = round_to(obs.ref[i], obs.dtype);
    if (!std::isfinite(r) || std::fabs(r) < min_normal) continue;
    if (i < obs.unwritten.size() && obs.unwritten[i]) continue;
    const double allowed = i < obs.allowed.size() ? obs.allowed[i] : 0;
    if (!failing(obs.got[i], obs.ref[i], allowed)) continue;
    lost += std::fabs(obs.got[i]) < min_normal;
    divided += !std::isfinite(obs.got[i]);
  }
  if (lost + divided == 0 || (lost + divided) * 2 < f.fails) return false;
  sigs->push_back({sig::kUnderflowToZero, {std::to_string(lost + divided)}});
  std::string what;
  if (lost > 0) what = std::to_string(lost) + " outputs are zero or subnormal";
  if (divided > 0)
    what += std::string(what.empty() ? "" : " and ") + std::to_string(divided) + " outputs are +-Inf or NaN";
  notes->push_back(what + " where the reference is a normal number; an input reaches only |x| = " + fmt_g(least) +
                   ", so its squares and products underflow " + std::string(dtype_info(obs.dtype).name) +
                   ": an unscaled intermediate underflowed to zero" +
                   (divided > 0 ? " and was divided by (x / 0, 0 / 0)" : ""));
  return true;
}

/// Finite inputs, non-finite outputs where the reference is finite. +-Inf is
/// an overflow. NaN alone is one only when an intermediate can overflow: an
/// input beyond ln(max) of its format makes exp overflow (a square overflows
/// later still), and Inf - Inf or Inf / Inf then gives the NaN; otherwise the
/// NaN is named as a NaN (detect_nan_inf).
/// Where the inputs' squares overflow (|x| > sqrt(max)), an overflowed
/// intermediate also shows as a zero output: x / sqrt(inf) = 0 in an unscaled
/// norm. Those count too when the reference there is a normal number.
bool detect_overflow(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (!obs.inputs_finite) return false;
  // Every square of one input underflows and none overflows: an infinite
  // output is a division by an underflowed sum (detect_underflow).
  if (squares_underflow(obs) && !squares_overflow(obs)) return false;
  const bool big = squares_overflow(obs);
  const double min_normal = dtype_info(obs.dtype).is_float ? dtype_info(obs.dtype).min_normal : 0.0;
  std::size_t inf_out = 0, nan_out = 0, zero_out = 0;
  for (std::size_t i = 0; i < f.n; ++i) {
    if (!std::isfinite(obs.ref[i]) || (i < obs.unwritten.size() && obs.unwritten[i])) continue;
    inf_out += std::isinf(obs.got[i]);
    nan_out += std::isnan(obs.got[i]);
    zero_out += big && obs.got[i] == 0 && std::fabs(round_to(obs.ref[i], obs.dtype)) >= min_normal &&
                failing(obs.got[i], obs.ref[i], i < obs.allowed.size() ? obs.allowed[i] : 0);
  }
  const double exp_limit = obs.input_format_max > 0 ? std::log(obs.input_format_max) : HUGE_VAL;
  const bool can_overflow = obs.input_max_abs > exp_limit;
  if (inf_out == 0 && zero_out == 0 && (nan_out == 0 || !can_overflow)) return false;
  // Zeros alone name an overflow only when they are most of what failed.
  if (inf_out + nan_out == 0 && zero_out * 2 < f.fails) return false;
  sigs->push_back({sig::kOverflowToInf, {std::to_string(inf_out + nan_out + zero_out)}});
  std::string what = inf_out > 0 ? std::to_string(inf_out) + " outputs are +-Inf" : std::string();
  if (nan_out > 0) what += std::string(what.empty() ? "" : " and ") + std::to_string(nan_out) + " outputs are NaN";
  if (zero_out > 0)
    what += std::string(what.empty() ? "" : " and ") + std::to_string(zero_out) +
            " outputs are 0 where the reference is a normal number (x / Inf)";
  what += " although every input and the reference are finite";
  if (big)
    what += "; inputs reach |x| = " + fmt_g(obs.input_max_abs) + ", whose square overflows the input format";
  else if (can_overflow)
    what += "; inputs reach |x| = " + fmt_g(obs.input_max_abs) + ", beyond " + fmt_g(exp_limit) +
            " where exp overflows in the input format";
  notes->push_back(what + ": an intermediate overflowed");
  return true;
}

/// A floor in the underflow range: failing outputs at a tiny nonzero value
/// (below twice the output format's smallest normal number) where the
/// reference is smaller in magnitude (0, or a subnormal further down): a
/// function that clamps its argument at the underflow threshold (a SIMD exp
/// returning exp(ln(min_normal)) for every x below it) instead of
/// underflowing gradually to 0. The argument is the largest such output.
bool detect_underflow_floor(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (!dtype_info(obs.dtype).is_float || f.fails == 0) return false;
  const double min_normal = dtype_info(obs.dtype).min_normal;
  std::size_t floored = 0;
  double value = 0;
  for (std::size_t i = 0; i < f.n; ++i) {
    const double g = obs.got[i], r = round_to(obs.ref[i], obs.dtype);
    if (g == 0 || !std::isfinite(g) || !(std::fabs(g) < 2 * min_normal) || !(std::fabs(r) < std::fabs(g))) continue;
    if (i < obs.unwritten.size() && obs.unwritten[i]) continue;
    if (!failing(g, obs.ref[i], i < obs.allowed.size() ? obs.allowed[i] : 0)) continue;
    ++floored;
    value = std::max(value, std::fabs(g));
  }
  if (floored == 0 || floored * 2 < f.fails) return false;
  sigs->push_back({sig::kUnderflowFloor, {fmt_g(value)}});
  notes->push_back(std::to_string(floored) + " outputs are tiny nonzero values (up to " + fmt_g(value) +
                   ", below " + std::string(dtype_info(obs.dtype).name) + "'s smallest normal " + fmt_g(min_normal) +
                   " or near it) where the reference is smaller or 0: an exp (or similar) clamped at its underflow "
                   "threshold instead of underflowing to 0");
  return true;
}

/// Large offset, small spread: outputs that lost all their significant digits.
bool detect_cancellation(const Observation& obs, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (!(obs.input_offset_ratio > 10) || f.fails == 0) return false;
  std::size_t collapsed = 0;
  for (std::size_t i = 0; i < f.n; ++i) {
    const double g = obs.got[i], r = obs.ref[i];
    if (!std::isfinite(g) || !std::isfinite(r)) continue;
    if ((r > 0 && g <= 0) || std::fabs(g - r) >= 0.5 * std::fabs(r)) ++collapsed;
  }
  if (collapsed * 2 < f.fails) return false;
  sigs->push_back({sig::kCancellationCollapse, {std::to_string(collapsed)}});
  notes->push_back(std::to_string(collapsed) + " outputs are off by half their value or more on inputs whose "
                   "mean is " + fmt_g(obs.input_offset_ratio) + "x their spread: catastrophic cancellation");
  return true;
}

/// NaNs the kernel wrote, NaNs it dropped, infinities and (where the
/// tolerance is signed) zeros of the wrong sign.
bool detect_nan_inf(const Observation&, const ValueFacts& f, Sigs* sigs, Notes* notes) {
  if (f.nan_introduced > 0) {
    sigs->push_back({sig::kNanIntroduced, {std::to_string(f.nan_introduced)}});
    notes->push_back(std::to_string(f.nan_introduced) + " NaN outputs where the reference is not NaN");
  }
  if (f.nan_swallowed > 0) {
    sigs->push_back({sig::kNanSwallowed, {std::to_string(f.nan_swallowed)}});
    notes->push_back(std::to_string(f.nan_swallowed) + " outputs are not NaN where the reference is NaN");
  }
  if (f.inf_sign > 0) {
    sigs->push_back({sig::kInfSign, {std::to_string(f.inf_sign)}});
    notes->push_back(std::to_string(f.inf_sign) + " infinite outputs with the wrong sign");
  }
  if (f.zero_sign > 0) {
    sigs->push_back({sig::kZeroSign, {std::to_string(f.zero_sign)}});
    notes->push_back(std::to_string(f.zero_sign) + " zero outputs with the wrong sign (+0 for -0 or -0 for +0)");
  }
  return true;
}

}  // namespace

void classify_values(const Observation& obs, std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  const ValueFacts facts = value_facts(obs);
  if (facts.n == 0) return;
  // In order; the first detector that names its pattern ends the search.
  using Detector = bool (*)(const Observation&, const ValueFacts&, Sigs*, Notes*);
  static constexpr Detector kDetectors[] = {detect_unwritten, detect_flush,        detect_saturation,
                                            detect_constant,  detect_overflow,     detect_underflow,
                                            detect_underflow_floor, detect_cancellation, detect_nan_inf};
  for (Detector detect : kDetectors)
    if (detect(obs, facts, sigs, notes)) return;
}

void classify_fingerprint(const Op& op, const Call& inputs, const OracleOptions& options,
                          const Observation& obs, std::vector<Signature>* sigs,
                          std::vector<std::string>* notes) {
  // Candidates from widest to narrowest mantissa; tf32 and fp16 share 10 bits
  // and differ only in range, so tf32 is tried first and fp16 wins only where
  // range effects (overflow/underflow) are what explains the output.
  struct Candidate {
    DType t;
    double score;
  };
  const double base = max_ratio(obs.got, obs.ref, obs.allowed);
  if (!(base > 1)) return;
  std::vector<Candidate> explained;
  for (DType t : {DType::kTF32, DType::kF16, DType::kBF16}) {
    Call rounded = inputs;
    for (std::size_t k = 0; k < rounded.tensors.size(); ++k) {
      if (rounded.roles[k] == Role::kOut) continue;
      Tensor& tensor = rounded.tensors[k];
      if (!dtype_info(tensor.dtype()).is_float) continue;
      for (std::int64_t i = 0; i < tensor.storage_elems(); ++i)
        tensor.store(i, round_to(tensor.load(i), t));
    }
    auto oracle = op.oracle(rounded, options);
    if (!oracle.ok()) continue;
    for (std::size_t o = 0; o < oracle->output_names.size(); ++o) {
      if (oracle->output_names[o] != obs.output) continue;
      const double score = max_ratio(obs.got, oracle->outputs[o], obs.allowed);
      if (score <= 1) explained.push_back({t, score});
    }
  }
  if (explained.empty()) return;
  // The candidate with the best score; candidates that score the same are
  // indistinguishable on these inputs (tf32 and fp16 agree on values of
  // ordinary magnitude) and are all named: "tf32|fp16".
  Candidate best = explained.front();
  for (const auto& c : explained)
    if (c.score < best.score) best = c;
  std::string name;
  for (const auto& c : explained)
    if (c.score == best.score) name += (name.empty() ? "" : "|") + std::string(dtype_info(c.t).short_name);
  sigs->push_back({sig::kPrecisionFingerprint, {name}});
  std::string prose = name;
  for (std::size_t at = prose.find('|'); at != std::string::npos; at = prose.find('|', at))
    prose.replace(at, 1, " or ");
  notes->push_back("the output matches the FP64 result of inputs rounded to " + prose + " (max ratio " +
                   fmt_g(best.score) + " vs " + fmt_g(base) + " against the true inputs): inputs were coerced to " +
                   prose + (name.find('|') != std::string::npos
                                ? " (these agree on inputs of this magnitude; a probe in fp16's subnormal range tells them apart)"
                                : ""));
}

void classify_accumulator_precision(const Op& op, const Call& inputs, const Observation& obs,
                                    std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  const double len = op.accumulation_length(inputs);
  if (!(len >= 2) || obs.got.empty() || obs.got.size() != obs.ref.size()) return;
  auto mag = op.magnitude(inputs, obs.output);
  if (!mag.ok() || mag->size() < obs.got.size()) return;
  for (DType t : {DType::kBF16, DType::kF16}) {
    // Outputs on t's grid within a t accumulation's bound are the evidence; an
    // output format no wider than t puts every output on that grid, so there
    // the grid proves nothing (the accumulator_bits probe measures the
    // accumulator instead).
    if (dtype_info(obs.dtype).mantissa_bits <= dtype_info(t).mantissa_bits) continue;
    std::size_t ref_on_grid = 0;
    bool explained = true;
    double worst = 0;
    // A t accumulation's bound, gradual underflow in t included (Op::underflow_allowance's model).
    const double g = gamma(len, t), u = unit_roundoff(t), under = (len + 2) * underflow_unit(t);
    for (std::size_t i = 0; i < obs.got.size() && explained; ++i) {
      const double got = obs.got[i], ref = obs.ref[i];
      explained = std::isfinite(got) && round_to(got, t) == got;
      if (round_to(ref, t) == ref) ++ref_on_grid;
      const double r = element_ratio(got, ref, g * (*mag)[i] + u * std::fabs(ref) + under);
      explained = explained && r <= 1;
      worst = std::max(worst, r);
    }
    // Most reference values off the grid: a got value on it is then no accident
    // (a random FP32 value is a fp16 value with probability ~2^-13).
    if (!explained || 2 * ref_on_grid >= obs.got.size()) continue;
    const std::string name(dtype_info(t).short_name);
    sigs->push_back({sig::kAccumulatorPrecision, {name}});
    notes->push_back("every element of '" + obs.output + "' is a " + name + " value (against " +
                     std::to_string(ref_on_grid) + " of " + std::to_string(obs.got.size()) +
                     " reference values) and within the error of a " + name + " accumulation (gamma(" +
                     fmt_g(len) + ", " + name + ") * magnitude, max ratio " + fmt_g(worst) +
                     "): the sum was accumulated in " + name);
    return;
  }
}

void classify_failure(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                      std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  using Classifier = void (*)(const Op&, const Call&, const OracleOptions&, const Observation&,
                              std::vector<Signature>*, std::vector<std::string>*);
  using Stage = OpClassifier::Stage;
  const std::vector<OpClassifier> own = op.classifiers();
  // The op's own classifiers of one stage, in the order it lists them.
  auto run_own = [&](Stage stage) {
    for (const OpClassifier& c : own) {
      if (c.stage != stage || !c.classify) continue;
      c.classify(op, inputs, options, obs, sigs, notes);
      if (!sigs->empty()) return true;
    }
    return false;
  };
  // The one order: the op's probe readings first (their zeros are what they
  // measure), the value patterns, the input-precision fingerprint, the op's
  // precision classifiers, the generic accumulator-precision test, and last
  // the op's semantic ones.
  static constexpr Classifier kGeneric[] = {
      [](const Op&, const Call&, const OracleOptions&, const Observation& o, std::vector<Signature>* s,
         std::vector<std::string>* n) { classify_values(o, s, n); },
      classify_fingerprint,
  };
  if (run_own(Stage::kProbeReading)) return;
  for (Classifier classify : kGeneric) {
    classify(op, inputs, options, obs, sigs, notes);
    if (!sigs->empty()) return;
  }
  if (run_own(Stage::kPrecision)) return;
  classify_accumulator_precision(op, inputs, obs, sigs, notes);
  if (!sigs->empty()) return;
  run_own(Stage::kSemantics);
}

void classify_axes(const std::vector<Config>& configs, const std::vector<bool>& failed,
                   const std::vector<bool>& ran, std::vector<Signature>* sigs,
                   std::vector<std::string>* notes) {
  bool any_pass = false, any_fail = false;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    any_fail = any_fail || (ran[i] && failed[i]);
    any_pass = any_pass || (ran[i] && !failed[i]);
  }
  if (!any_fail || configs.empty()) return;
  auto is_shape = [](const std::string& p) {
    return p == "M" || p == "N" || p == "K" || p == "n" || p == "rows" || p == "cols" || p == "dim" ||
           p == "seq" || p == "head_dim";
  };
  // Tile remainder over several shape axes at once: a config fails exactly when
  // one of its sizes is not a multiple of the tile (a kernel that drops the
  // remainder in M, N and K fails whenever any of them has one). The per-axis
  // test below cannot see this: each axis then fails at multiples too.
  std::vector<std::string> shape_axes;
  for (const auto& [param, unused] : configs.front().params) {
    if (!is_shape(param)) continue;
    std::set<std::string> values;
    for (std::size_t i = 0; i < configs.size(); ++i)
      if (ran[i]) values.insert(configs[i].get(param));
    if (values.size() > 1) shape_axes.push_back(param);
  }
  if (shape_axes.size() > 1 && any_pass) {
    for (std::int64_t tile : {32, 16, 8, 4}) {
      bool fits = true;
      for (std::size_t i = 0; i < configs.size() && fits; ++i) {
        if (!ran[i]) continue;
        bool remainder = false;
        for (const auto& p : shape_axes) remainder = remainder || std::atoll(configs[i].get(p).c_str()) % tile != 0;
        fits = remainder == failed[i];
      }
      if (!fits) continue;
      std::string axes;
      for (const auto& p : shape_axes) axes += (axes.empty() ? "" : ", ") + p;
      sigs->push_back({sig::kTileRemainder, {std::to_string(tile)}});
      notes->push_back("a config fails exactly when one of " + axes + " is not a multiple of " +
                       std::to_string(tile) + ": a remainder tile is mishandled");
      return;
    }
  }
  for (const auto& [param, unused] : configs.front().params) {
    std::set<std::string> fail_values, pass_values, all_values;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      if (!ran[i]) continue;
      const std::string v = configs[i].get(param);
      all_values.insert(v);
      (failed[i] ? fail_values : pass_values).insert(v);
    }
    if (all_values.size() < 2) continue;
    bool disjoint = true;
    for (const auto& v : fail_values) disjoint = disjoint && !pass_values.count(v);
    if (param == "ranks" && (disjoint || !any_pass)) {
      std::int64_t smallest = INT64_MAX;
      for (const auto& v : fail_values) smallest = std::min<std::int64_t>(smallest, std::atoll(v.c_str()));
      sigs->push_back({sig::kRankCountDependent, {std::to_string(smallest)}});
      notes->push_back(any_pass ? "fails from " + std::to_string(smallest) + " ranks on, passes below"
                                : "fails at every rank count tried, from K = " + std::to_string(smallest));
      return;
    }
    if (!disjoint || !any_pass) continue;
    std::string values;
    for (const auto& v : fail_values) values += (values.empty() ? "" : ",") + v;
    if (param == "schedule") {
      sigs->push_back({sig::kScheduleOutlier, {values}});
      notes->push_back("only schedule " + values + " breaks the bound; every other schedule conforms");
      return;
    }
    if (param == "loss_scale" || param == "quant_scale") {
      sigs->push_back({sig::kScaleDependent, {param + "=" + values}});
      notes->push_back("the result depends on " + param + ": it breaks at " + values + " and holds elsewhere");
      return;
    }
    if (is_shape(param)) {
      // A remainder pattern is only evidence when size cannot explain it too:
      // if every failing value lies below (or above) every passing one, an error
      // that simply does not shrink as fast as the bound at small sizes (or grows
      // faster at large ones) fails the same configs. oneDNN's log_softmax is
      // ~3.4e-6 off near 1 at every cols; only cols = 1 and 17 fail, both below the
      // passing 128 and 1000, and "not a multiple of 8" was a coincidence.
      std::int64_t fail_lo = INT64_MAX, fail_hi = INT64_MIN, pass_lo = INT64_MAX, pass_hi = INT64_MIN;
      for (const auto& v : fail_values) {
        fail_lo = std::min<std::int64_t>(fail_lo, std::atoll(v.c_str()));
        fail_hi = std::max<std::int64_t>(fail_hi, std::atoll(v.c_str()));
      }
      for (const auto& v : pass_values) {
        pass_lo = std::min<std::int64_t>(pass_lo, std::atoll(v.c_str()));
        pass_hi = std::max<std::int64_t>(pass_hi, std::atoll(v.c_str()));
      }
      const bool interleaved = pass_lo < fail_hi && fail_lo < pass_hi;
      for (std::int64_t tile : {32, 16, 8, 4}) {
        bool fits = true;
        for (const auto& v : fail_values) fits = fits && std::atoll(v.c_str()) % tile != 0;
        for (const auto& v : pass_values) fits = fits && std::atoll(v.c_str()) % tile == 0;
        if (fits && !interleaved) {
          notes->push_back(param + " values " + values + " fail and are all " +
                           (fail_hi < pass_lo ? "smaller" : "larger") + " than every passing " + param +
                           ": the failures follow size as well as a remainder modulo " + std::to_string(tile) +
                           ", so no tile is named; try sizes that separate the two");
          return;
        }
        if (fits) {
          sigs->push_back({sig::kTileRemainder, {std::to_string(tile)}});
          notes->push_back(param + " values " + values + " (not multiples of " + std::to_string(tile) +
                           ") fail; multiples of " + std::to_string(tile) + " pass: a remainder tile is mishandled");
          return;
        }
      }
      sigs->push_back({sig::kHeldOutShape, {param + "=" + values}});
      notes->push_back("fails only at " + param + " = " + values + ": correct on the other shapes tried");
      return;
    }
    sigs->push_back({sig::kConfigDependent, {param + "=" + values}});
    notes->push_back("fails only at " + param + " = " + values);
    return;
  }
}

}  // namespace kc::engine
