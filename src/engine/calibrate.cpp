#include "kc/calibrate.h"

#include "engine/sample_cache.h"
#include "engine/schedule.h"
#include "engine/select.h"
#include "kc/exit_code.h"
#include "kc/isolate.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace kc::engine {

namespace {

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string_view trio_role_name(TrioRole role) {
  switch (role) {
    case TrioRole::kBaseline: return "baseline";
    case TrioRole::kBad: return "bad";
    case TrioRole::kGood: return "good";
  }
  return "?";
}

VisibleTest run_visible_test(const Impl& impl, std::uint64_t seed) {
  VisibleTest vt;
  const Declaration& decl = impl.declaration();
  const Op* op = builtin_ops().find(decl.op);
  if (!op) {
    vt.detail = "op '" + decl.op + "' is not registered";
    return vt;
  }
  Config config;
  config.dtype = decl.dtypes.empty() ? DType::kF32 : decl.dtypes.front();
  for (const auto& p : op->params()) config.params[p.name] = p.default_value;
  OracleOptions options;
  options.oob = decl.oob;
  for (int s = 0; s < kVisibleSamples; ++s) {
    Rng rng(derive_seed(seed, 0x76697369626c65ull + static_cast<std::uint64_t>(s)));
    auto call_or = op->make_call(config);
    if (!call_or.ok()) {
      vt.detail = "default config rejected: " + call_or.status().message();
      return vt;
    }
    Call call = std::move(call_or).value();
    op->fill(call, FillSpec{FillSpec::Kind::kNormal, 0, 1}, rng);
    // The answer stays out of workers other threads fork meanwhile (kc/isolate.h).
    const isolate::OracleScope oracle_scope;
    const isolate::FpEnvScope fp_env;  // the visible test's impl runs in kc's process
    auto oracle = op->oracle(call, options);
    if (!oracle.ok()) {
      vt.detail = "oracle failed: " + oracle.status().message();
      return vt;
    }
    Status st = impl.run(call);
    if (!st.ok()) {
      vt.detail = "kernel failed: " + st.to_string();
      return vt;
    }
    for (std::size_t o = 0; o < oracle->output_names.size(); ++o) {
      const auto got = call.t(oracle->output_names[o]).to_doubles();
      const auto& ref = oracle->outputs[o];
      for (std::size_t i = 0; i < got.size() && i < ref.size(); ++i) {
        const double allowed = kVisibleAtol + kVisibleRtol * std::fabs(ref[i]);
        double excess;
        if (std::isnan(ref[i]) && std::isnan(got[i])) excess = 0;
        else if (!std::isfinite(got[i]) || !std::isfinite(ref[i])) excess = got[i] == ref[i] ? 0 : HUGE_VAL;
        else excess = std::fabs(got[i] - ref[i]) / allowed;
        vt.max_excess = std::max(vt.max_excess, excess);
      }
    }
  }
  vt.pass = vt.max_excess <= 1;
  if (!vt.pass) vt.detail = "allclose failed: max |err| / (atol + rtol|ref|) = " + fmt_g(vt.max_excess);
  return vt;
}

int CalibrationResult::exit_code() const {
  if (any_error(diagnostics)) return exit_value(ExitCode::kUsage);
  // A contract without a trio is unproven: it fails calibration like a wrong state.
  if (!missing.empty()) return exit_value(ExitCode::kViolation);
  for (const auto& r : rows)
    if (!r.state_ok) return exit_value(ExitCode::kViolation);
  if (rows.empty()) return exit_value(ExitCode::kNothingJudged);
  return exit_value(ExitCode::kOk);
}

CalibrationResult run_calibration(const CheckRequest& given, BackendRegistry& registry) {
  // The trio of a contract shares its inputs and oracle answers (sample_cache.h).
  CheckRequest request = given;
  if (!request.sample_cache) request.sample_cache = std::make_shared<SampleCache>();
  if (!request.reference_impls) request.reference_impls = available_impls(registry);
  CalibrationResult result;
  LoadedContracts loaded = load_contracts(request.paths);
  result.diagnostics = loaded.diagnostics;
  const auto infos = registry.infos();
  // Trio members are named by the calibration blocks, not by --impl.
  CheckRequest selection = request;
  selection.impls.clear();
  for (auto& d : check_selection(selection, loaded, registry.impls(), infos)) result.diagnostics.push_back(std::move(d));
  if (any_error(result.diagnostics)) return result;
  auto backend_of = [&](const std::string& name) {
    for (const auto& b : infos)
      if (b.name == name) return b;
    return BackendInfo{name, true, "", "", ""};
  };
  std::map<std::string, const Calibration*> by_contract;
  for (const auto& c : loaded.calibrations) by_contract[c.contract] = &c;

  // Every trio member in order; rows run on several threads (--jobs) where
  // case_schedule allows, and land in result.rows in this order.
  struct Job {
    std::size_t contract;
    std::shared_ptr<const Impl> impl;
  };
  std::vector<Job> jobs;
  // --shard I/N: the selected contracts round robin (a trio stays together).
  std::size_t planned = 0;
  for (std::size_t ci = 0; ci < loaded.contracts.size(); ++ci) {
    const Contract& contract = loaded.contracts[ci];
    if (!selected(request.contracts, contract.id)) continue;
    if (request.shard &&
        static_cast<int>(planned++ % static_cast<std::size_t>(request.shard->count)) != request.shard->index)
      continue;
    auto it = by_contract.find(contract.id);
    if (it == by_contract.end()) {
      result.missing.push_back(contract.id);
      continue;
    }
    const Calibration& cal = *it->second;
    const std::pair<TrioRole, std::string> trio[] = {
        {TrioRole::kBaseline, cal.baseline}, {TrioRole::kBad, cal.bad}, {TrioRole::kGood, cal.good}};
    for (const auto& [role, name] : trio) {
      CalibrationRow row;
      row.contract = contract.id;
      row.role = role;
      row.impl = name;
      auto impl = registry.find_impl(name);
      if (!impl) row.problem = "impl '" + name + "' not found";
      result.rows.push_back(row);
      jobs.push_back({ci, impl});
    }
  }
  run_ordered(
      jobs.size(), effective_jobs(request.jobs),
      [&](std::size_t i) {
        return jobs[i].impl && !case_schedule(loaded.contracts[jobs[i].contract], *jobs[i].impl, request).parallel;
      },
      [&](std::size_t i) {
        const Job& job = jobs[i];
        if (!job.impl) return;
        const Contract& contract = loaded.contracts[job.contract];
        CalibrationRow& row = result.rows[i];
        row.visible = run_visible_test(*job.impl, request.seed);
        row.contract_result = run_case(contract, loaded.files[job.contract], *job.impl,
                                       backend_of(job.impl->declaration().backend), request);
        const Verdict v = row.contract_result.verdict;
        switch (row.role) {
          case TrioRole::kBaseline:
            row.state_ok = !row.visible.pass;
            if (!row.state_ok) row.problem = "baseline passes the visible test";
            break;
          case TrioRole::kBad:
            row.state_ok = row.visible.pass && v == Verdict::kViolation &&
                           (contract.violation.signatures.empty() || row.contract_result.signature_expected);
            if (!row.visible.pass) row.problem = "bad impl fails the visible test: " + row.visible.detail;
            else if (v != Verdict::kViolation) row.problem = "bad impl not caught: " + row.contract_result.reason;
            else if (!row.state_ok) row.problem = "caught, but not with the contract's signature";
            break;
          case TrioRole::kGood:
            row.state_ok = row.visible.pass && v == Verdict::kConforming;
            if (!row.visible.pass) row.problem = "good impl fails the visible test: " + row.visible.detail;
            else if (v != Verdict::kConforming) row.problem = "good impl judged " +
                                                              std::string(verdict_name(v)) + ": " +
                                                              row.contract_result.reason;
            break;
        }
      },
      [](std::size_t) {});
  return result;
}

CalibrationResult run_calibration(const CheckRequest& request) {
  BackendRegistry registry;
  BackendOptions options;
  options.libraries = request.libraries;
  options.plugin_paths = request.plugin_paths;
  if (Status s = register_builtin_backends(registry, options); !s.ok()) {
    CalibrationResult r;
    lang::Diagnostic d;
    d.message = "backend registration failed: " + s.to_string();
    r.diagnostics.push_back(d);
    return r;
  }
  return run_calibration(request, registry);
}

std::string render_calibration(const CalibrationResult& result, bool color) {
  auto paint = [&](const std::string& s, bool ok) {
    if (!color) return s;
    return std::string(ok ? "\033[32m" : "\033[31m") + s + "\033[0m";
  };
  std::ostringstream out;
  for (const auto& d : result.diagnostics) out << d.render() << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %-9s %-30s %-8s %-15s %-30s %s\n", "contract", "role", "impl", "visible",
                "contract", "signature", "state");
  out << line;
  int ok = 0;
  for (const auto& r : result.rows) {
    std::string sig;
    for (const auto& s : r.contract_result.signatures) sig += (sig.empty() ? "" : " ") + s.to_string();
    if (sig.size() > 30) sig = sig.substr(0, 27) + "...";
    std::snprintf(line, sizeof line, "%-12s %-9s %-30s %-8s %-15s %-30s ", r.contract.c_str(),
                  std::string(trio_role_name(r.role)).c_str(), r.impl.c_str(), r.visible.pass ? "pass" : "FAIL",
                  std::string(verdict_name(r.contract_result.verdict)).c_str(), sig.c_str());
    out << line << paint(r.state_ok ? "ok" : "WRONG", r.state_ok) << "\n";
    if (!r.state_ok) out << "    " << r.problem << "\n";
    ok += r.state_ok;
  }
  for (const auto& m : result.missing) out << "  " << paint("NO TRIO", false) << " " << m << ": no calibration block\n";
  out << "\n" << ok << " of " << result.rows.size() << " calibration states right";
  if (!result.missing.empty())
    out << "; " << result.missing.size() << " contract" << (result.missing.size() == 1 ? "" : "s") << " without a trio";
  if (result.rows.empty() && result.missing.empty()) out << "; no contract selected";
  out << (result.exit_code() == 0 ? "" : " — calibration FAILED") << "\n";
  return out.str();
}

}  // namespace kc::engine
