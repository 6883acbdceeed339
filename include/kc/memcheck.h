// kc — the valgrind isolation mode: a case run again in a kc process under
// valgrind memcheck, so a kernel that reads or writes outside its library's
// own buffers (a workspace, a packing buffer: memory the guard pages around
// kc's tensors never see) becomes a verdict like a guard hit.
//
// `kc check ... --isolate valgrind` runs the selection as usual, then each
// case again as `kc check FILE --contract ID --impl NAME --backend B
// --isolate none` under `valgrind --tool=memcheck --smc-check=all --xml=yes`
// (JIT-compiled kernels need --smc-check=all). kc's worker marks the window of
// every kernel call with a valgrind client message; only memcheck errors first
// seen inside a window count against the kernel (kc's own start-up, the
// dynamic loader and the oracle stay out of it). A case with such errors
// becomes an error verdict with MEMCHECK(kind, where) first among its
// signatures and the first findings as evidence. Without valgrind the run is
// refused with a message (exit 2); the rerun has a deadline.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/engine.h"
#include "kc/status.h"

namespace kc::memcheck {

/// The client messages kc's worker writes around a kernel call when it runs
/// under valgrind (no-ops otherwise).
inline constexpr char kKernelBegin[] = "kc-kernel-begin";
inline constexpr char kKernelEnd[] = "kc-kernel-end";

/// Writes the begin / end marker of a kernel call (no-op outside valgrind).
void mark_kernel_begin();
void mark_kernel_end();

/// One memcheck error: its kind (InvalidRead, InvalidWrite, UninitCondition,
/// ...), what valgrind said, and the innermost frame as "fn (object)".
struct Finding {
  std::string kind;
  std::string what;
  std::string where;
  std::string object;  ///< file name of the innermost frame's object ("libfoo.so")
  std::string line() const;
};

/// What a memcheck XML log says, split by the kernel-call windows.
struct Report {
  bool complete = false;              ///< the log ended with </valgrindoutput>
  long kernel_calls = 0;              ///< begin markers seen
  std::vector<Finding> in_kernel;     ///< errors first seen inside a kernel call
  long outside = 0;                   ///< errors elsewhere (start-up, loader, oracle)
};

/// Parses valgrind's --xml=yes output (protocol 4).
Report parse_xml(std::string_view xml);

/// valgrind: $KC_VALGRIND, then PATH. nullopt when none is executable.
std::optional<std::string> find_binary();

/// Runs `argv` (argv[0] a path) under `binary` with memcheck, the XML log in a
/// temporary directory; kills the whole process group after `timeout_s`.
Result<Report> run(const std::string& binary, const std::vector<std::string>& argv, double timeout_s);

/// Turns a report with errors inside kernel calls into an error verdict on
/// `c`: MEMCHECK(kind, object) first among the signatures, the findings as
/// evidence. A report without such errors adds a note and leaves the verdict.
void apply(const Report& report, engine::CaseResult& c);

}  // namespace kc::memcheck
