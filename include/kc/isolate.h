// kc — isolation: the kernel under test runs in a worker process, on guarded
// buffers, under a wall-clock timeout and a memory limit (docs/isolation.md).
//
// A crash, a hang, a memory blow-up or a write outside a buffer becomes an
// Outcome with a named signature (CRASH(SIGSEGV), TIMEOUT(2s), MEMORY_LIMIT(4GiB),
// GUARD_OVERWRITTEN(C, after), ...), never a dead or stuck kc.
//
// How a call travels: the parent copies the call's tensors into a shared
// transfer region and wakes the worker; the worker copies them into its own
// buffers, each right-aligned against a PROT_NONE guard page (an overrun faults
// at once) with canary bytes in the slack before the data and in the < 16-byte
// gap after it (checked after the call), runs the kernel, checks the canaries,
// and copies every tensor back. One worker serves every call of one layout, so
// repeated invocations run in one process on the same buffer addresses (what a
// determinism contract, and a check for results cached by address, need).
//
// The worker is a fork() of kc, and the kernel runs on a thread the worker
// creates, never on the worker's main thread: libgomp (the OpenMP runtime of
// Debian's BLIS) keeps its thread pool in the forking thread's thread-local
// state, and a parallel region entered from that thread in the child waits
// forever for pool threads that fork() did not copy. A fresh thread starts a
// fresh pool. OpenBLAS shuts its pool down in a pthread_atfork handler.
#pragma once

#include <cfenv>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kc/backend.h"
#include "kc/enum_table.h"
#include "kc/model.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc::isolate {

/// kValgrind isolates like kProcess; `kc check` then runs each case again in a
/// kc process under valgrind memcheck (kc/memcheck.h).
enum class Mode { kProcess, kNone, kValgrind };
std::span<const EnumEntry<Mode>> mode_table();
inline std::string_view mode_name(Mode m) { return enum_name(mode_table(), m); }

/// Limits on one kernel call in a worker.
struct Limits {
  double timeout_s = 60;  ///< wall clock per call; the worker is killed past it
  /// Memory the worker may add on top of kc and the call's own buffers:
  /// resident growth (polled) and, where no sanitizer reserves address space,
  /// RLIMIT_AS (with an allowance per hardware thread for thread stacks,
  /// malloc arenas and BLAS buffers).
  std::int64_t memory_bytes = std::int64_t{4} << 30;
  /// After a call returns, its tensors are read-only in the worker until the
  /// next call starts, and the reply waits this long: a write in that window
  /// (a thread the kernel left running) is LATE_WRITE(tensor) on this call, a
  /// later one LATE_WRITE on the worker's next call. The reply does not wait
  /// when nothing the kernel started can still run (no thread besides the
  /// worker's own, no timer armed): no late write can come then.
  double settle_s = 0.002;
  /// Memory every worker running at once may use together (`--memory-budget`);
  /// 0: the machine's available memory (MemAvailable). See MemoryBudget.
  std::int64_t budget_bytes = 0;
};

/// How `jobs` concurrent workers are held to one memory budget
/// (docs/isolation.md "Memory budget"): at most budget / memory_bytes of them
/// run at once, so the per-worker limits add up to no more than the budget;
/// and where a cgroup memory controller is writable (v2 memory.max, else v1
/// memory.limit_in_bytes), every worker joins one kc cgroup limited to the
/// budget, so the kernel holds the sum too (forked processes, scratch tmpfs,
/// pages touched between two polls of the per-worker watch).
struct MemoryBudget {
  std::int64_t bytes = 0;         ///< the budget (0: unknown, nothing limited)
  int jobs = 1;                   ///< workers that may run at once
  std::int64_t memory_bytes = 0;  ///< the per-worker limit (lowered to the budget if above it)
  std::string cgroup;             ///< the kc cgroup every worker joins ("" none)
  std::string cgroup_why_not;     ///< why there is none, when one was wanted
  std::string note;               ///< what the budget changed, to say once ("" nothing)
};
/// The budget for `jobs` workers under `limits`; also makes the workers forked
/// from now on join its cgroup (one kc cgroup per kc process, removed at exit).
MemoryBudget memory_budget(int jobs, const Limits& limits);

/// What the kernel wrote to its stdout and stderr (never kc's): the first
/// kCaptureKeep bytes, and how many there were in all.
struct Capture {
  static constexpr std::size_t kCaptureKeep = 64 * 1024;
  std::string head;
  std::int64_t bytes = 0;
};

/// What an impl's backend declared about its runtime (kc/declaration.h):
/// isolate decides from it alone, never from a backend's name, whether a
/// worker can run the impl, which sandbox profile it gets, and whether host
/// limits (address space, host peaks) apply.
using kc::RuntimeTraits;
inline const RuntimeTraits& runtime_traits(const Declaration& decl) { return decl.runtime; }

/// What one call did.
struct Outcome {
  /// The kernel's own Status (OK, kKernelRaised, kUnimplemented, ...), or why the
  /// worker stopped the call (kCrashed, kDeadlineExceeded, kResourceExhausted, kInternal).
  Status status;
  /// Set when the worker stopped the call: CRASH(SIGSEGV), CRASH(exit 3),
  /// TIMEOUT(2s), MEMORY_LIMIT(4GiB), GUARD_OVERWRITTEN(C, after),
  /// GUARD_READ(A, after), LATE_WRITE(C), WORKER_FAILED.
  std::optional<Signature> failure;
  double seconds = 0;  ///< wall time inside Impl::run (measured in the worker)
  /// The implementation path the kernel reported for the call (kc/capability.h:
  /// report_selected_path), and its library's reason; empty when it reported none.
  std::string path;
  std::string path_reason;
};

/// Runs one impl's calls, in a worker process or in-process.
class Worker {
 public:
  Worker(const Impl& impl, Mode mode, Limits limits);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Readies a worker for calls laid out like `call` (op, config, tensor
  /// dtypes, shapes and strides): the running one, told the new layout, or a
  /// new one. Call it before computing what the kernel must not see (the
  /// oracle's answer): a worker's memory is a copy of kc's from when it was
  /// forked, at this call or an earlier one, never later.
  Status prepare(const Call& call);
  /// Runs the impl on `call` and writes every tensor back in place, like
  /// Impl::run. A call with a new layout is handed to the running worker (it
  /// remakes its guarded buffers), or, when it does not fit there, to a new
  /// worker; a failure ends the worker (the next call starts a fresh one).
  Outcome run(Call& call);

  /// Whether calls leave kc's process (false for Mode::kNone and for backends
  /// whose runtime does not survive fork(); in_process_reason() says which).
  bool isolated() const { return isolated_; }
  const std::string& in_process_reason() const { return in_process_reason_; }
  /// Worker processes started so far (1 unless calls failed or a layout did
  /// not fit the running worker).
  int spawned() const { return spawned_; }
  /// Layout changes the running worker took on in place, without a new process.
  int relayouts() const { return relayouts_; }

  /// What the kernel printed, over every call so far (workers only).
  const Capture& captured_output() const { return capture_; }
  /// Notes for the case's evidence: a sandbox weaker than its profile asks
  /// for (and why), what the kernel printed, a floating-point environment an
  /// in-process kernel left changed. Empty when there is nothing to say.
  std::vector<std::string> evidence_notes() const;

  struct Child;  ///< a running worker process (defined in src/isolate)

 private:
  Outcome run_once(Call& call);

  const Impl& impl_;
  Limits limits_;
  bool isolated_ = true;
  std::string in_process_reason_;
  std::string device_runtime_;  ///< extra[device_runtime] of a plugin that starts one ("cuda")
  int spawned_ = 0;
  int relayouts_ = 0;
  std::unique_ptr<Child> child_;
  std::unique_ptr<Child> retiring_;  ///< the previous layout's worker, exiting (prepare)
  Capture capture_;
  std::string sandbox_note_;  ///< what the last worker's sandbox lacked, and why
  std::string fp_env_note_;   ///< an in-process kernel left the FP environment changed
};

/// kc's own floating-point environment for the scope's lifetime: the default
/// (round to nearest, exceptions masked, flags clear) with MXCSR FTZ and DAZ
/// off, whatever a kernel run in kc's thread left behind; the previous
/// environment comes back at the end. Hold one wherever kc computes an oracle
/// or judges (the kernel's FTZ must not become kc's).
class FpEnvScope {
 public:
  FpEnvScope();
  ~FpEnvScope();
  FpEnvScope(const FpEnvScope&) = delete;
  FpEnvScope& operator=(const FpEnvScope&) = delete;

 private:
  std::fenv_t saved_{};
  unsigned saved_csr_ = 0;
};
/// Whether this thread's FP environment differs from the default in a way that
/// changes results (rounding mode, FTZ, DAZ); *what says how.
bool fp_env_changed(std::string* what = nullptr);

/// "4GiB", "512MiB", "1234B": the memory-limit spelling used in signatures.
std::string format_bytes(std::int64_t bytes);
/// Parses "4G", "512M", "1.5GiB", "65536" (bytes); nullopt if malformed.
std::optional<std::int64_t> parse_bytes(std::string_view text);

}  // namespace kc::isolate

namespace kc::isolate {

/// Keeps what a kernel must not see (an oracle's answer) out of every worker
/// forked while it exists. A worker is a fork() of kc, so when cases run on
/// several threads (`--jobs`), one case's oracle would otherwise be in the
/// memory of another case's worker. A thread holds an OracleScope while such
/// data lives in ordinary memory; Worker::prepare forks only when no *other*
/// thread holds one (the forking thread's own oracle is computed after its
/// worker starts, as run_case orders it). Waiting forks take precedence over new
/// scopes, so a fork is never starved. Cheap when one thread runs.
class OracleScope {
 public:
  OracleScope();
  ~OracleScope();
  OracleScope(const OracleScope&) = delete;
  OracleScope& operator=(const OracleScope&) = delete;
};

namespace detail {
/// Held by the forking thread around fork(): waits until no other thread holds an OracleScope.
class ForkExclusive {
 public:
  ForkExclusive();
  ~ForkExclusive();
  ForkExclusive(const ForkExclusive&) = delete;
  ForkExclusive& operator=(const ForkExclusive&) = delete;
  /// In the forked child: release nothing (the gate's state there is a frozen copy).
  void disown() { owned_ = false; }

 private:
  bool owned_ = true;
};
}  // namespace detail

}  // namespace kc::isolate
