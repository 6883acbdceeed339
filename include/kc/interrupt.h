// kc — stopping a run on SIGINT (Ctrl-C) or SIGTERM: no new case starts,
// every worker process ends, the trace keeps whole records (docs/trace.md,
// "Interrupting and resuming").
#pragma once

namespace kc {

/// Installs the SIGINT and SIGTERM handlers (once per process). The first
/// signal sets the flag interrupted() reads and wakes a watcher thread that
/// ends, with SIGKILL to their process groups, every process kc started
/// (workers, probe children, tool runs), and keeps doing so until kc exits.
/// A second signal has its default action: it ends kc at once.
void install_interrupt_handlers();

/// Whether SIGINT or SIGTERM arrived since install_interrupt_handlers().
bool interrupted();

/// The signal that interrupted the run (SIGINT or SIGTERM), 0 when none.
int interrupt_signal();

}  // namespace kc
