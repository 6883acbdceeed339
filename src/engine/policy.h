// kc — judging behaviour against a declared policy (NaN/Inf, denormals, OOB).
//
// A policy contract does not ask "how close"; it asks "which behaviour did the
// kernel show, and is it the one it declared?". Each judge observes the
// behaviour class from the outputs (or the kernel's raise) and compares it
// with the declaration.
#pragma once

#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc::engine {

struct PolicyOutcome {
  bool pass = true;
  std::string observed;              ///< behaviour class seen: IEEE_PROPAGATE, FTZ, CLAMP, ...
  std::int64_t elements = 0;         ///< elements examined
  std::int64_t mismatches = 0;       ///< elements (or calls) inconsistent with the declaration
  std::vector<Signature> signatures;
  std::vector<std::string> notes;
};

struct PolicyInputs {
  const Op* op = nullptr;
  const Declaration* decl = nullptr;
  const Call* inputs = nullptr;       ///< the call as given to the impl (before it ran)
  const Call* outputs = nullptr;      ///< the call after the impl ran
  const OracleResult* oracle = nullptr;  ///< oracle under the declared policy
  OracleOptions options;
  Status status;                      ///< what the impl's run returned
  const Tolerance* tolerance = nullptr;
  /// The contract's `declared_policy P in {...}` set (null: none given).
  const std::vector<std::string>* allowed = nullptr;
  /// The implementation path the kernel reported for the call, and why (kc/capability.h).
  std::string selected_path;
  std::string selected_reason;
};

/// policy: a name of policy_table() (kc/vocabulary.h) other than determinism
/// and accumulator, which other judges own. Others are kInvalidArgument.
Result<PolicyOutcome> judge_policy(const std::string& policy, const PolicyInputs& in);

/// `declared_policy unsupported`: the call against the impl's declared
/// capability and its unsupported policy (engine/capability.cpp).
Result<PolicyOutcome> judge_unsupported(const PolicyInputs& in);
/// `declared_policy path`: the path the kernel reported against its declared
/// path and fallback (engine/capability.cpp).
Result<PolicyOutcome> judge_path(const PolicyInputs& in);

}  // namespace kc::engine
