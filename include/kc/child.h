// kc — device runtimes and fork(): a short-lived child for probes and builds,
// and a record of the runtimes started in kc's own process.
//
// Neither OpenCL nor CUDA survives fork(), and kc forks a worker per impl: a
// runtime kc's process has started is unusable in every worker forked after.
// So probes and builds run in a short-lived child (run_in_child), and a
// backend that starts its runtime in kc's process says so
// (note_runtime_started), so that a plugin needing the same runtime in a
// worker gets a clear refusal instead of the runtime's initialisation error.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "kc/status.h"

namespace kc {

/// Runs `fn` in a forked child and returns the text it produced. The child's
/// own failure (a non-OK Status) comes back as that Status; a crash, an exit
/// without an answer, or no answer within `timeout_s` is kUnavailable, naming
/// `what` ("the CUDA probe") and the signal or the timeout. The child leaves
/// with _exit: no atexit handlers, no static destructors, no repeated output.
///
/// The child leads a process group of its own and dies with kc's thread that
/// forked it; whatever it started is killed with it when it ends.
struct ChildEnd {
  int signal = 0;          ///< the signal that ended the child (0: none)
  int exit_code = -1;      ///< its exit status when it exited without answering
  bool timed_out = false;  ///< kc killed it at timeout_s
  bool answered = false;   ///< it sent its answer (before whatever ended it)
};
/// `end`, when given, says how the child ended, for callers that word a crash themselves.
Result<std::string> run_in_child(const std::function<Result<std::string>()>& fn, double timeout_s,
                                 std::string_view what, ChildEnd* end = nullptr);

/// For untrusted code in a child of run_in_child (a plugin's or a system
/// library's loader): runs `fn` inside the sandbox a strict-profile worker
/// gets (namespaces, a read-only file system, uid nobody, no capabilities,
/// no_new_privs, the seccomp allow-list; docs/isolation.md), or its fallback
/// where namespaces are refused, and returns its answer; when `fn`'s process
/// dies, this one dies the same way. The isolation layer provides the sandbox
/// (set_child_sandbox); in a program built without it, `fn` runs as it is.
Result<std::string> run_sandboxed_here(const std::function<Result<std::string>()>& fn);
using ChildSandbox = Result<std::string> (*)(const std::function<Result<std::string>()>& fn);
void set_child_sandbox(ChildSandbox sandbox);

/// Library files an untrusted loader opens inside a sandbox, where the file
/// may be hidden (a path under /tmp, which the sandbox replaces with its
/// scratch tmpfs) or out of reach (a directory uid nobody cannot search).
/// kc notes each such file before it forks (note_library_file); the sandbox
/// opens them while they are still reachable (pin_library_files, before its
/// mounts and its privilege drop), and the loader then opens the file through
/// library_path(), "/proc/self/fd/N" for a pinned file, else the path itself.
void note_library_file(const std::string& path);

/// Calls fn(pid, ppid, pgrp) for every process /proc lists, this one
/// excepted; one that ends while it is read is skipped.
void for_each_process(const std::function<void(long pid, long ppid, long pgrp)>& fn);
void pin_library_files();
std::string library_path(const std::string& path);

/// The declaration extra an impl uses to say it starts a device runtime
/// itself: extra[device_runtime] = "cuda" (set by the plugin backend for a
/// library that reaches CUDA).
inline constexpr std::string_view kDeviceRuntimeKey = "device_runtime";

/// Records that `runtime` ("cuda") has been started in this process.
void note_runtime_started(std::string_view runtime);
/// Whether `runtime` has been started in this process (thread-safe).
bool runtime_started(std::string_view runtime);

}  // namespace kc
