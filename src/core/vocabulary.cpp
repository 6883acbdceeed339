// kc — the tables of words a contract may use (see kc/vocabulary.h).
#include "kc/vocabulary.h"

#include "kc/declaration.h"
#include "kc/dtype.h"

namespace kc {
namespace {

// The probes ops/op.cpp (apply_generic_probe) and the indexing ops apply.
constexpr WordInfo kProbes[] = {
    {"nan", "", "quiet NaNs at random positions of the targeted inputs (at density d)", "every op with float inputs"},
    {"inf", "", "+Inf at random positions", "every op with float inputs"},
    {"neg_inf", "", "-Inf at random positions", "every op with float inputs"},
    {"nonfinite", "", "NaN, +Inf and -Inf in turn at random positions, at least one of each",
     "every op with float inputs"},
    {"subnormal", "(v)", "values +-v*[1, 2) (default v = min_normal/16 of the tensor's format: subnormal in it)",
     "every op with float inputs"},
    {"zero", "", "every element of every target is +0", "every op with float inputs"},
    {"saturation", "(v)",
     "positive terms whose accumulation reaches ~4v (default v = 65504, the FP16 maximum): a narrow accumulator "
     "saturates or overflows",
     "every op with float inputs; matmul, dot and nrm2 scale it to their accumulation length"},
    {"mantissa", "(bits)",
     "values 1 + j 2^-bits (odd j <= 7, default bits = 13): exact in FP32, changed by any narrower format",
     "every op with float inputs"},
    {"edge_values", "",
     "every element from the function's edge table: +-0, +-inf, NaN, signed subnormals and format extremes, then "
     "the function's hard ranges (exp: gradual underflow and the binade below overflow; log: subnormal inputs, x "
     "near 1; tanh and erf: tiny |x| and saturation)",
     "exp, log, tanh, erf (other elementwise ops: the special values and subnormals)"},
    {"finite_edge_values", "",
     "edge_values without the inputs outside f's domain: no NaN or infinity, log only x > 0, exp only x <= "
     "ln(max) + 0.01 (what a library documenting a valid range instead of special values covers)",
     "exp, log, tanh, erf"},
    {"values", "(T, v, ..., U, w, ...)",
     "the named input tensors hold exactly these values, row-major, repeated when the list is shorter (nan, inf, "
     "-inf allowed): pinned inputs such as a ladder counterexample (kc ladder --pin); one sample",
     "every op with float inputs"},
    {"offset", "(x0, ...)", "x0 added to every element (row r gets x0 number r mod k): large mean, small spread",
     "every op with float inputs"},
    {"overflow_range", "(f)",
     "|x_i| = u f max / sqrt(n), u in [0.5, 1] (default f = 0.5): every square overflows the format, the norm does "
     "not. Row ops (src/ops/range_probe.cpp): norm2, rmsnorm, layernorm the same per row (layernorm's beta set to "
     "0); softmax, log_softmax, log_sum_exp |x| = u f max; variance c + d with c^2 > max, |d| <= f sqrt(max); "
     "mean u f max of one sign (the sum overflows, the mean does not)",
     "nrm2, norm2, rmsnorm, layernorm, softmax, log_softmax, log_sum_exp, variance, mean"},
    {"underflow_range", "",
     "|x_i| near 2^(ilogb(smallest subnormal) / 2 - 2): normal values whose squares round to 0 in the format, "
     "a normal norm (per row for the row ops; layernorm's beta set to 0; run rmsnorm and layernorm at eps = 0, "
     "where the exact output is x / rms(x))",
     "nrm2, norm2, rmsnorm, layernorm"},
    {"oob", "(i, ...)", "index arrays mixing in-range and out-of-range values (-1, -bound, bound, bound + 10)",
     "indexing ops (gather, embedding, index_select, scatter_add)"},
    {"accumulator_bits", "",
     "row r of op(A) is 1, then K - 2 copies of 2^-(r+1), then -1; op(B) is all ones: the exact row sum (K - 2) "
     "2^-(r+1) survives a sequential accumulator of p significant bits for r + 1 < p and is 0 beyond, so the rows "
     "read off how many bits the impl's accumulator keeps (named against the declared one on a failure)",
     "matmul (K >= 3)"},
    {"arithmetic", "",
     "one measurement per row of op(A), op(B) all ones but column 1 (1 + 2^-h): whether the inputs are rounded "
     "(1 + 2^-j, -1), the running sum's width (1, 2^-j, -1), whether products keep their low bits ((1 + 2^-j)(1 + "
     "2^-h) - (1 + 2^-h)), the accumulator's rounding at its width (just above, just below and at a midpoint, both "
     "signs), whether a small term survives a cancelled large pair (1, -1, 2^-j: normalized adds vs a block aligned "
     "to its largest term), subnormal results and inputs, and a drift row that truncation pushes past the "
     "round-to-nearest bound; every row's terms and exact result are values of the declared formats, and the "
     "reading is a note on every case (named against the declaration on a failure)",
     "matmul (K >= 2; product rows need N >= 2, the rows beyond M are left out)"},
};

// What `compute STAT` may name: the engine decides on max, p99 or mean of the
// per-element ratios, or on the fraction of failing samples per config
// (engine/run_case.cpp, decide).
constexpr WordInfo kAggregates[] = {
    {"max", "", "the largest value over every element, sample and config", ""},
    {"p99", "", "the 99th percentile of the per-element values", ""},
    {"mean", "", "the mean of the per-element values", ""},
    {"failing_fraction", "",
     "per config, the fraction of its samples with at least one element beyond the tolerance (METRIC > 1); `pass "
     "if <= p` (p in [0, 1]) allows at most that fraction in every config. Only accuracy misses are counted: a "
     "non-finite or unwritten result, a raise or an integrity failure in any sample is a violation. Needs `sample "
     "N random inputs per config` and a post that compares outputs (elementwise_close or close) with an oracle",
     ""},
};

constexpr WordInfo kMetrics[] = {
    {"ratio", "", "each element's error divided by what the tolerance allows it (pass if <= 1: within tolerance)",
     "any tolerance"},
    {"bound_ratio", "", "|error| / (factor * magnitude) under a componentwise bound (pass iff max <= 1)", "bound"},
    {"rel_error", "", "relative error, judged as a ratio to the relative tolerance", "relative, elementwise, per_precision"},
    {"abs_error", "", "absolute error, judged as a ratio to the absolute tolerance", "absolute, elementwise, per_precision"},
    {"ulp", "", "distance in units in the last place of the output format, judged as a ratio to the ulp tolerance",
     "ulp, per_precision"},
    {"mismatches", "", "elements that differ from the exact reference (tolerance none)", "none"},
    {"mismatched_runs", "", "repeated invocations whose bits differ from the first",
     "post bitwise_identical or declared_policy determinism"},
    {"policy_mismatches", "", "elements whose behaviour differs from the declared policy", "post declared_policy"},
};

constexpr WordInfo kObserve[] = {
    {"propagation", "",
     "how injected NaN/Inf reach the output: judged against the declared nan policy under post declared_policy nan, "
     "else against the reference element by element",
     "post declared_policy nan or elementwise_close"},
    {"policy", "", "the behaviour the probe reveals, judged against the declared policy", "post declared_policy"},
    {"policy_mismatches", "", "elements whose behaviour differs from the declared policy", "post declared_policy"},
};

constexpr WordInfo kClasses[] = {
    {"precision", "", "C-PRC: accumulators, cancellation, denormals, mixed-precision scaling", ""},
    {"ordering", "", "C-ORD: reduction order, determinism, communication overlap", ""},
    {"compiler", "", "C-CMP: fusion, schedules, shape polymorphism", ""},
    {"exceptional", "", "C-EXC: NaN/Inf propagation, out-of-bounds indices", ""},
};

constexpr WordInfo kRetest[] = {
    {"always", "", "runs for every update of the library under test", ""},
    {"release_notes", " {SUBSYSTEM, ...}",
     "runs when the update's release notes name one of the subsystems (a word or phrase; case, '_', '-' and "
     "spaces do not matter), or when no notes are given",
     ""},
    {"major_version", "", "runs when the major version changes (the leading components up to the first non-zero "
                          "one: 0.3.21 -> 0.3, 2.6.3 -> 2)",
     ""},
};

constexpr WordInfo kOracles[] = {
    {"higher_precision", "P [with key = value, ...]",
     "the op's own oracle in FP64 with the op's oracle options; for P narrower than FP64 each output rounded to P (P wider than the config's precision)", ""},
    {"alternate_stack", "IMPL", "another impl, run in its own worker on the same inputs, is the reference", ""},
    {"algebraic", "FAMILY.PROPERTY", "a property the outputs must satisfy (`kc list properties`); a name without a "
                                     "dot is a label for what the postcondition checks",
     ""},
    {"stable_algorithm", "NAME", "a named stable algorithm for the op, evaluated in FP64 (the named oracles below)",
     ""},
    {"spec", "NAME", "what a named document defines for the op (IEEE754-2019: correctly rounded, special values exact)",
     ""},
};

constexpr WordInfo kDeclarationKeys[] = {
    // The values of the first five come from their enum tables (kc/declaration.h).
    {"accumulator", "", "the precision partial sums are kept in", "precision"},
    {"determinism", "", "what repeated invocations on identical inputs promise", "enum"},
    {"nan", "", "what NaN/Inf inputs do", "enum"},
    {"denormal", "", "how subnormal inputs and results are handled", "enum"},
    {"oob", "", "what an out-of-range index does", "enum"},
    {"shape_class", "",
     "the shapes the impl supports: any, or conditions joined by `and`: multiple_of(k[, DIM, ...]), "
     "at_most(n[, DIM, ...]), at_least(n[, DIM, ...]) on the named config sizes (default: every dimension of every "
     "tensor of the call); judged by declared_policy unsupported (kc/capability.h)",
     ""},
    {"layouts", "",
     "the tensor layouts the impl supports: CONTIGUOUS (dense row-major strides only) or STRIDED (any positive "
     "strides, padded leading dimensions included); judged by declared_policy unsupported",
     "CONTIGUOUS|STRIDED"},
    {"alignment", "",
     "the base-pointer alignment the impl supports: any (every element-aligned pointer) or the bytes every tensor's "
     "first element must be aligned to (a power of two up to 64); probed with misalign_<tensor> placements and "
     "judged by declared_policy unsupported (kc/capability.h)",
     ""},
    {"workspace", "",
     "the bytes of workspace the impl needs: a constant or a product of integers and config sizes (4 * M * N); "
     "probed with workspace_bytes (a call carrying a guarded workspace tensor of that size) and judged by "
     "declared_policy unsupported (kc/capability.h)",
     ""},
    {"device_capability", "",
     "the CPU features the impl's kernels execute: any, or names of kc's CPU feature table (GCC's spelling: sse4.2, "
     "fma, avx2, avx512f, avx512bf16, amx-tile) joined by `and`; a CPU without one is outside the capability, and "
     "under declared_policy unsupported a kernel killed by SIGILL is judged against it. A GPU kernel names the "
     "CUDA architecture it needs, as nvcc does: sm_80 (compute capability 8.0 or newer) or sm_90a (9.0 exactly); "
     "a device its backend reports below it is outside (kc/capability.h)",
     ""},
    {"unsupported", "",
     "what the impl does with an input outside its declared capability (shape_class, layouts, alignment, "
     "workspace, device_capability): RAISE (reports an error), FALLBACK (runs its declared fallback, which must "
     "compute the op "
     "correctly) or UNDEFINED (no promise: the caller must not pass one)",
     "RAISE|FALLBACK|UNDEFINED"},
    {"fallback", "",
     "the implementation path the impl runs outside its capability or when its library cannot serve the declared "
     "one: path patterns ('*' matches any text, '|' separates alternatives), as the library names its paths",
     ""},
    {"path", "",
     "the implementation path the impl declares it runs on inputs inside its capability, as its library reports it "
     "(oneDNN impl_info_str: brg:avx512_core_bf16; OpenBLAS openblas_get_corename: Haswell): path patterns ('*' "
     "matches any text, '|' separates alternatives); judged by declared_policy path",
     ""},
    {"path_precision", "",
     "the input precision the declared path computes a matmul in (FP32: the call's own; BF16, TF32, FP16: inputs "
     "rounded to that format): where the impl reports no path, declared_policy path infers it from the "
     "arithmetic probe's reading of the outputs",
     "FP32|TF32|BF16|FP16"},
    {"accuracy", "",
     "UNDOCUMENTED: the impl's library states no accuracy for the op (results beyond the bound are "
     "measured, not judged)",
     "UNDOCUMENTED"},
    {"ulp_bound", "", "the documented ulp accuracy of an elementwise function (a number, or UNDOCUMENTED)", ""},
    {"ulp_domain", "",
     "the inputs a documented ulp_bound covers: ALL (every input, special values as C99 Annex F states them) or "
     "FINITE (the finite inputs of a documented valid range)",
     "ALL|FINITE"},
    {"alpha_zero", "", "GEMM at alpha = 0: A and B are not read (reference BLAS) or the formula is computed",
     "AB_NOT_READ|FORMULA"},
    {"beta_zero", "", "GEMM (gemv) at beta = 0: C (y) is not read (reference BLAS) or the formula is computed",
     "C_NOT_READ|FORMULA"},
    {"scal_alpha_zero", "",
     "scal at alpha = 0: the IEEE product (0 * NaN = NaN, reference BLAS 3.11) or zeros stored without reading x",
     "MULTIPLY|ZERO_FILL"},
    {"iamax_nan", "",
     "which index iamax returns when x holds a NaN: reference isamax's |x_i| > max scan (a NaN at x_0 wins, a "
     "later one never), the first NaN, or unspecified",
     "GREATER_THAN|FIRST_NAN|UNSPECIFIED"},
    {"nrm2_range", "",
     "SAFE: nrm2 returns ||x|| without overflow or underflow wherever it is representable, +Inf for an infinite "
     "element (reference snrm2.f90 3.10+)",
     "SAFE"},
    {"increments", "",
     "BLAS: the level-1 impl passes the signed increments incx/incy to a Fortran BLAS interface, whose INCX < 0 "
     "walks the storage from its far end and INCX = 0 reads x(1) every time; an impl without it runs only "
     "positive increments (the tensor's stride)",
     "BLAS"},
    {"nonpositive_inc", "",
     "asum and scal at INCX <= 0, where only the reference's code decides: QUICK_RETURN (reference dasum.f and "
     "dscal.f 3.11 return 0 and leave x unchanged) or WALK (the elements INCX addresses, as dot walks them: from "
     "the far end for INCX < 0, x(1) n times for INCX = 0); iamax returns 0 (QUICK_RETURN) in every library here",
     "QUICK_RETURN|WALK"},
    {"reduction_range", "",
     "the row reductions of a norm, softmax or statistic at extreme magnitudes: SAFE (no intermediate overflows or "
     "underflows where the result is representable: scaled or wider sums), UNSCALED (the code forms squares and "
     "sums in the data format: rows near the overflow or underflow threshold lose the result), UNSPECIFIED (the "
     "library states nothing); only SAFE is judged (contracts/range)",
     "SAFE|UNSCALED|UNSPECIFIED"},
    {"reentrant", "", "false: the impl must not run concurrently with itself (the determinism sweep skips concurrency)",
     "true|false"},
};

// What `declared_policy KEY in {...}` judges, one judge each (engine/policy.cpp,
// engine/capability.cpp). `detail`: the values `in {...}` may list, when they
// are behaviour classes of their own rather than the declaration key's values.
constexpr WordInfo kPolicies[] = {
    {"nan", "", "how injected NaN/Inf reach the outputs, against the declared nan policy", ""},
    {"denormal", "", "how subnormal inputs and results are handled, against the declared denormal policy", ""},
    {"oob", "", "what out-of-range indices do, against the declared oob policy", ""},
    {"determinism", "", "repeated invocations on identical inputs, against the declared determinism class", ""},
    {"accumulator", "",
     "accepted by the language, but no judge reads it: a contract using it is judged under_specified (the "
     "accumulator_bits and arithmetic probes check a declared accumulator)",
     ""},
    {"unsupported", "",
     "inside the declared capability (shape_class, layouts, alignment, workspace, device_capability) the outputs "
     "are within the tolerance; outside it the impl raises (unsupported = RAISE) or its declared fallback computes "
     "within the tolerance (FALLBACK); a wrong result returned quietly is CAPABILITY_VIOLATION, a path other than "
     "the declared fallback SILENT_FALLBACK, and a kernel killed by SIGILL where the CPU has every declared "
     "feature (or where RAISE or FALLBACK was declared) CAPABILITY_VIOLATION(device_capability)",
     ""},
    {"path", "",
     "the implementation path the impl reports for each call (kc/capability.h) matches its declared path "
     "(DECLARED) or, where the contract lists it, its declared fallback (FALLBACK); any other path is "
     "SILENT_FALLBACK(selected path) with the impl's reason. Where the impl reports none, a matmul's path is "
     "inferred from the arithmetic probe's reading against its declared path_precision",
     "DECLARED|FALLBACK"},
};

}  // namespace

std::span<const WordInfo> policy_table() { return kPolicies; }
std::span<const WordInfo> probe_table() { return kProbes; }
std::span<const WordInfo> aggregate_table() { return kAggregates; }
std::span<const WordInfo> metric_table() { return kMetrics; }
std::span<const WordInfo> observe_table() { return kObserve; }
std::span<const WordInfo> contract_class_table() { return kClasses; }
std::span<const WordInfo> oracle_table() { return kOracles; }
std::span<const WordInfo> retest_table() { return kRetest; }
std::span<const WordInfo> declaration_key_table() { return kDeclarationKeys; }

std::vector<std::string> word_names(std::span<const WordInfo> table) {
  std::vector<std::string> out;
  for (const auto& w : table) out.emplace_back(w.name);
  return out;
}

const WordInfo* find_word(std::span<const WordInfo> table, std::string_view name) {
  for (const auto& w : table)
    if (w.name == name) return &w;
  return nullptr;
}

std::vector<std::string> declaration_values(const WordInfo& key) {
  std::vector<std::string> out;
  auto names = [&out](auto table) {
    for (const auto& e : table) out.emplace_back(e.name);
    return out;
  };
  if (key.name == "accumulator") {
    for (const auto& t : all_dtypes()) out.emplace_back(t.name);
    return out;
  }
  if (key.name == "determinism") return names(determinism_table());
  if (key.name == "nan") return names(nan_policy_table());
  if (key.name == "denormal") return names(denormal_policy_table());
  if (key.name == "oob") return names(oob_policy_table());
  std::string_view d = key.detail;
  std::size_t start = 0;
  while (start < d.size()) {
    std::size_t end = d.find('|', start);
    if (end == std::string_view::npos) end = d.size();
    out.emplace_back(d.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace kc
