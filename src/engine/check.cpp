// kc — a check run: load contracts, select impls, run every case, record each
// verdict in the trace as soon as it exists.
#include <algorithm>
#include <filesystem>
#include <map>

#include "engine/sample_cache.h"
#include "engine/schedule.h"
#include "engine/select.h"
#include "kc/engine.h"
#include "kc/interrupt.h"
#include "kc/message.h"
#include "kc/report.h"
#include "kc/resume.h"

namespace kc::engine {

namespace {

/// An error about the trace file (it cannot be resumed or appended to).
lang::Diagnostic trace_error(const std::string& path, const std::string& message) {
  lang::Diagnostic d;
  d.severity = lang::Diagnostic::Severity::kError;
  d.loc.file = path;
  d.message = message;
  return d;
}

/// --resume: the cases the interrupted run recorded, read back (a truncated
/// last line is cut off first); other options than that run's are refused.
/// False when the run cannot go on (the reason is in *result).
bool read_back(const CheckRequest& request, CheckResult* result, std::optional<Resumed>* resumed) {
  auto r = read_resume(request);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kInternal) result->write_errors.push_back(r.status().message());
    else result->diagnostics.push_back(trace_error(request.trace_path, "cannot resume: " + r.status().message()));
    return false;
  }
  *resumed = std::move(r).value();
  for (const auto& n : (*resumed)->notes) {
    say(n);
    result->notes.push_back(n);
  }
  return true;
}

/// Opens request.trace_path for appending. False when the run cannot go on
/// (the reason is in *result).
bool open_trace(const CheckRequest& request, CheckResult* result, std::optional<report::TraceWriter>* trace) {
  auto t = report::TraceWriter::open(request.trace_path);
  if (t.ok()) {
    *trace = std::move(t).value();
    result->trace_path = request.trace_path;
    result->trace_last_hash = (*trace)->last_hash();
    // A new run records where in the trace it begins and what decides its
    // cases (TRACE.run.json), so that --resume can continue it after a kill.
    // (Not for a device such as /dev/full: it holds no records to resume.)
    std::error_code ec;
    if (!request.resume && std::filesystem::is_regular_file(request.trace_path, ec)) {
      auto count = report::verify_trace(request.trace_path);
      Status s = count.ok() ? write_run_state(request, *count, (*trace)->last_hash()) : count.status();
      if (!s.ok()) {
        result->write_errors.push_back(s.message());
        return false;
      }
    }
    return true;
  }
  if (t.status().code() == StatusCode::kInternal) {
    // The file system refused (read-only, full, EIO): kc failed, not the input.
    result->write_errors.push_back(t.status().message());
  } else {
    // A broken chain or a truncated last line: nothing is appended.
    result->diagnostics.push_back(trace_error(request.trace_path, "cannot open trace: " + t.status().message()));
  }
  return false;
}

/// One impl of the run, with its backend's probe result (null: unknown).
struct Entry {
  std::shared_ptr<const Impl> impl;
  const BackendInfo* info;
};

/// The impls the filters select, from every backend, available or not, so
/// unavailable ones show as skipped; records each one's op in result->impl_ops.
std::vector<Entry> select_impls(const std::vector<std::shared_ptr<const Impl>>& impls, const CheckRequest& request,
                                const std::vector<std::string>& suite_impls, CheckResult* result) {
  std::vector<Entry> entries;
  for (const auto& impl : impls) {
    const Declaration& d = impl->declaration();
    if (!selected(request.impls, d.name) || !selected(suite_impls, d.name) || !selected(request.backends, d.backend))
      continue;
    // Impls broken on purpose (Declaration::broken_on_purpose: calibration
    // impls, which calibrate kc, docs/calibration.md; incident replays) are graded
    // only when a filter names them, e.g. --impl 'calib.*' or --impl 'opencl.incident.*'.
    if (request.impls.empty() && !named_by_prefix(suite_impls, d.name) && !d.broken_on_purpose.empty()) continue;
    const BackendInfo* info = nullptr;
    for (const auto& b : result->backends)
      if (b.name == d.backend) info = &b;
    entries.push_back({impl, info});
    result->impl_ops[d.name] = d.op;
  }
  return entries;
}

/// One case of the plan: a contract (its index among the loaded ones) x an impl.
struct Job {
  std::size_t contract;
  const Entry* entry;
};

/// The cases this run holds, in plan order (contracts in load order, impls in
/// registry order), and each one's index in the whole plan.
struct RunPlan {
  std::vector<Job> jobs;
  std::vector<std::size_t> plan_index;
};

/// The plan and its identity (fingerprints, size) in *result, then this
/// shard's part of it (kc/shard.h).
RunPlan plan_cases(const LoadedContracts& loaded, const std::vector<Entry>& entries, const CheckRequest& request,
                   const std::vector<std::string>& suite_contracts, CheckResult* result) {
  RunPlan plan;
  std::vector<std::pair<std::string, std::string>> planned_contracts;
  for (std::size_t ci = 0; ci < loaded.contracts.size(); ++ci) {
    const Contract& c = loaded.contracts[ci];
    if (!selected(request.contracts, c.id) || !selected(suite_contracts, c.id)) continue;
    planned_contracts.emplace_back(c.id, c.content_hash());
    for (const auto& e : entries) plan.jobs.push_back({ci, &e});
  }
  plan.plan_index.resize(plan.jobs.size());
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) plan.plan_index[i] = i;
  std::vector<std::string> impl_names;
  for (const auto& e : entries) impl_names.push_back(e.impl->declaration().name);
  result->plan_fingerprint = plan_fingerprint(request, planned_contracts);
  result->selection_fingerprint = selection_fingerprint(request, impl_names);
  result->plan_total = plan.jobs.size();
  if (!request.shard) return plan;

  result->shard = request.shard;
  std::vector<double> seconds(plan.jobs.size(), -1.0);
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    const auto it = request.shard_durations.find(loaded.contracts[plan.jobs[i].contract].id + "|" +
                                                 plan.jobs[i].entry->impl->declaration().name);
    if (it != request.shard_durations.end()) seconds[i] = it->second;
  }
  const std::vector<int> owner = shard::assign(seconds, request.shard->count);
  RunPlan mine;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i)
    if (owner[i] == request.shard->index) {
      mine.jobs.push_back(plan.jobs[i]);
      mine.plan_index.push_back(i);
    }
  return mine;
}

/// Puts the cases the resumed run recorded in their places of the plan
/// (results[i], from_trace[i] = 1). False, with the diagnostic in *result,
/// when the trace records a case this run would not run the same way.
bool place_resumed(Resumed& resumed, const RunPlan& plan, const LoadedContracts& loaded, const CheckRequest& request,
                   std::vector<CaseResult>& results, std::vector<char>& from_trace, CheckResult* result) {
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i)
    index.emplace(std::make_pair(loaded.contracts[plan.jobs[i].contract].id, plan.jobs[i].entry->impl->declaration().name),
                  i);
  for (CaseResult& c : resumed.cases) {
    std::string problem;
    const auto it = index.find({c.contract_id, c.impl});
    if (it == index.end()) {
      problem = "the trace records " + c.contract_id + " x " + c.impl + ", which this run's selection does not hold";
    } else if (const std::string h = loaded.contracts[plan.jobs[it->second].contract].content_hash();
               h != c.contract_hash) {
      problem = c.contract_id + " changed since the interrupted run recorded it (contract hash " +
                c.contract_hash.substr(0, 12) + "..., now " + h.substr(0, 12) + "...)";
    } else if (c.seed != request.seed) {
      problem = "the trace records " + c.contract_id + " x " + c.impl + " with another seed";
    }
    if (!problem.empty()) {
      result->diagnostics.push_back(trace_error(
          request.trace_path,
          "cannot resume: " + problem + "; its records would mix two runs: start a new run (another --out or --trace)"));
      return false;
    }
    if (from_trace[it->second]) continue;  // a case recorded twice: the first record stands
    from_trace[it->second] = 1;
    c.contract_index = plan.jobs[it->second].contract;
    c.plan_index = plan.plan_index[it->second];
    results[it->second] = std::move(c);
    ++result->resumed;
  }
  return true;
}

}  // namespace

CheckResult run_check(const CheckRequest& given, BackendRegistry& registry) {
  // Every case of the run shares one cache of inputs and oracle answers.
  CheckRequest request = given;
  if (!request.sample_cache) request.sample_cache = std::make_shared<SampleCache>();
  if (!request.reference_impls) request.reference_impls = available_impls(registry);
  CheckResult result;
  result.allow_empty = request.allow_empty;
  LoadedContracts loaded = load_contracts(request.paths);
  result.diagnostics = loaded.diagnostics;
  result.backends = registry.infos();
  auto impls = registry.impls();
  // A selection that matches nothing, or contracts with errors: nothing runs.
  for (auto& d : check_selection(request, loaded, impls, result.backends)) result.diagnostics.push_back(std::move(d));
  const Suite* suite = nullptr;
  if (!request.suite.empty()) {
    suite = resolve_suite(request.suite, loaded, impls, &result.diagnostics);
    if (suite) result.notes.push_back(suite_note(*suite));
  }
  if (any_error(result.diagnostics)) return result;
  const std::vector<std::string> no_filter;
  const std::vector<std::string>& suite_contracts = suite ? suite->contracts : no_filter;
  const std::vector<std::string>& suite_impls = suite ? suite->impls : no_filter;

  std::optional<Resumed> resumed;
  if (request.resume && !read_back(request, &result, &resumed)) return result;
  std::optional<report::TraceWriter> trace;
  if (!request.trace_path.empty() && !open_trace(request, &result, &trace)) return result;

  const std::vector<Entry> entries = select_impls(impls, request, suite_impls, &result);
  static const BackendInfo kUnknown{"?", true, "", "", ""};
  const RunPlan plan = plan_cases(loaded, entries, request, suite_contracts, &result);
  const std::vector<Job>& jobs = plan.jobs;
  const std::size_t total = jobs.size();
  std::vector<CaseResult> results(total);
  result.cases.reserve(total);
  result.planned = total;
  // from_trace[i]: the case was recorded by the run being resumed. not_run[i]:
  // it did not finish before SIGINT/SIGTERM (a case running then had its
  // worker killed: its result is not a verdict), so it is neither recorded nor reported.
  std::vector<char> from_trace(total, 0), not_run(total, 0);
  if (resumed && !place_resumed(*resumed, plan, loaded, request, results, from_trace, &result)) return result;

  std::size_t resumed_so_far = 0;  // cases of the trace recorded so far (progress)
  const int jobs_at_once = budgeted_jobs(effective_jobs(request.jobs), request, &result.notes);
  run_ordered(
      total, jobs_at_once,
      [&](std::size_t i) { return !case_schedule(loaded.contracts[jobs[i].contract], *jobs[i].entry->impl, request).parallel; },
      [&](std::size_t i) {
        if (from_trace[i]) return;
        // After Ctrl-C no case starts, and one that was running when it came
        // is not a verdict (its worker was killed).
        if (interrupted()) {
          not_run[i] = 1;
          return;
        }
        const Job& j = jobs[i];
        results[i] = run_case(loaded.contracts[j.contract], loaded.files[j.contract], *j.entry->impl,
                              j.entry->info ? *j.entry->info : kUnknown, request);
        results[i].contract_index = j.contract;
        results[i].plan_index = plan.plan_index[i];
        if (interrupted()) not_run[i] = 1;
      },
      [&](std::size_t i) {
        if (not_run[i]) return;
        CaseResult& r = results[i];
        // Not-applicable pairs are the bulk of a cross product; they are kept in
        // the result (the matrix shows them) but not in the trace.
        if (trace && r.verdict != Verdict::kNotApplicable && !from_trace[i]) {
          if (Status s = trace->append(r); !s.ok()) {
            // A record that could not be written ends the trace for this run:
            // records after a hole would read as a complete chain.
            result.write_errors.push_back(s.message());
            trace.reset();
          } else {
            result.trace_last_hash = trace->last_hash();
          }
        }
        result.cases.push_back(std::move(r));
        resumed_so_far += from_trace[i] ? 1 : 0;
        if (request.on_progress)
          request.on_progress(CheckProgress{i + 1, total, resumed_so_far, &result.cases.back()});
      });
  result.interrupted = std::any_of(not_run.begin(), not_run.end(), [](char c) { return c != 0; });
  result.reuse = request.sample_cache->stats();
  return result;
}

CheckResult run_check(const CheckRequest& request) {
  BackendRegistry registry;
  BackendOptions options;
  options.plugin_paths = request.plugin_paths;
  options.libraries = request.libraries;
  options.opencl_sources = request.opencl_sources;
  options.only = request.load_backends;
  if (Status s = register_builtin_backends(registry, options); !s.ok()) {
    CheckResult r;
    lang::Diagnostic d;
    d.message = "backend registration failed: " + s.to_string();
    r.diagnostics.push_back(d);
    return r;
  }
  return run_check(request, registry);
}

}  // namespace kc::engine
