// kc — retest schedules: which contracts a library update must run again.
//
// A contract's optional `retest` line says when (kc/vocabulary.h,
// retest_table): `always`, `release_notes {SUBSYSTEM, ...}` or
// `major_version`. A contract without the line runs on every update.
// `kc retest-plan --from V --to V [--notes FILE]` applies the schedules to
// one update (docs/retest.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kc/model.h"
#include "kc/status.h"

namespace kc {

struct RetestRule {
  std::string kind = "always";          ///< a retest_table() name
  std::vector<std::string> subsystems;  ///< release_notes: what the notes must name
  bool declared = false;                ///< false: the contract has no retest line
};

/// Parses the value of a `retest` line ("release_notes {gemm, threading}").
/// On error: the message, and *at the offset in `text` it refers to.
Result<RetestRule> parse_retest(std::string_view text, std::size_t* at = nullptr);

/// The canonical text of a rule: "always", "release_notes {a, b}" (what a
/// contract stores and prints, so its text reads back the same).
std::string retest_text(const RetestRule& rule);

/// The contract's rule: its `retest` line, or `always` (declared = false).
RetestRule retest_rule(const Contract& c);

/// The major version of a version string: the leading numeric components up
/// to and including the first non-zero one ("0.3.21" -> "0.3", "2.6.3" -> "2",
/// "v1.1" -> "1"). Empty when the string does not start with a number.
std::string major_version(std::string_view version);

/// One contract's entry in a plan.
struct RetestEntry {
  std::string contract;
  RetestRule rule;
  bool run = true;
  std::string why;  ///< the fact that decided it
};

/// What an update from `from` to `to` must run again. `notes` is the text of
/// the release notes; `have_notes` false means none were given, and every
/// release_notes contract runs.
std::vector<RetestEntry> retest_plan(const std::vector<Contract>& contracts, std::string_view from,
                                     std::string_view to, std::string_view notes, bool have_notes);

}  // namespace kc
