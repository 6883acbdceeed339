// kc — the command line's commands and flags in one table each. The global
// help, each command's own `kc CMD --help`, the list of known commands and
// the refusal of a flag given to a command that does not read it all come
// from these tables, so they cannot drift apart.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace kc::cli {

struct CommandInfo {
  std::string_view name;     ///< "check"
  std::string_view usage;    ///< its arguments: "[PATHS...]"
  std::string_view summary;  ///< what it does; lines separated by '\n'
};

struct FlagInfo {
  std::string_view name;   ///< "--jobs"
  std::string_view alias;  ///< "-j", or empty
  std::string_view value;  ///< what follows it ("N"), empty for a switch
  std::string_view group;  ///< the global help's section: "check, grade, calibrate", "lint", ...
  /// The commands that read it, separated by spaces.
  std::string_view commands;
  /// Given to any other command it is a usage error; otherwise it is only
  /// not listed in that command's help.
  bool enforced;
  /// Lines separated by '\n'. "@formats" and "@out" are generated from the
  /// report formats' table (kc/reporter.h).
  std::string_view help;
};

std::span<const CommandInfo> commands();
std::span<const FlagInfo> flags();
const CommandInfo* find_command(std::string_view name);
/// Whether `command` is among flag's commands.
bool reads(const FlagInfo& flag, std::string_view command);

/// `kc --help`: every command, then every flag by section (exit codes are appended by the caller).
std::string global_help();
/// `kc CMD --help`: its usage, what it does and only the flags it reads.
std::string command_help(const CommandInfo& command);
/// Empty when `flag` (as given, "--shard") may go to `command`; else why not.
std::string scope_error(std::string_view flag, std::string_view command);
/// The known flag nearest to an unknown one ("--contrct" -> "--contract"), or empty.
std::string nearest_flag(std::string_view flag);

}  // namespace kc::cli
