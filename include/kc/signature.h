// kc — the one table of violation signatures: the names kc's classifiers,
// judges, integrity checks and worker attach to a verdict, and the only names a
// contract's `violation ... signature` clause may use. Producers build their
// signatures from the constants below; the language, `kc list signatures` and
// docs/language.md read the table.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kc {

namespace sig {
// Values (engine/classify.cpp, engine/policy.cpp).
inline constexpr char kSaturation[] = "SATURATION";
inline constexpr char kOverflowToInf[] = "OVERFLOW_TO_INF";
inline constexpr char kUnderflowToZero[] = "UNDERFLOW_TO_ZERO";
inline constexpr char kUnderflowFloor[] = "UNDERFLOW_FLOOR";
inline constexpr char kCancellationCollapse[] = "CANCELLATION_COLLAPSE";
inline constexpr char kConstantOutput[] = "CONSTANT_OUTPUT";
inline constexpr char kOutputNotWritten[] = "OUTPUT_NOT_WRITTEN";
inline constexpr char kNanIntroduced[] = "NAN_INTRODUCED";
inline constexpr char kNanSwallowed[] = "NAN_SWALLOWED";
inline constexpr char kInfSign[] = "INF_SIGN";
inline constexpr char kZeroSign[] = "ZERO_SIGN";
inline constexpr char kFtzObserved[] = "FTZ_OBSERVED";
inline constexpr char kSpecialValue[] = "SPECIAL_VALUE";
inline constexpr char kIeeeObserved[] = "IEEE_OBSERVED";
// Precision fingerprints.
inline constexpr char kPrecisionFingerprint[] = "PRECISION_FINGERPRINT";
inline constexpr char kAccumulatorPrecision[] = "ACCUMULATOR_PRECISION";
inline constexpr char kAccumulatorRounding[] = "ACCUMULATOR_ROUNDING";
inline constexpr char kProductPrecision[] = "PRODUCT_PRECISION";
inline constexpr char kWirePrecision[] = "WIRE_PRECISION";
inline constexpr char kFusionDivergence[] = "FUSION_DIVERGENCE";
// Over configs.
inline constexpr char kTileRemainder[] = "TILE_REMAINDER";
inline constexpr char kHeldOutShape[] = "HELD_OUT_SHAPE";
inline constexpr char kScheduleOutlier[] = "SCHEDULE_OUTLIER";
inline constexpr char kRankCountDependent[] = "RANK_COUNT_DEPENDENT";
inline constexpr char kScaleDependent[] = "SCALE_DEPENDENT";
inline constexpr char kConfigDependent[] = "CONFIG_DEPENDENT";
// Judges.
inline constexpr char kNondeterministic[] = "NONDETERMINISTIC";
inline constexpr char kPropertyViolated[] = "PROPERTY_VIOLATED";
inline constexpr char kMissingRaise[] = "MISSING_RAISE";
inline constexpr char kUnexpectedRaise[] = "UNEXPECTED_RAISE";
inline constexpr char kOobUndeclared[] = "OOB_UNDECLARED";
inline constexpr char kOobPolicy[] = "OOB_POLICY";
inline constexpr char kToleranceExceeded[] = "TOLERANCE_EXCEEDED";
inline constexpr char kErrorBoundExceeded[] = "ERROR_BOUND_EXCEEDED";
// Capability and path judges (engine/capability.cpp).
inline constexpr char kCapabilityViolation[] = "CAPABILITY_VIOLATION";
inline constexpr char kSilentFallback[] = "SILENT_FALLBACK";
// Integrity (engine/integrity.cpp) and the worker (isolate/).
inline constexpr char kInputMutated[] = "INPUT_MUTATED";
inline constexpr char kStaleOutput[] = "STALE_OUTPUT";
inline constexpr char kTimingImplausible[] = "TIMING_IMPLAUSIBLE";
inline constexpr char kGuardOverwritten[] = "GUARD_OVERWRITTEN";
inline constexpr char kGuardRead[] = "GUARD_READ";
inline constexpr char kLateWrite[] = "LATE_WRITE";
inline constexpr char kCrash[] = "CRASH";
inline constexpr char kTimeout[] = "TIMEOUT";
inline constexpr char kMemoryLimit[] = "MEMORY_LIMIT";
inline constexpr char kWorkerFailed[] = "WORKER_FAILED";
inline constexpr char kSanitizer[] = "SANITIZER";
inline constexpr char kMemcheck[] = "MEMCHECK";
// Training ops (their own classifiers, src/ops/<op>/, through ops/semantic_classify.cpp).
inline constexpr char kGradientWithoutSoftmax[] = "GRADIENT_WITHOUT_SOFTMAX";
inline constexpr char kMissingT2Scaling[] = "MISSING_T2_SCALING";
inline constexpr char kKlReversed[] = "KL_REVERSED";
inline constexpr char kCoupledWeightDecay[] = "COUPLED_WEIGHT_DECAY";
inline constexpr char kNoBiasCorrection[] = "NO_BIAS_CORRECTION";
inline constexpr char kAccumulationNotAveraged[] = "ACCUMULATION_NOT_AVERAGED";
inline constexpr char kLerpNotSlerp[] = "LERP_NOT_SLERP";
inline constexpr char kScoreIgnoresActivations[] = "SCORE_IGNORES_ACTIVATIONS";
inline constexpr char kHyperparameterIgnored[] = "HYPERPARAMETER_IGNORED";
inline constexpr char kBytesDropped[] = "BYTES_DROPPED";
inline constexpr char kBytesChanged[] = "BYTES_CHANGED";
}  // namespace sig

/// One signature kc can attach to a verdict, or (members non-empty) a family
/// name from the paper's listings that stands for the signatures kc observes
/// for it: naming the family in a contract matches any of its members.
struct SignatureInfo {
  std::string_view name;     ///< SATURATION
  std::string_view args;     ///< what the arguments are, e.g. "cap" (empty: none)
  std::string_view meaning;  ///< one line: the pattern behind it
  std::string_view source;   ///< which part of kc produces it (empty for a family)
  std::string_view members;  ///< a family: its members, space-separated; else empty
};

/// Every signature kc produces, then the families, in a stable order.
std::span<const SignatureInfo> signature_table();
/// The entry for `name` (exact spelling), or nullptr.
const SignatureInfo* find_signature(std::string_view name);
/// Every name of the table (signatures and families), for suggestions.
std::vector<std::string> signature_names();
/// True when a contract naming `named` is answered by an observed signature
/// `observed`: the same name, or `named` is a family with `observed` a member.
bool signature_matches(std::string_view named, std::string_view observed);

}  // namespace kc
