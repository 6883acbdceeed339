// kc — what the library has to tell the person running it, while it runs.
//
// The library never writes to stdout or stderr (docs/architecture.md,
// "Module boundaries"). Something a person should hear about as it happens —
// a worker sandbox weaker than its profile, what the memory budget changed,
// an mpirun job starting — goes to the process's message sink, which a front
// end installs: the CLI prints each message as "kc: TEXT" on stderr. Every
// message is also kept as data where it belongs (a run's notes, a case's
// evidence), so a caller that installs no sink loses nothing but the timing.
// Progress of one request is not a message: it goes to that request's
// on_progress callback (kc/engine.h, kc/ladder.h).
#pragma once

#include <functional>
#include <string>

namespace kc {

/// Receives one message (no "kc: " prefix, no newline). Calls are serialised.
using MessageSink = std::function<void(const std::string& text)>;

/// Installs the process's sink (an empty one: messages are dropped, the
/// default); returns the one it replaces.
MessageSink set_message_sink(MessageSink sink);

/// Passes `text` to the sink, if one is installed. Any thread.
void say(const std::string& text);

/// Like say, but each distinct text at most once per process (a note that
/// every case or every run of a ladder would otherwise repeat).
void say_once(const std::string& text);

}  // namespace kc
