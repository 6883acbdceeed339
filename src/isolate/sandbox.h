// kc — the worker's sandbox (docs/isolation.md): namespaces, a read-only file
// system with a private scratch /tmp, no privileges, and a seccomp filter.
//
// The worker is two processes. The first (kc's child) unshares PID, mount, IPC
// and network namespaces and forks the second, which is PID 1 of the new PID
// namespace and runs the kernel; the first only waits for it and ends the way
// it ended (so kc decodes one wait status, as before). kc cannot be seen from
// inside (getppid() is 0, /proc is the namespace's own), and every process the
// kernel starts ends when PID 1 does. Where namespaces are refused, the worker
// is one process in its own process group, and the seccomp filter also
// refuses signals to other processes and writes to the file system.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "kc/status.h"

namespace kc::isolate::detail {

/// What a backend's runtime may do in a worker: one row per named profile.
struct SandboxProfile {
  std::string_view name;
  bool read_only_fs;     ///< every mount read-only, a private tmpfs on /tmp, uid/gid nobody
  bool private_network;  ///< a network namespace of its own (only a down loopback device)
  bool refuse_sockets;   ///< socket() and connect() get EPERM
  bool allow_writes;     ///< write-opens allowed even where no read-only file system stands in
  /// The seccomp filter is an allow-list (default EPERM) instead of a list of
  /// refusals on a default of allow.
  bool allow_list;
};
/// The row named `name` ("strict", "opencl", "cuda", "mpi"); unknown names get "strict".
const SandboxProfile& sandbox_profile(std::string_view name);

/// What one worker got, as bits (the parent compares them with the profile's).
enum SandboxBit : std::uint32_t {
  kPidNs = 1u << 0,
  kMountNs = 1u << 1,
  kIpcNs = 1u << 2,
  kNetNs = 1u << 3,
  kOwnProc = 1u << 4,     ///< /proc shows the namespace's processes only
  kReadOnlyFs = 1u << 5,  ///< read-only mounts with a private tmpfs /tmp
  kUnprivileged = 1u << 6,  ///< uid/gid nobody, no supplementary groups
  kNoNewPrivs = 1u << 7,
  kNoCapabilities = 1u << 8,
  kSeccomp = 1u << 9,
  /// The filter refuses every call it does not list (the profile's allow-list
  /// is enforced, not logged: KC_SECCOMP_LOG unset).
  kAllowList = 1u << 10,
};
/// The bits a profile asks for on a host that grants everything.
std::uint32_t wanted_bits(const SandboxProfile& p);
/// "no PID namespace, no seccomp filter" for the bits wanted but missing.
std::string describe_missing(std::uint32_t wanted, std::uint32_t got);
/// Whether this build has a seccomp filter (libseccomp found at configure time).
bool seccomp_built();
/// KC_SECCOMP_LOG=1: an allow-list filter logs (SCMP_ACT_LOG, the kernel's
/// audit log) the calls it does not list instead of refusing them, so the
/// calls a runtime really makes can be found; the report says the sandbox is
/// weaker. The explicit refusals still hold.
bool seccomp_log_mode();

/// In a probe child's first process (run_sandboxed): unshares the namespaces
/// the profile asks for (all or, failing that, none); returns the bits
/// obtained, and why not in *why.
std::uint32_t unshare_namespaces(const SandboxProfile& p, std::string* why);
/// In kc, on the thread about to fork a worker: makes that thread's next
/// child PID 1 of a new PID namespace (unshare(CLONE_NEWPID) applies to
/// children only), so the worker is one fork of kc, not two. False, and why
/// not in *why, where namespaces are refused or turned off; the worker then
/// runs without any (unshare_namespaces' fallback).
bool pid_namespace_for_next_child(std::string* why);
/// In kc, right after that fork: the thread's later children (tools, the next
/// worker) are in kc's own PID namespace again. False if that failed.
bool own_pid_namespace_for_children();
/// In a worker that is PID 1 of its own PID namespace: the profile's other
/// namespaces (mount, IPC, network); returns kPidNs plus the bits obtained.
std::uint32_t unshare_other_namespaces(const SandboxProfile& p, std::string* why);
/// In PID 1 of the new namespaces: private propagation, its own /proc and,
/// when the profile asks, read-only mounts with a tmpfs on /tmp.
std::uint32_t set_up_mounts(const SandboxProfile& p, std::uint32_t bits, std::int64_t scratch_bytes,
                            std::string* why);
/// Last step before the kernel thread starts: uid/gid nobody (read-only
/// profiles), an empty capability bounding set and capability sets,
/// no_new_privs, and the seccomp filter. `self` is the pid the filter allows
/// signals to where there is no PID namespace.
std::uint32_t lock_down(const SandboxProfile& p, std::uint32_t bits, pid_t self, std::string* why);

/// A probe child's sandbox (kc::run_sandboxed_here, kc/child.h): the strict
/// profile, as a worker gets it. With namespaces, `fn` runs in PID 1 of new
/// ones after the mounts and lock_down, and its answer comes back over a pipe;
/// when PID 1 dies (a deadly signal gets a handler there, as in a worker), the
/// calling process dies by the same signal or exits with the same code.
/// Without, the calling process locks itself down and runs `fn`. Library files
/// kc noted are pinned first (kc::pin_library_files).
Result<std::string> run_sandboxed(const std::function<Result<std::string>()>& fn);

/// The kc cgroup's cgroup.procs that workers forked from now on join ("" none).
void set_worker_cgroup(const std::string& dir);
std::string worker_cgroup_procs();
/// OOM kills the kc cgroup has seen so far (v2 memory.events, v1
/// memory.oom_control "oom_kill"), and its limit in *budget; -1 without one.
std::int64_t cgroup_oom_kills(std::int64_t* budget);
/// In a forked worker (async-signal-safe): moves it into the cgroup whose
/// cgroup.procs is `procs`; true if it did (or `procs` is empty).
bool join_cgroup(const std::string& procs);

}  // namespace kc::isolate::detail
