// kc — integrity checks around a kernel's call that no contract needs to name
// (docs/judge.md): untouched inputs, outputs the kernel really wrote, outputs
// that follow their inputs, times a machine can reach.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/case_run.h"
#include "engine/poison.h"
#include "kc/metrics.h"
#include "kc/signature.h"

namespace kc::engine {

Step Step::worker_failed(CaseRun& c, ConfigRun& cr, const isolate::Outcome& o, const Sample& s, std::uint64_t in_hash) {
  const std::int64_t sample = s.index;
  const std::string& config = cr.ce.config;
  if (const std::string why = device_capability_crash(c, o); !why.empty()) {
    // A finding about the declaration, not a harness failure: the config
    // fails, the next sample gets a fresh worker.
    c.ev.any_run = true;     // the kernel ran: what it did is judged, not "not applicable"
    c.ev.count(cr.ce, 1);    // one call judged, as the policy judge counts a raise
    cr.ratios.push_back(1);  // one policy mismatch
    c.ev.fail_with(cr.ce, {sig::kCapabilityViolation, {"device_capability"}}, why);
    if (c.ev.worst_config.empty()) c.ev.point_at(config, sample, s.seed, in_hash);
    return Step::next();
  }
  CaseResult& res = c.ev.result();
  res.signatures = {*o.failure};
  res.input_hash = hex64(in_hash);
  res.repro = repro_command(c.contract, c.contract_file, c.decl.name, c.request, config, sample);
  // What the kernel printed before it died (an assertion, a traceback) is
  // often the only account of why.
  for (const auto& n : c.worker.evidence_notes()) c.ev.note(n);
  return end_case(Verdict::kError, o.failure->to_string() + ": " + o.status.message());
}

void check_inputs_untouched(CaseRun& c, ConfigRun& cr, const Sample& s) {
  if (inputs_equal(s.call, s.inputs)) return;
  c.ev.fail_with(cr.ce, {sig::kInputMutated, {}}, "the impl modified an input tensor it does not own");
}

Step confirm_unwritten(CaseRun& c, ConfigRun& cr, Sample& s) {
  if (!s.captured) return Step::next();
  std::vector<std::uint8_t>& unwritten = c.ev.first_failure->unwritten;
  if (std::find(unwritten.begin(), unwritten.end(), 1) == unwritten.end()) return Step::next();
  // Poison bits after the call mean "never written" or "computed from the
  // poisoned buffer" (0 * NaN keeps the NaN's bits: a GEMM that reads C at
  // beta = 0). The same call with a finite sentinel in the outputs tells them
  // apart: only an element that still holds the sentinel was never written.
  Call again = s.inputs;
  poison_outputs(c.op, again, Fill::kSentinel);
  const isolate::Outcome o = c.worker.run(again);
  if (o.failure) return Step::worker_failed(c, cr, o, s, s.in_hash());
  if (!o.status.ok()) return Step::next();
  const std::vector<std::uint8_t> still = fill_mask(again.t(c.ev.first_failure->output), Fill::kSentinel);
  std::size_t propagated = 0;
  for (std::size_t i = 0; i < unwritten.size() && i < still.size(); ++i) {
    propagated += unwritten[i] && !still[i];
    unwritten[i] &= still[i];
  }
  if (propagated > 0)
    c.ev.note(std::to_string(propagated) + " elements of '" + c.ev.first_failure->output +
              "' came back as the NaN kc pre-filled it with, and as other values when it was pre-filled "
              "with a finite number: the kernel read the output buffer before writing it");
  return Step::next();
}

namespace {

/// Whether fresh inputs move the reference out of the band the old outputs
/// satisfy: the rounded reference changes and the old output is outside the
/// contract's per-element tolerance of the new reference.
bool reference_moves(const CaseRun& c, const Sample& s, const Call& fresh, const OracleResult& fresh_oracle,
                     const std::vector<std::vector<double>>& before) {
  if (fresh_oracle.outputs.size() != s.oracle->outputs.size()) return false;
  for (std::size_t o = 0; o < s.oracle->outputs.size(); ++o) {
    const std::string& name = s.oracle->output_names[o];
    const DType dt = s.call.t(name).dtype();
    const auto& a = s.oracle->outputs[o];
    const auto& b = fresh_oracle.outputs[o];
    auto band = allowed_errors(c.contract.tolerance, c.op, fresh, name, b);
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
      bool moved = !bitwise_equal(round_to(a[i], dt), round_to(b[i], dt), dt);
      if (moved && band.ok() && i < band->size() && i < before[o].size())
        moved = !(std::fabs(before[o][i] - b[i]) <= (*band)[i]);
      if (moved) return true;
    }
  }
  return false;
}

}  // namespace

Step check_stale_output(CaseRun& c, ConfigRun& cr, Sample& s, std::int64_t failures_before) {
  // Once per case, on a sample that passed: re-fill the inputs at the same
  // addresses with new values. Outputs that stay bit-identical while the
  // reference moves were cached (by address) or never recomputed. An honest
  // kernel may return the same bits for other inputs: gelu_tanh(-32) and
  // gelu_tanh(-11) are both -0 in FP32, within the bound of references -0 and
  // -7e-45. (Skipped under --fast: deciding that the reference moved needs the oracle.)
  if (c.stale_checked || !s.compared || c.plan.invocations != 1 || cr.ce.failures != failures_before ||
      c.plan.probe || !s.oracle || s.oracle->output_names.empty() || s.oracle->outputs.empty())
    return Step::next();
  c.stale_checked = true;
  Call fresh = s.inputs;
  Rng fresh_rng(derive_seed(s.seed, 0x7374616c65ull));  // "stale"
  c.op.fill(fresh, c.plan.fill, fresh_rng);
  auto fresh_oracle = c.op.oracle(fresh, c.oracle_options);
  std::vector<std::vector<double>> before;
  for (const auto& name : s.oracle->output_names) before.push_back(s.call.t(name).to_doubles());
  if (!fresh_oracle.ok() || !reference_moves(c, s, fresh, *fresh_oracle, before)) return Step::next();
  Call& call = s.call;
  for (std::size_t k = 0; k < call.tensors.size(); ++k)  // same buffers, new values
    if (call.tensors[k].nbytes() == fresh.tensors[k].nbytes() && call.tensors[k].nbytes() > 0)
      std::memcpy(call.tensors[k].raw(), fresh.tensors[k].raw(), call.tensors[k].nbytes());
  poison_outputs(c.op, call);
  const isolate::Outcome again = c.worker.run(call);
  if (again.failure) return Step::worker_failed(c, cr, again, s, inputs_hash(fresh));
  bool same = again.status.ok();
  for (std::size_t o = 0; o < before.size() && same; ++o) {
    const Tensor& out = call.t(s.oracle->output_names[o]);
    const std::vector<double> got = out.to_doubles();
    for (std::size_t i = 0; i < got.size() && i < before[o].size() && same; ++i)
      same = bitwise_equal(got[i], before[o][i], out.dtype());
  }
  if (!same) return Step::next();
  c.ev.fail_with(cr.ce, {sig::kStaleOutput, {}},
                 "outputs stayed bit-identical when the inputs, at the same addresses, were re-filled "
                 "with new values that change the reference: a result cached by address, or never recomputed");
  c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
  return Step::next();
}

void check_timing_floor(CaseRun& c, ConfigRun& cr) {
  // Noise (preemption, a busy neighbour, a cold page) only slows a call down
  // and never speeds one up, so the fastest call is the best estimate of the
  // work a call does: one call faster than the physical floor did not do it.
  // (A median would let two preempted calls of three hide a kernel that
  // skips its work on a loaded machine.)
  if (cr.kernel_seconds.empty() || !(cr.floor.seconds > 0)) return;
  const double fastest = *std::min_element(cr.kernel_seconds.begin(), cr.kernel_seconds.end());
  if (fastest >= cr.floor.seconds) return;
  auto mid = cr.kernel_seconds.begin() + static_cast<std::ptrdiff_t>(cr.kernel_seconds.size() / 2);
  std::nth_element(cr.kernel_seconds.begin(), mid, cr.kernel_seconds.end());
  c.ev.fail_with(cr.ce, {sig::kTimingImplausible, {}},
                 "fastest kernel time " + fmt_g4(fastest * 1e6) + " us (median " + fmt_g4(*mid * 1e6) + " us) over " +
                     std::to_string(cr.kernel_seconds.size()) + " call(s), warm cache, is below the physical floor " +
                     fmt_g4(cr.floor.seconds * 1e6) + " us (" + cr.floor.basis + "; " + host_peak().basis + ")");
  if (c.ev.worst_config.empty()) c.ev.worst_config = cr.ce.config;
}

}  // namespace kc::engine
