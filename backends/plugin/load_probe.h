// kc — loading a foreign library in a short-lived probe child first.
//
// A shared library runs code as soon as it is loaded: its constructors, its
// dependencies' constructors, and for a plugin kc_plugin_init. Any of them may
// abort (BLIS with an invalid BLIS_ARCH_TYPE), loop forever or exit. So kc
// loads such a library first in a child forked for the purpose (kc::run_in_child,
// kc/child.h), under a timeout, and takes back only text: what the library is
// (impl names and declarations, its version). A child that dies or hangs makes
// the library unavailable, with a reason saying so, and kc goes on.
//
// Each library is probed once per kc process: the answer (a failure included)
// is kept, keyed by what identifies the library and its loading environment.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "kc/status.h"

namespace kc::backends {

/// Seconds a library may take to load in its probe child: KC_LOAD_TIMEOUT when
/// set (seconds, > 0), else 30.
double load_timeout_s();

/// Runs `load` in a probe child and returns the text it produced, or its own
/// failure. `key` identifies the library and whatever changes how it loads
/// (the environment variables it reads); a key probed before in this process
/// gets the first answer again, without a child. `library` (its path) names it
/// in messages. When the child does not answer, the result
/// is kUnavailable, "aborted while loading (SIGABRT)", "crashed while loading
/// (SIGSEGV)", "exited while loading (exit 3)" or "hung while loading (timeout
/// 30s)", followed by the last lines the library wrote to its stdout or stderr
/// (captured in the child, never passed to kc's); callers put the library's
/// path in front; kc::library_load_failures() lists it with the path. `died`,
/// when given, is set when the child ended that way (rather than answering,
/// with a failure of its own such as a dlopen error).
Result<std::string> probe_load(const std::string& key, const std::string& library,
                               const std::function<Result<std::string>()>& load, bool* died = nullptr);

/// Several libraries in one probe child, when loading each in a child of its
/// own would cost a fork apiece (the variant builds of one backend): `load`
/// answers for all of them. When the child dies or hangs, nothing is blamed and
/// the result is nullopt: the caller then probes each library with probe_load,
/// which names the one that failed. `libraries` names the child in messages.
std::optional<Result<std::string>> probe_load_together(const std::string& key, const std::string& libraries,
                                                       const std::function<Result<std::string>()>& load);

/// `key` extended with the file's identity (device, inode, size, modification
/// time), so a library rebuilt at the same path is probed again.
std::string file_key(const std::string& key, const std::string& path);

/// Length-prefixed fields, for the text a probe child sends back.
class FieldWriter {
 public:
  void add(const std::string& field);
  void add_optional(const char* field);  ///< a null pointer stays distinguishable from ""
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class FieldReader {
 public:
  explicit FieldReader(const std::string& text) : text_(text) {}
  /// The next field; false at the end of the text or when it is malformed.
  bool next(std::string* field, bool* present = nullptr);

 private:
  const std::string& text_;
  std::size_t at_ = 0;
};

}  // namespace kc::backends
