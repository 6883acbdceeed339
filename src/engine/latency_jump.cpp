// kc — a path change inferred from latency across a capability boundary
// (see latency_jump.h).
#include "kc/latency_jump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "kc/capability.h"
#include "kc/peak.h"
#include "kc/rng.h"

namespace kc::engine {

namespace {

std::string fmt(double v, const char* f = "%.3g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// The p-quantile of sorted values, linear between order statistics.
double quantile(const std::vector<double>& sorted, double p) {
  const double at = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

void summarise(LatencySide* s) {
  std::vector<double> v = s->per_work;
  std::sort(v.begin(), v.end());
  s->q1 = quantile(v, 0.25);
  s->median = quantile(v, 0.5);
  s->q3 = quantile(v, 0.75);
}

/// Whether the declaration names a single path: no alternatives, no wildcard.
bool one_path(const std::string& patterns) {
  return !patterns.empty() && patterns.find('|') == std::string::npos && patterns.find('*') == std::string::npos;
}

struct Side {
  Call call;
  std::unique_ptr<isolate::Worker> worker;
  LatencySide* out;
};

}  // namespace

Status judge_latency(LatencyJump* j) {
  for (LatencySide* s : {&j->inside, &j->outside, &j->control}) {
    if (s->per_work.size() < 4) return invalid_argument("a latency comparison needs at least 4 timed calls a series");
    summarise(s);
    if (!(s->median > 0))
      return invalid_argument("a median time is not positive: the timer did not resolve the calls");
  }
  j->ratio = j->outside.median / j->inside.median;
  j->control_ratio = j->control.median / j->inside.median;
  j->noise = std::max({j->inside.spread(), j->outside.spread(), j->control.spread(), std::abs(j->control_ratio - 1)});
  const bool apart = j->outside.q1 > j->inside.q3 || j->outside.q3 < j->inside.q1;
  j->jump = apart && std::abs(j->ratio - 1) > 2 * j->noise;
  const std::string n = std::to_string(j->inside.per_work.size());
  std::string line = "time per unit of work across the boundary: outside / inside = " + fmt(j->ratio) +
                     " (medians of " + n + " interleaved calls a series: " + fmt(j->inside.median) + " and " +
                     fmt(j->outside.median) + " x the call's floor; interquartile spread " +
                     fmt(100 * j->inside.spread(), "%.2g") + "% and " + fmt(100 * j->outside.spread(), "%.2g") +
                     "%; the inside call timed again in another worker: " + fmt(j->control_ratio) + ")";
  line += j->jump ? ": beyond twice the measured noise, the interquartile ranges apart"
                  : ": not beyond twice the measured noise, or the interquartile ranges overlap";
  line += "; inside " + j->inside.config + (j->inside.path.empty() ? "" : " (path " + j->inside.path + ")") +
          ", outside " + j->outside.config + (j->outside.path.empty() ? "" : " (path " + j->outside.path + ")") +
          "; floor " + j->inside.work_basis;
  j->note = line;
  return ok_status();
}

Result<LatencyJump> latency_jump(const Impl& impl, const Config& inside, const Config& outside,
                                 const LatencyProbe& probe) {
  const Declaration& decl = impl.declaration();
  const Op* op = builtin_ops().find(decl.op);
  if (!op) return invalid_argument("op '" + decl.op + "' is not registered");
  if (probe.repeats < 4) return invalid_argument("latency_jump needs at least 4 repeats a side");
  LatencyJump j;
  Side sides[3];
  const Config* configs[3] = {&inside, &outside, &inside};
  LatencySide* outs[3] = {&j.inside, &j.outside, &j.control};
  bool inside_capability[3] = {false, false, false};
  for (int s = 0; s < 3; ++s) {
    KC_ASSIGN_OR_RETURN(Call call, op->make_call(*configs[s]));
    Rng rng(probe.seed + static_cast<std::uint64_t>(s == 2 ? 0 : s));  // the control: the inside call's inputs
    op->fill(call, probe.fill, rng);
    if (Status ci = impl.can_implement(call); !ci.ok())
      return Status{StatusCode::kUnimplemented, decl.name + " cannot run " + configs[s]->to_string() + ": " + ci.message()};
    const TimeFloor floor = time_floor(call, host_peak());
    if (floor.seconds <= 0)
      return invalid_argument(configs[s]->to_string() + " is too small to time against the host's floor (under 1 us "
                              "of work at its peak): choose larger sizes");
    outs[s]->config = configs[s]->to_string();
    outs[s]->work_s = floor.seconds;
    outs[s]->work_basis = floor.basis;
    const Result<CapabilityGap> gap = capability_gap(decl, call);
    inside_capability[s] = gap.ok() && gap->inside();
    sides[s].call = std::move(call);
    sides[s].worker = std::make_unique<isolate::Worker>(impl, probe.mode, probe.limits);
    sides[s].out = outs[s];
    if (Status p = sides[s].worker->prepare(sides[s].call); !p.ok()) return p;
  }
  auto time_once = [&](int s, bool keep) -> Status {
    Side& side = sides[s];
    const isolate::Outcome o = side.worker->run(side.call);
    if (o.failure)
      return Status{o.status.ok() ? StatusCode::kCrashed : o.status.code(),
                    "the call " + side.out->config + " failed (" + o.failure->to_string() + "): nothing to time"};
    if (!o.status.ok())
      return Status{o.status.code(),
                    "the call " + side.out->config + " returned " + o.status.to_string() + ": nothing to time"};
    if (!o.path.empty()) side.out->path = o.path;
    if (keep) side.out->per_work.push_back(o.seconds / side.out->work_s);
    return ok_status();
  };
  for (int w = 0; w < probe.warmup; ++w)
    for (int s = 0; s < 3; ++s) KC_RETURN_IF_ERROR(time_once(s, false));
  const int blocks = std::max(1, probe.blocks);
  for (int b = 0; b < blocks; ++b) {
    for (LatencySide* side : outs) side->per_work.clear();
    // Interleaved, the order rotating, so no series always runs first.
    for (int r = 0; r < probe.repeats; ++r)
      for (int i = 0; i < 3; ++i) KC_RETURN_IF_ERROR(time_once((r + i) % 3, true));
    KC_RETURN_IF_ERROR(judge_latency(&j));
    j.block_ratios.push_back(j.ratio);
    j.blocks_with_jump += j.jump ? 1 : 0;
  }
  j.jump = j.blocks_with_jump == blocks;
  std::string ratios;
  for (double r : j.block_ratios) ratios += (ratios.empty() ? "" : ", ") + fmt(r);
  j.note = (j.jump ? "a latency jump in each of " : "a latency jump in " + std::to_string(j.blocks_with_jump) +
                                                          " of ") +
           std::to_string(blocks) + " blocks (outside / inside: " + ratios + "): " +
           (j.jump ? "another path is inferred to serve the outside call" : "no path change inferred") +
           "; last block: " + j.note;
  const std::string declared = decl.get("path");
  if (j.jump && inside_capability[0] && inside_capability[1] && one_path(declared)) {
    j.contradicts = true;
    j.note += "; both calls are inside " + decl.name + "'s declared capability, where it declares the one path " +
              declared;
  }
  return j;
}

}  // namespace kc::engine
