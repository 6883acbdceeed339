// kc — the signature table (see kc/signature.h).
#include "kc/signature.h"

namespace kc {
namespace {

using namespace sig;

constexpr SignatureInfo kSignatures[] = {
    // Values: what the outputs show against the reference.
    {kSaturation, "cap", "outputs top out at a narrow format's maximum (or overflow) where the reference exceeds it",
     "classifier (values)", ""},
    {kOverflowToInf, "count",
     "finite inputs and reference, non-finite outputs (or, for inputs whose squares overflow, 0 = x / Inf where the "
     "reference is normal): an intermediate overflowed",
     "classifier (values)", ""},
    {kUnderflowToZero, "count",
     "an input whose products underflow, a normal reference, zero or subnormal outputs (or +-Inf / NaN from a "
     "division by the underflowed sum): an intermediate underflowed to zero",
     "classifier (values)", ""},
    {kUnderflowFloor, "value",
     "outputs stuck at a tiny nonzero value near the smallest normal where the reference is smaller or 0: an exp "
     "clamped at its underflow threshold instead of underflowing gradually",
     "classifier (values)", ""},
    {kCancellationCollapse, "count", "outputs lost all significant digits to cancellation (large offset, small spread)",
     "classifier (values)", ""},
    {kConstantOutput, "value", "the output is one constant where the reference varies", "classifier (values)", ""},
    {kOutputNotWritten, "unwritten of total", "output elements still hold kc's poison: the kernel never wrote them",
     "classifier (values)", ""},
    {kNanIntroduced, "count", "NaN in the output where the reference is not NaN", "classifier, policy judge", ""},
    {kNanSwallowed, "count", "a NaN input did not reach the output (masked or dropped)", "classifier, policy judge", ""},
    {kInfSign, "count", "an infinity of the wrong sign, or an infinity where the reference has none",
     "classifier, policy judge", ""},
    {kZeroSign, "count", "a zero of the wrong sign under a signed ulp tolerance", "classifier (values)", ""},
    {kFtzObserved, "count", "subnormal results or inputs flushed to zero by a kernel declaring IEEE",
     "classifier, policy judge", ""},
    {kIeeeObserved, "", "subnormals kept (gradual underflow) by a kernel declaring FTZ or DAZ", "policy judge", ""},
    {kSpecialValue, "count", "elements the reference's spec fixes exactly (special values) differ from it",
     "named-reference judge", ""},
    // Precision fingerprints.
    {kPrecisionFingerprint, "format", "the outputs match the reference computed in a narrower format (e.g. bf16)",
     "classifier (fingerprint)", ""},
    {kAccumulatorPrecision, "format", "the outputs match an accumulator narrower than the declared one",
     "classifier (fingerprint)", ""},
    {kAccumulatorRounding, "mode",
     "the accumulator rounds in a direction (toward zero, -inf or +inf) where the declared format rounds to nearest",
     "classifier (arithmetic probe)", ""},
    {kProductPrecision, "format",
     "products are rounded to a narrower format before they are summed, where the declared accumulator holds them "
     "exactly",
     "classifier (arithmetic probe)", ""},
    {kWirePrecision, "format", "a collective's result matches its data rounded to a narrower format on the wire",
     "classifier (fingerprint)", ""},
    {kFusionDivergence, "param=value", "a fused op matches another activation than the one declared (tanh-GELU for erf-GELU)",
     "classifier (alternatives)", ""},
    // Over the configs of a run.
    {kTileRemainder, "tile", "configs fail exactly where a size is not a multiple of the tile",
     "classifier (configs)", ""},
    {kHeldOutShape, "param=values", "configs fail only at sizes outside the benchmarked ones", "classifier (configs)",
     ""},
    {kScheduleOutlier, "schedules", "some schedules of the enumerated space leave the band the others keep",
     "classifier (configs)", ""},
    {kRankCountDependent, "ranks", "a collective fails from this rank count on", "classifier (configs)", ""},
    {kScaleDependent, "param=values", "the result changes with a scale (loss scale, quantization scale)",
     "classifier (configs)", ""},
    {kConfigDependent, "param=values", "configs fail at these values of one parameter and pass at the others",
     "classifier (configs)", ""},
    // Judges.
    {kNondeterministic, "mismatched of runs", "repeated invocations on identical inputs differ beyond the declared class",
     "determinism judge", ""},
    {kPropertyViolated, "property", "the algebraic property the reference names does not hold", "property judge", ""},
    {kMissingRaise, "", "the kernel returned normally where raising was promised", "raise and policy judges", ""},
    {kUnexpectedRaise, "", "the kernel raised where a result was promised", "raise and policy judges", ""},
    {kOobUndeclared, "why", "out-of-range indices gave values matching none of RAISE, CLAMP, ZERO", "policy judge", ""},
    {kOobPolicy, "observed", "out-of-range indices follow another policy than the declared one", "policy judge", ""},
    {kCapabilityViolation, "shape_class|layouts|alignment|workspace",
     "an input outside the impl's declared capability (shape_class, layouts, alignment, workspace) returned a wrong "
     "result without raising, where the impl declares unsupported = RAISE or FALLBACK",
     "capability judge", ""},
    {kSilentFallback, "path",
     "the implementation path the impl reports for a call (or, where it reports none, the arithmetic its outputs "
     "reveal) is not the one it declares inside its capability, or its declared fallback outside it: a fallback the "
     "caller was not told about",
     "capability and path judges", ""},
    {kToleranceExceeded, "ratio", "results exceed the tolerance with no more specific pattern (named only when the "
                                  "contract lists it)",
     "verdict", ""},
    {kErrorBoundExceeded, "ratio", "results exceed the error bound with no more specific pattern (named only when the "
                                   "contract lists it)",
     "verdict", ""},
    // Integrity of the call.
    {kInputMutated, "", "the kernel modified an input tensor it does not own", "integrity check", ""},
    {kStaleOutput, "", "the output is a copy of a previous call's answer, not computed from these inputs",
     "integrity check", ""},
    {kTimingImplausible, "", "the measured time is faster than the machine's peak allows", "integrity check", ""},
    {kGuardOverwritten, "tensor, before|after", "the kernel wrote into the guard band around a buffer",
     "worker (guards)", ""},
    {kGuardRead, "tensor, before|after", "the kernel read the guard band around a buffer (out-of-bounds read)",
     "worker (guards)", ""},
    {kLateWrite, "tensor", "an output was written after the kernel returned", "worker", ""},
    {kCrash, "signal|exit N|exception", "the kernel's worker died", "worker", ""},
    {kTimeout, "seconds|cpu", "the call ran past the wall-clock or CPU limit", "worker", ""},
    {kMemoryLimit, "size", "the call needed more memory than the worker may add", "worker", ""},
    {kWorkerFailed, "", "the worker could not be started or broke its protocol", "worker", ""},
    {kSanitizer, "tool, errors", "compute-sanitizer reported errors in the case (--compute-sanitizer)",
     "compute-sanitizer", ""},
    {kMemcheck, "kind, object",
     "valgrind memcheck saw an invalid access or a use of uninitialised memory during a kernel call (--isolate "
     "valgrind): kind as valgrind names it (InvalidRead, InvalidWrite, UninitCondition, ...), object the library "
     "of the innermost frame",
     "valgrind memcheck", ""},
    // Training ops: the output matches a known wrong variant of the op.
    {kGradientWithoutSoftmax, "", "the cross-entropy gradient matches z - onehot: the softmax is missing",
     "classifier (training)", ""},
    {kMissingT2Scaling, "", "the distillation loss lacks the T^2 factor", "classifier (training)", ""},
    {kKlReversed, "", "the distillation KL runs student to teacher", "classifier (training)", ""},
    {kCoupledWeightDecay, "", "AdamW's decay is folded into the gradient (Adam with L2)", "classifier (training)", ""},
    {kNoBiasCorrection, "", "Adam's 1 / (1 - beta^t) bias corrections are missing", "classifier (training)", ""},
    {kAccumulationNotAveraged, "", "accumulated gradients are summed, not averaged", "classifier (training)", ""},
    {kLerpNotSlerp, "", "the merge interpolates linearly, leaving the sphere", "classifier (training)", ""},
    {kScoreIgnoresActivations, "", "the pruning mask ignores the activation norms (magnitude pruning)",
     "classifier (training)", ""},
    {kHyperparameterIgnored, "param", "the output matches the parameter's default: the kernel does not read it",
     "classifier (training)", ""},
    {kBytesDropped, "bytes", "a tokenizer round trip loses bytes", "classifier (training)", ""},
    {kBytesChanged, "rows", "a tokenizer round trip changes bytes", "classifier (training)", ""},
    // Families: the paper's names for what kc reports under finer names.
    {"FTZ", "", "flush to zero", "", "FTZ_OBSERVED"},
    {"DENORMAL_POLICY", "", "subnormal handling differs from the declaration", "", "FTZ_OBSERVED IEEE_OBSERVED"},
    {"NAN_POLICY", "", "NaN/Inf handling differs from the declaration", "",
     "NAN_SWALLOWED NAN_INTRODUCED INF_SIGN MISSING_RAISE UNEXPECTED_RAISE"},
    {"TYPE_COERCION", "", "data or accumulation silently in a narrower type", "",
     "PRECISION_FINGERPRINT ACCUMULATOR_PRECISION PRODUCT_PRECISION WIRE_PRECISION SATURATION"},
    {"ORDER_DEPENDENT", "", "the result depends on the reduction order", "",
     "SCHEDULE_OUTLIER CONFIG_DEPENDENT"},
    {"LOSS_SCALE", "", "the trained result depends on the loss scale", "", "SCALE_DEPENDENT OVERFLOW_TO_INF"},
};

bool member_of(std::string_view members, std::string_view name) {
  std::size_t start = 0;
  while (start < members.size()) {
    std::size_t end = members.find(' ', start);
    if (end == std::string_view::npos) end = members.size();
    if (members.substr(start, end - start) == name) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::span<const SignatureInfo> signature_table() { return kSignatures; }

const SignatureInfo* find_signature(std::string_view name) {
  for (const auto& s : kSignatures)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> signature_names() {
  std::vector<std::string> out;
  for (const auto& s : kSignatures) out.emplace_back(s.name);
  return out;
}

bool signature_matches(std::string_view named, std::string_view observed) {
  if (named == observed) return true;
  const SignatureInfo* s = find_signature(named);
  return s && !s->members.empty() && member_of(s->members, observed);
}

}  // namespace kc
