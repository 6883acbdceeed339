// kc — a path change inferred from latency across a capability boundary
// (docs/capability.md, "Inferring a path from latency").
//
// Where a library cannot say which path served a call, a change of path at a
// boundary (a size one past a tile class, a pointer off the declared
// alignment) may still show in the time per unit of work. latency_jump times
// the kernel on a call just inside and one just outside the boundary, each in
// its own worker, plus a control: the inside call again, in a third worker.
// The three are interleaved (inside, outside, control, in a rotating order)
// after warm-up calls, so drift in the machine's speed falls on all alike.
// Each time is divided by the call's work (the host time floor of kc/peak.h:
// the op's multiply-adds, or its output bytes, at the host's measured peak),
// and each series is summarised by its median and interquartile range. The
// noise is what the same run measures: the larger relative interquartile
// range, or the control's distance from the inside (what timing the very same
// call in another worker differs by), whichever is larger. A jump is reported
// only when the inside's and outside's interquartile ranges are apart and the
// ratio of their medians is beyond twice the noise: nothing fitted. The
// whole comparison is repeated in `blocks` independent blocks, and a jump is
// inferred only where every block shows it: a burst of load on the machine
// (a threaded kernel losing its cores for part of a block) moves one block,
// not all of them. A jump is a note (an inference, not an observation), never a
// violation by itself; `contradicts` says when the declaration promises one
// path on both sides, which the jump puts in doubt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/isolate.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc::engine {

/// One side of the boundary.
struct LatencySide {
  std::string config;           ///< Config::to_string of the call
  std::string path;             ///< the path the kernel reported ("" none)
  double work_s = 0;            ///< the call's time floor: its work at the host's peak
  std::string work_basis;       ///< "1.68e+07 multiply-adds at <= 1.2e+12/s"
  std::vector<double> per_work; ///< each timed call / work_s, in run order
  double q1 = 0, median = 0, q3 = 0;
  double spread() const { return median > 0 ? (q3 - q1) / median : 0; }  ///< relative interquartile range
};

struct LatencyJump {
  LatencySide inside, outside;
  LatencySide control;      ///< the inside call again, in its own worker
  double ratio = 0;         ///< outside median / inside median (time per unit of work)
  double control_ratio = 0; ///< control median / inside median
  double noise = 0;         ///< max(relative interquartile ranges, |control_ratio - 1|)
  bool jump = false;        ///< beyond the noise in every block: a path change is inferred
  std::vector<double> block_ratios;  ///< ratio of each block (the fields above are the last block's)
  int blocks_with_jump = 0;
  bool contradicts = false; ///< a jump where the declaration promises one path on both sides
  std::string note;         ///< one line with the figures
};

struct LatencyProbe {
  int repeats = 9;   ///< timed calls per series and block (after `warmup` untimed ones)
  int blocks = 3;    ///< independent repetitions of the comparison; a jump must show in each
  int warmup = 2;
  isolate::Mode mode = isolate::Mode::kProcess;
  isolate::Limits limits;
  FillSpec fill;
  std::uint64_t seed = 0x6b63;
};

/// Times `impl` on `inside` and `outside` (configs of its op) as above. A call
/// the impl refuses (kUnimplemented), or one that fails or raises (its own
/// status: the boundary is an error there, not a path), cannot be timed; calls too small for the host's floor to
/// measure their work (under 1 us at peak) are kInvalidArgument.
Result<LatencyJump> latency_jump(const Impl& impl, const Config& inside, const Config& outside,
                                 const LatencyProbe& probe);

/// The decision on given samples (exposed for tests): fills q1/median/q3 of
/// the three series, the ratios, noise, jump and the note. Needs at least 4
/// timed calls in each series.
Status judge_latency(LatencyJump* j);

}  // namespace kc::engine
