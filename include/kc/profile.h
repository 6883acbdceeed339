// kc — what machine and environment produced a run: the profile every run
// record carries (docs/scale-out.md "Profile"), so a verdict can be traced to
// the silicon, the libraries and the settings it was measured on.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kc/backend.h"

namespace kc::report {

struct Profile {
  /// Facts by name: host, os, kernel, cpu_model, cpu_flags, logical_cpus,
  /// gpu_N and nvidia_driver where a GPU driver is loaded, fp_rounding, fp_ftz,
  /// fp_daz, kc_version, kc_commit, compiler, and library_NAME (a backend's
  /// version, or why it was unavailable).
  std::map<std::string, std::string> facts;
  /// The environment variables that change libraries' code paths (thread
  /// counts, forced core types or architectures, TF32 overrides, kc's own),
  /// as set when the run started.
  std::map<std::string, std::string> env;
};

/// The profile of this process's machine. Reads /proc, /etc/os-release and
/// the NVIDIA driver's /proc files; loads no library. `backends`: the run's
/// backends, whose versions it records.
Profile collect_profile(const std::vector<BackendInfo>& backends);

/// Whether an environment variable is one the profile records.
bool profile_env_knob(const std::string& name);

}  // namespace kc::report
