// kc — what a run's filters select, and the errors for a selection that
// selects nothing: a typo in --impl or --contract must not pass as a green run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/lang.h"

namespace kc::engine {

/// Whether any diagnostic is an error (a run with one judges nothing).
bool any_error(const std::vector<lang::Diagnostic>& diagnostics);

/// Whether `name` passes a list of glob filters (an empty list passes everything).
bool selected(const std::vector<std::string>& filters, const std::string& name);

/// Whether a glob of `filters` names `name` by its literal backend prefix
/// ("calib.*" names calib.gemm; "*" names nothing this way).
bool named_by_prefix(const std::vector<std::string>& filters, const std::string& name);

/// The `suite NAME` block of the loaded files, or nullptr with an error in
/// *diagnostics: no suite of that name (with the nearest), or one of its
/// contract or impl globs matches nothing (at the suite's file:line).
const Suite* resolve_suite(const std::string& name, const LoadedContracts& loaded,
                           const std::vector<std::shared_ptr<const Impl>>& impls,
                           std::vector<lang::Diagnostic>* diagnostics);

/// One line for the run's notes: which suite, its tier and where it is written.
std::string suite_note(const Suite& suite);

/// The problems of a run's selection, as diagnostics (errors make the run exit
/// 2 before any case runs):
/// - paths that hold no contract;
/// - a --contract glob that matches no loaded contract id (with the nearest id);
/// - an --impl glob that matches no impl (with the nearest name), or only a
///   warning when it names a backend that is unavailable here (its cases would
///   be skipped: the run then judges nothing and says so);
/// - a --plugin library or .cl source that failed to load;
/// - the contracts' dependency cycles (as `kc lint` reports them).
std::vector<lang::Diagnostic> check_selection(const CheckRequest& request, const LoadedContracts& loaded,
                                              const std::vector<std::shared_ptr<const Impl>>& impls,
                                              const std::vector<BackendInfo>& backends);

}  // namespace kc::engine
