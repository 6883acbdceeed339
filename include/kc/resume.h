// kc — resuming a run from its trace (--resume; docs/trace.md "Interrupting
// and resuming"). A run that writes a trace also writes TRACE.run.json: the
// options that decide its cases and inputs, and where in the trace it began.
// A resume must use the same options; the cases the trace records since that
// point are read back instead of run again.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kc/engine.h"
#include "kc/status.h"

namespace kc::engine {

/// TRACE.run.json: the run state beside a trace.
std::string run_state_path(const std::string& trace_path);

/// What decides a run's cases and inputs, as (option, value) text: --seed,
/// --samples, --config, --sample, --fast*, --timing, --isolate, the selection
/// (paths, --contract, --impl, --backend, --suite, --plugin).
std::vector<std::pair<std::string, std::string>> run_identity(const CheckRequest& request);

/// The plan's fingerprint (kc/diff.h RecordPlan::fingerprint): the options of
/// run_identity that decide samples and verdicts, without the impl selection
/// and paths, and the planned contracts' ids and content hashes in plan order.
std::string plan_fingerprint(const CheckRequest& request,
                             const std::vector<std::pair<std::string, std::string>>& contracts);
/// The selection's fingerprint: --impl and --backend filters and the planned impl names.
std::string selection_fingerprint(const CheckRequest& request, const std::vector<std::string>& impl_names);

/// Writes the run state of a run that starts appending to a trace holding
/// `records_before` records, the last with hash `hash_before`.
Status write_run_state(const CheckRequest& request, std::size_t records_before, const std::string& hash_before);

struct Resumed {
  std::vector<CaseResult> cases;  ///< recorded by the interrupted run, in trace order
  std::vector<std::string> notes; ///< a truncated line cut off, how many records were read
};

/// For --resume: checks the run state against this request (a different
/// option is an invalid_argument naming it), cuts a truncated last line off
/// the trace, verifies its chain, and reads back the records the run wrote.
Result<Resumed> read_resume(const CheckRequest& request);

}  // namespace kc::engine
