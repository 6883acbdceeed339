// kc — planning: from a contract and an impl declaration to the configs,
// inputs and judgement rule the engine executes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kc/engine.h"
#include "kc/obligation.h"

namespace kc::engine {

struct Plan {
  const Op* op = nullptr;
  std::vector<Config> configs;
  FillSpec fill;
  std::optional<Probe> probe;
  std::int64_t samples = 1;
  bool policy_judge = false;     ///< declared_policy nan/denormal/oob: judged by engine/policy
  int invocations = 1;           ///< > 1 for determinism contracts
  /// How repeated invocations must agree: BITWISE for `bitwise_identical`,
  /// the impl's declared class for `declared_policy determinism`.
  Determinism agreement = Determinism::kBitwise;
  std::string stat = "max";      ///< aggregate statistic that decides
  double pass_bound = 1;         ///< pass iff stat(metric) <= pass_bound
  std::string metric_name = "ratio";
  /// `compute failing_fraction METRIC; pass if <= p`: p, the fraction of each
  /// config's samples allowed an element beyond the tolerance (each element
  /// is still judged against ratio 1); unset under every other statistic.
  std::optional<double> allowed_fraction;
  /// `reference algebraic family.property`: the property that judges each
  /// sample instead of an oracle comparison (kc/obligation.h).
  const obligation::Property* property = nullptr;
  /// `time latency across SIZE + N`: each config is also timed against the
  /// call past that boundary (kc/latency_jump.h); unset without the step.
  std::optional<LatencyAcross> latency;
};

/// Builds the plan. An impl the contract does not apply to gets *not_applicable
/// set to the reason (and an OK result); a contract that cannot be executed as
/// written is an error Status.
Result<Plan> make_plan(const Contract& contract, const Declaration& decl, const CheckRequest& request,
                       std::string* not_applicable);

/// Seed of one sample: independent of the impl, so every impl sees the same inputs.
std::uint64_t case_seed(std::uint64_t base, const std::string& contract_id, const Config& config,
                        std::int64_t sample);

/// `shape(T) = (M, K)` predicates checked against an allocated call.
Status check_shape_predicates(const Contract& contract, const Call& call);

/// One-line command that re-runs exactly this case.
std::string repro_command(const Contract& contract, const std::string& contract_file,
                          const std::string& impl, const CheckRequest& request,
                          const std::string& config, std::int64_t sample);

/// Parses "K=4096 M=16 dtype=FP32" into a Config (used by --config).
Result<Config> parse_config(const std::string& text);

}  // namespace kc::engine
