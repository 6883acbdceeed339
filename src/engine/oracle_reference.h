// kc — `reference stable_algorithm NAME` and `reference spec NAME` in the
// engine: the named oracle (kc/oracles.h) that answers a case's samples, and
// the exact elements a spec fixes (docs/judge.md, "Named references").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/case_run.h"
#include "engine/sample_cache.h"

namespace kc::engine {

/// Resolves the contract's stable_algorithm / spec reference for the case's
/// op before anything runs: a name kc does not hold for the op is
/// under_specified (with the nearest name), a spec that needs MPFR in a build
/// without it is not_applicable, an oracle that answers with outputs under a
/// postcondition that compares none is under_specified. Next otherwise (and
/// for every other kind of reference).
Step setup_named_reference(CaseRun& c);

/// The sample's oracle under a named reference that replaces the op's own
/// (shared through the cache under a key of its own); empty otherwise.
std::function<Result<OracleResult>(const Call&)> named_reference(const CaseRun& c, SampleCache* cache,
                                                                 const std::string& inputs_key);

/// The elements of output `o` the reference marks exact (OracleResult::exact):
/// any difference there (a zero's sign too under `ulp E signed`) makes the
/// ratio infinite, and is named SPECIAL_VALUE(k) with a note on the first.
void judge_exact_elements(CaseRun& c, const Sample& s, std::size_t o, const std::vector<double>& got,
                          const std::vector<std::uint8_t>& unwritten, std::vector<double>* ratios);

/// At the end of the case: the note saying which named oracle answered, and
/// the evidence's method; the suffix for the verdict reason
/// (" [oracle: stable_algorithm kahan_sum]"), empty when none answered.
std::string close_named_reference(CaseRun& c);

}  // namespace kc::engine
