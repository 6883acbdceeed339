// kc — the command-line shell. Parses flags, calls the library, prints.
#include <unistd.h>

#include <csignal>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/calibrate.h"
#include "kc/certify.h"
#include "kc/diff.h"
#include "kc/engine.h"
#include "kc/exit_code.h"
#include "kc/install_layout.h"
#include "kc/interrupt.h"
#include "kc/graph.h"
#include "kc/ladder.h"
#include "kc/lang.h"
#include "kc/latency_jump.h"
#include "kc/lint.h"
#include "kc/memcheck.h"
#include "kc/message.h"
#include "kc/merge.h"
#include "kc/obligation.h"
#include "kc/plan.h"
#include "kc/op.h"
#include "kc/oracle_options.h"
#include "kc/oracles.h"
#include "kc/report.h"
#include "kc/reporter.h"
#include "kc/retest.h"
#include "kc/sanitizer.h"
#include "kc/shard.h"
#include "kc/sign.h"
#include "kc/signature.h"
#include "kc/train_config.h"
#include "kc/vocabulary.h"

#include "cli_table.h"

namespace {

using kc::engine::CheckRequest;
using kc::engine::CheckResult;

constexpr int kExitOk = kc::exit_value(kc::ExitCode::kOk), kExitViolation = kc::exit_value(kc::ExitCode::kViolation),
              kExitUsage = kc::exit_value(kc::ExitCode::kUsage), kExitInternal = kc::exit_value(kc::ExitCode::kInternal);

#ifndef KC_BUILD_CONTRACTS
#define KC_BUILD_CONTRACTS "contracts"
#endif
#ifndef KC_BUILD_INCLUDE_DIR
#define KC_BUILD_INCLUDE_DIR "include"
#endif
// The shipped suite and the plugin header: an installed kc's copies under its
// prefix (kc/install_layout.h), else the source tree's.
#define KC_DEFAULT_CONTRACTS kc::installed_or("share/kc/contracts", "suites", KC_BUILD_CONTRACTS)


struct Args {
  std::string command;
  std::vector<std::string> positional;
  CheckRequest request;
  std::string format = "table";
  std::string to;
  std::string out = "kc-report";
  bool out_given = false;                 ///< --out given (check writes its run record there)
  std::string resume;                     ///< --resume DIR|FILE
  std::string baseline, fail_on, junit, html;  ///< --baseline, --fail-on, --junit, --html
  /// Colour on a terminal unless NO_COLOR is set (https://no-color.org); --color / --no-color decide.
  bool color = isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  bool format_given = false;
  kc::report::JunitOptions junit_options;  ///< --junit-not-applicable
  bool strict = false;  ///< lint --strict
  double progress_every = 30;  ///< --progress-every: seconds between progress lines off a terminal (0: none)
  bool fast_tuned = false;  ///< --fast-probes or --fast-samples given
  std::string affected;
  std::string dir;
  std::string from, notes;  ///< retest-plan (--to is its new version)
  std::string pin;          ///< ladder --pin FILE
  std::string inside, outside;  ///< latency --inside / --outside configs
  std::string shard;        ///< --shard I/N | auto
  std::string sign_key;     ///< --sign-key FILE (a secret key from kc keygen)
  std::string key;          ///< --key FILE (a public key: verify-trace, certify verify)
  kc::ladder::LadderRequest ladder;
  std::optional<kc::sanitizer::Tool> sanitizer;  ///< --compute-sanitizer
  std::vector<std::string> argv;                 ///< the arguments as given, for the sanitizer's re-run
  std::vector<std::string> given;                ///< the flags given, by name ("--jobs" for -j)
};

/// The help text (cli_table.h) with its exit-code section, printed from kc/exit_code.h's table.
std::string help_text() {
  std::string out = kc::cli::global_help();
  out += "\nexit codes:\n";
  for (const auto& e : kc::exit_code_table())
    out += "  " + std::to_string(kc::exit_value(e.value)) + "  " + std::string(e.help) + "\n";
  return out;
}

/// The command given, so that a usage error points at that command's own help.
std::string g_command;

int usage_error(const std::string& message) {
  const bool known = kc::cli::find_command(g_command) != nullptr;
  std::cerr << "kc: " << message << "\n(run `kc " << (known ? g_command + " " : std::string()) << "--help` for usage)\n";
  return kExitUsage;
}

bool parse_u64(const std::string& s, std::uint64_t* out) {
  try {
    std::size_t pos = 0;
    *out = std::stoull(s, &pos, 0);
    return pos == s.size();
  } catch (...) {
    return false;
  }
}

/// Returns -1 on success, else an exit code.
int parse_args(int argc, char** argv, Args* a) {
  std::vector<std::string> v(argv + 1, argv + argc);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string s = v[i];
    // --flag=value is the same as --flag value.
    std::optional<std::string> inline_value;
    if (s.rfind("--", 0) == 0) {
      if (const auto eq = s.find('='); eq != std::string::npos) {
        inline_value = s.substr(eq + 1);
        s.resize(eq);
      }
    }
    auto value = [&](std::string* out) -> bool {
      if (inline_value) {
        *out = *inline_value;
        return true;
      }
      if (i + 1 >= v.size()) return false;
      *out = v[++i];
      return true;
    };
    std::string x;
    if (s.size() > 1 && s[0] == '-' && s != "-h" && s != "--help" && s != "--version")
      a->given.push_back(s == "-j" ? "--jobs" : s);
    if (s == "-h" || s == "--help") {
      // After a command, that command's own page.
      const kc::cli::CommandInfo* c = kc::cli::find_command(a->command);
      std::cout << (c != nullptr ? kc::cli::command_help(*c) : help_text());
      return kExitOk;
    } else if (s == "--version") {
      std::cout << "kc 0.1.0\n";
      return kExitOk;
    } else if (s == "--contract") {
      if (!value(&x)) return usage_error("--contract needs a value");
      a->request.contracts.push_back(x);
    } else if (s == "--impl") {
      if (!value(&x)) return usage_error("--impl needs a value");
      a->request.impls.push_back(x);
    } else if (s == "--suite") {
      if (!value(&a->request.suite)) return usage_error("--suite needs a suite name (`kc list suites`)");
    } else if (s == "--pin") {
      if (!value(&a->pin)) return usage_error("--pin needs a file for the regression contracts");
    } else if (s == "--from") {
      if (!value(&a->from)) return usage_error("--from needs a version");
    } else if (s == "--inside") {
      if (!value(&a->inside)) return usage_error("--inside needs a config (\"K=V ...\", as in --config)");
    } else if (s == "--outside") {
      if (!value(&a->outside)) return usage_error("--outside needs a config (\"K=V ...\", as in --config)");
    } else if (s == "--notes") {
      if (!value(&a->notes)) return usage_error("--notes needs a file");
    } else if (s == "--backend") {
      if (!value(&x)) return usage_error("--backend needs a value");
      a->request.backends.push_back(x);
      a->request.load_backends.push_back(x);
    } else if (s == "--library") {
      if (!value(&x)) return usage_error("--library needs NAME[@LABEL]=PATH (e.g. blis@next=/opt/blis/libblis.so.4)");
      auto o = kc::parse_library_override(x);
      if (!o.ok()) return usage_error(o.status().message());
      a->request.libraries.push_back(*o);
    } else if (s == "--plugin") {
      if (!value(&x)) return usage_error("--plugin needs a path");
      a->request.plugin_paths.push_back(x);
    } else if (s == "--seed") {
      if (!value(&x) || !parse_u64(x, &a->request.seed)) return usage_error("--seed needs a number");
    } else if (s == "--samples") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n == 0) return usage_error("--samples needs a positive number");
      a->request.samples = static_cast<std::int64_t>(n);
    } else if (s == "--sample") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n)) return usage_error("--sample needs a number");
      a->request.sample_index = static_cast<std::int64_t>(n);
    } else if (s == "--config") {
      if (!value(&x)) return usage_error("--config needs \"K=V ...\"");
      a->request.config = x;
    } else if (s == "--format") {
      if (!value(&a->format)) return usage_error("--format needs a value");
      a->format_given = true;
      if (kc::report::find_reporter(a->format) == nullptr && a->format != "mermaid" && a->format != "dot")
        return usage_error("unknown format '" + a->format + "' (" + kc::report::reporter_names() +
                           "; graph: mermaid | dot | json)");
    } else if (s == "--trace") {
      if (!value(&a->request.trace_path)) return usage_error("--trace needs a file");
    } else if (s == "--shard") {
      if (!value(&a->shard)) return usage_error("--shard needs I/N (shard I, from 0, of N) or auto");
    } else if (s == "--sign-key") {
      if (!value(&a->sign_key)) return usage_error("--sign-key needs a secret key file (kc keygen --out FILE)");
    } else if (s == "--key") {
      if (!value(&a->key)) return usage_error("--key needs a public key file (FILE.pub from kc keygen)");
    } else if (s == "--shard-balance") {
      if (!value(&a->request.shard_balance))
        return usage_error("--shard-balance needs an earlier run's directory or record.json");
    } else if (s == "--resume") {
      if (!value(&a->resume)) return usage_error("--resume needs the run's --out DIR (grade) or trace FILE (check)");
    } else if (s == "--out") {
      if (!value(&a->out)) return usage_error("--out needs a directory");
      a->out_given = true;
    } else if (s == "--baseline") {
      if (!value(&a->baseline)) return usage_error("--baseline needs a file (docs/diff.md)");
    } else if (s == "--fail-on") {
      if (!value(&a->fail_on)) return usage_error("--fail-on needs rules, e.g. new-violation,latency:1.10");
    } else if (s == "--junit") {
      if (!value(&a->junit)) return usage_error("--junit needs a file");
    } else if (s == "--html") {
      if (!value(&a->html)) return usage_error("--html needs a file");
    } else if (s == "--timing") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n < 20 || n > 100000)
        return usage_error("--timing needs a number of warm calls in [20, 100000] (the diff's tests need >= 20)");
      a->request.timing_calls = static_cast<int>(n);
    } else if (s == "--to") {
      if (!value(&a->to)) return usage_error("--to needs kc or yaml (fmt) or a version (retest-plan)");
    } else if (s == "--isolate") {
      const std::string choices = kc::enum_choices(kc::isolate::mode_table());
      if (!value(&x)) return usage_error("--isolate needs " + choices);
      const auto mode = kc::enum_parse(kc::isolate::mode_table(), x);
      if (!mode) return usage_error("unknown isolation '" + x + "' (" + choices + ")");
      a->request.isolation = *mode;
    } else if (s == "--timeout") {
      char* end = nullptr;
      const double t = value(&x) ? std::strtod(x.c_str(), &end) : 0;
      if (end == nullptr || *end != '\0' || !(t > 0)) return usage_error("--timeout needs a positive number of seconds");
      a->request.limits.timeout_s = t;
    } else if (s == "--memory-limit") {
      const auto bytes = value(&x) ? kc::isolate::parse_bytes(x) : std::nullopt;
      if (!bytes || *bytes <= 0) return usage_error("--memory-limit needs a size such as 512M or 4G");
      a->request.limits.memory_bytes = *bytes;
    } else if (s == "--memory-budget") {
      const auto bytes = value(&x) ? kc::isolate::parse_bytes(x) : std::nullopt;
      if (!bytes || *bytes <= 0) return usage_error("--memory-budget needs a size such as 8G");
      a->request.limits.budget_bytes = *bytes;
    } else if (s == "--compute-sanitizer") {
      if (!value(&x)) return usage_error("--compute-sanitizer needs memcheck, initcheck or racecheck");
      a->sanitizer = kc::sanitizer::parse_tool(x);
      if (!a->sanitizer)
        return usage_error(std::string("--compute-sanitizer '").append(x).append(
            "': expected memcheck, initcheck or racecheck"));
    } else if (s == "--affected") {
      if (!value(&a->affected)) return usage_error("--affected needs a contract id");
    } else if (s == "--dir") {
      if (!value(&a->dir)) return usage_error("--dir needs a directory");
    } else if (s == "--level") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n < 1 || n > 4) return usage_error("--level needs 1, 2, 3 or 4");
      a->ladder.up_to = static_cast<kc::ladder::Level>(n);
    } else if (s == "--inputs") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n == 0) return usage_error("--inputs needs a positive number");
      a->ladder.property_inputs = static_cast<std::int64_t>(n);
    } else if (s == "--exhaustive-fp32") {
      a->ladder.exhaustive_fp32 = true;
    } else if (s == "--fraction") {
      char* end = nullptr;
      const double f = value(&x) ? std::strtod(x.c_str(), &end) : 0;
      if (end == nullptr || *end != '\0' || !(f > 0 && f <= 1)) return usage_error("--fraction needs a number in (0, 1]");
      a->ladder.exhaustive_fraction = f;
    } else if (s == "--threads") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n == 0) return usage_error("--threads needs a positive number");
      a->ladder.threads = static_cast<int>(n);
    } else if (s == "--jobs" || s == "-j") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n > 4096)
        return usage_error("--jobs needs a number (0: one and a half per core, rounded up)");
      a->request.jobs = static_cast<int>(n);
    } else if (s == "--fast") {
      a->request.fast = true;
    } else if (s == "--fast-probes") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n < 1 || n > 64)
        return usage_error("--fast-probes needs a number of probe vectors in [1, 64]");
      a->request.fast_probes = static_cast<int>(n);
      a->fast_tuned = true;
    } else if (s == "--fast-samples") {
      std::uint64_t n = 0;
      if (!value(&x) || !parse_u64(x, &n) || n < 1 || n > 1000000)
        return usage_error("--fast-samples needs a number of sampled elements (or rows) in [1, 1000000]");
      a->request.fast_samples = static_cast<std::int64_t>(n);
      a->fast_tuned = true;
    } else if (s == "--progress-every") {
      char* end = nullptr;
      const double t = value(&x) ? std::strtod(x.c_str(), &end) : -1;
      if (end == nullptr || *end != '\0' || !(t >= 0)) return usage_error("--progress-every needs a number of seconds (0: none)");
      a->progress_every = t;
    } else if (s == "--strict") {
      a->strict = true;
    } else if (s == "--allow-empty") {
      a->request.allow_empty = true;
    } else if (s == "--junit-not-applicable") {
      a->junit_options.include_not_applicable = true;
    } else if (s == "--no-color") {
      a->color = false;
    } else if (s == "--color") {
      a->color = true;
    } else if (!s.empty() && s[0] == '-') {
      const std::string near = kc::cli::nearest_flag(s);
      return usage_error("unknown option '" + s + "'" + (near.empty() ? "" : " — did you mean '" + near + "'?"));
    } else if (a->command.empty()) {
      a->command = s;
      g_command = s;
    } else {
      a->positional.push_back(s);
    }
  }
  if (a->fast_tuned && !a->request.fast) return usage_error("--fast-probes and --fast-samples need --fast");
  return -1;
}

/// What the renderers need beyond the result, from the flags.
kc::report::ReportOptions report_options(const Args& a) {
  kc::report::ReportOptions o;
  o.color = a.color;
  o.junit = a.junit_options;
  return o;
}

/// The result in --format (kc/reporter.h).
std::string render(const CheckResult& r, const Args& a) {
  const kc::report::Reporter* reporter = kc::report::find_reporter(a.format);
  return reporter ? reporter->render(r, report_options(a)) : kc::report::render_table(r, a.color);
}

/// --affected ID: the contract filter becomes ID and everything downstream of it.
int select_affected(Args& a) {
  auto loaded = kc::engine::load_contracts(a.request.paths);
  const kc::graph::Graph g = kc::graph::build_graph(loaded.contracts, loaded.files);
  const auto ids = kc::graph::affected(g, a.affected);
  if (ids.empty()) {
    std::vector<std::string> known;
    for (const auto& n : g.nodes) known.push_back(n.id);
    const std::string near = kc::lang::nearest_word(a.affected, known);
    return usage_error("--affected: no contract '" + a.affected + "'" +
                       (near.empty() ? "" : " — did you mean '" + near + "'?"));
  }
  std::cerr << "affected by " << a.affected << ":";
  for (const auto& id : ids) std::cerr << " " << id;
  std::cerr << "\n";
  a.request.contracts = ids;
  return -1;
}

/// --compute-sanitizer: `kc check` with the same arguments (less this flag
/// and --trace) again under compute-sanitizer; its findings turn the one
/// case into an error verdict. Returns -1 to go on, else an exit code.
int run_under_sanitizer(const Args& a, CheckResult& r) {
  const kc::sanitizer::Tool tool = *a.sanitizer;
  if (r.cases.size() != 1) {
    std::cerr << "kc: --compute-sanitizer runs one case; this selection has " << r.cases.size()
              << " (narrow it with --contract, --impl, --config)\n";
    return kExitUsage;
  }
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::string> child = {self.empty() ? std::string("kc") : self};
  for (std::size_t i = 0; i < a.argv.size(); ++i) {
    const std::string& s = a.argv[i];
    if (s == "--compute-sanitizer" || s == "--trace" || s == "--isolate") {
      ++i;
      continue;
    }
    if (s.rfind("--compute-sanitizer=", 0) == 0 || s.rfind("--trace=", 0) == 0 || s.rfind("--isolate=", 0) == 0)
      continue;
    child.push_back(s);
  }
  // The kernel runs in the process compute-sanitizer launched, not in a
  // worker forked from it (a CUDA plugin would start CUDA in its worker).
  child.insert(child.end(), {"--isolate", "none"});
  const double timeout_s = 60 + 10 * a.request.limits.timeout_s;
  const auto binary = kc::sanitizer::find_binary();
  auto report = kc::sanitizer::run(*binary, tool, child, timeout_s);
  kc::engine::CaseResult& c = r.cases.front();
  if (!report.ok()) {
    c.verdict = kc::engine::Verdict::kError;
    c.reason = std::string("compute-sanitizer ") + kc::sanitizer::tool_name(tool) + ": " + report.status().message();
    return -1;
  }
  kc::sanitizer::apply(*report, tool, c);
  if (report->errors == 0)
    c.evidence.notes.push_back(std::string("compute-sanitizer ") + kc::sanitizer::tool_name(tool) + ": 0 errors");
  return -1;
}

/// --isolate valgrind: every judged case of the run again, one `kc check` per
/// case (that contract, that impl, only its backend, in-process) under
/// valgrind memcheck; errors during a kernel call make the case an error.
constexpr std::size_t kMaxValgrindCases = 16;

int run_under_valgrind(const Args& a, CheckResult& r) {
  const auto binary = kc::memcheck::find_binary();
  std::vector<kc::engine::CaseResult*> judged;
  for (auto& c : r.cases)
    if (c.verdict == kc::engine::Verdict::kConforming || c.verdict == kc::engine::Verdict::kViolation ||
        c.verdict == kc::engine::Verdict::kError)
      judged.push_back(&c);
  if (judged.size() > kMaxValgrindCases) {
    std::cerr << "kc: --isolate valgrind runs each judged case again under valgrind (about 20-50x slower); this "
                 "selection judged "
              << judged.size() << " cases, more than " << kMaxValgrindCases
              << " (narrow it with --contract, --impl, --config)\n";
    return kExitUsage;
  }
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  // What the rerun keeps of the first run's arguments: what decides the inputs.
  static const std::vector<std::string> kept = {"--seed",    "--samples", "--config",       "--sample",
                                                "--plugin",  "--library", "--timeout", "--memory-limit"};
  std::vector<std::string> passed;
  for (std::size_t i = 0; i < a.argv.size(); ++i) {
    const std::string& s = a.argv[i];
    for (const auto& k : kept) {
      if (s == k && i + 1 < a.argv.size()) {
        passed.push_back(s);
        passed.push_back(a.argv[++i]);
      } else if (s.rfind(k + "=", 0) == 0) {
        passed.push_back(s);
      }
    }
  }
  for (kc::engine::CaseResult* c : judged) {
    std::vector<std::string> child = {self.empty() ? std::string("kc") : self,
                                      "check",
                                      c->contract_file,
                                      "--contract",
                                      c->contract_id,
                                      "--impl",
                                      c->impl,
                                      "--backend",
                                      c->backend,
                                      "--isolate",
                                      "none",
                                      "--no-color"};
    child.insert(child.end(), passed.begin(), passed.end());
    // Memcheck runs a kernel 20-50x slower than natively; the deadline scales with the case's own time.
    const double timeout_s = 120 + 60 * c->seconds;
    auto report = kc::memcheck::run(*binary, child, timeout_s);
    if (!report.ok()) {
      c->verdict = kc::engine::Verdict::kError;
      c->reason = "valgrind memcheck: " + report.status().message();
      continue;
    }
    kc::memcheck::apply(*report, *c);
  }
  return -1;
}

/// --resume DIR|FILE: the run's report directory and trace (docs/trace.md).
int resolve_resume(Args& a, bool grade) {
  std::error_code ec;
  const bool dir = grade || std::filesystem::is_directory(a.resume, ec);
  const std::string trace = dir ? a.resume + "/trace.jsonl" : a.resume;
  if (dir) {
    if (a.out_given && a.out != a.resume)
      return usage_error("--resume " + a.resume + " continues the run written to that directory; drop --out " + a.out);
    a.out = a.resume;
    a.out_given = true;
  }
  if (!a.request.trace_path.empty() && a.request.trace_path != trace)
    return usage_error("--resume continues the trace " + trace + "; drop --trace " + a.request.trace_path);
  a.request.trace_path = trace;
  a.request.resume = true;
  return -1;
}

/// The command that continues an interrupted run: this one, with --resume TARGET.
std::string resume_command(const Args& a, const std::string& target) {
  const auto quote = [](const std::string& s) {
    if (!s.empty() && s.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;!#~") == std::string::npos) return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string cmd = "kc";
  for (std::size_t i = 0; i < a.argv.size(); ++i) {
    if (a.argv[i] == "--resume") {
      ++i;
      continue;
    }
    if (a.argv[i].rfind("--resume=", 0) == 0) continue;
    cmd += " " + quote(a.argv[i]);
  }
  return cmd + " --resume " + quote(target);
}

void sign_outputs(const Args& a, const std::vector<std::string>& files, std::vector<std::string>* write_errors);

/// --shard I/N or auto (kc/shard.h), and --shard-balance's durations.
int resolve_shard(Args& a) {
  auto sh = a.shard == "auto" ? kc::shard::from_environment() : kc::shard::parse(a.shard);
  if (!sh.ok()) return usage_error(sh.status().message());
  a.request.shard = *sh;
  // GoogleTest's runner asks a sharding-aware program to create this file.
  if (!sh->status_file.empty())
    if (kc::Status s = kc::report::write_file(sh->status_file, ""); !s.ok()) {
      std::cerr << "kc: cannot write " << s.message() << "\n";
      return kExitInternal;
    }
  if (!a.request.shard_balance.empty()) {
    auto d = a.command == "ladder" ? kc::ladder::read_durations(a.request.shard_balance)
                                   : kc::shard::read_durations(a.request.shard_balance);
    if (!d.ok()) return usage_error("--shard-balance " + d.status().message());
    a.request.shard_durations = std::move(*d);
  }
  std::cerr << "kc: shard " << sh->text() << " (" << sh->source << ")\n";
  return -1;
}

/// The matrix on stdout and the report set in DIR (kc grade, kc merge): every
/// format of kc/reporter.h that names a file.
void write_reports(CheckResult& r, const std::string& dir, const Args& a) {
  std::cout << kc::report::render_matrix(r, a.color);
  kc::report::ReportOptions o = report_options(a);
  o.color = false;  // files hold no terminal colour
  for (const auto& reporter : kc::report::reporters()) {
    if (reporter.file.empty()) continue;
    if (kc::Status s = kc::report::write_file(dir + "/" + std::string(reporter.file), reporter.render(r, o)); !s.ok())
      r.write_errors.push_back(s.message());
  }
}

/// "45s", "3m05s", "1h02m".
std::string duration_text(double s) {
  const long t = std::lround(std::max(0.0, s));
  char buf[32];
  if (t < 60) std::snprintf(buf, sizeof buf, "%lds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  return buf;
}

/// Progress of kc check / grade on stderr, fed by the engine's callback. On a
/// terminal: one line rewritten in place after every case. Elsewhere (a CI
/// log): a line every `every_s` seconds (0: none) with the cases done and an
/// estimate of the time left, so a long run is visibly alive.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(double every_s)
      : tty_(isatty(STDERR_FILENO) != 0), every_s_(every_s), start_(std::chrono::steady_clock::now()),
        last_(start_) {}

  void update(const kc::engine::CheckProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    // The rate of the cases this run ran (read-back ones cost nothing).
    const std::size_t ran = p.done - std::min(p.done, p.resumed);
    std::string left;
    if (ran > 0 && p.done < p.planned && elapsed > 0)
      left = "about " + duration_text(elapsed / static_cast<double>(ran) * static_cast<double>(p.planned - p.done)) +
             " left";
    if (tty_) {
      std::fprintf(stderr, "\r[%zu/%zu] %-12s %-28s %-12s %s\033[K", p.done, p.planned,
                   p.last ? p.last->contract_id.c_str() : "", p.last ? p.last->impl.c_str() : "",
                   p.last ? std::string(kc::engine::verdict_name(p.last->verdict)).c_str() : "", left.c_str());
      std::fflush(stderr);
      shown_ = true;
      return;
    }
    if (!(every_s_ > 0) || p.done >= p.planned) return;
    if (std::chrono::duration<double>(now - last_).count() < every_s_) return;
    last_ = now;
    const double pct = p.planned > 0 ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.planned) : 100;
    std::fprintf(stderr, "kc: progress: %zu of %zu cases (%.0f%%), %s elapsed%s%s\n", p.done, p.planned, pct,
                 duration_text(elapsed).c_str(), left.empty() ? "" : ", ", left.c_str());
    std::fflush(stderr);
  }

  /// Clears the terminal line.
  void finish() {
    if (tty_ && shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool tty_;
  double every_s_;
  std::chrono::steady_clock::time_point start_, last_;
  bool shown_ = false;
};

int cmd_check(Args& a, bool grade) {
  a.request.paths = a.positional.empty() ? std::vector<std::string>{KC_DEFAULT_CONTRACTS} : a.positional;
  if (!a.resume.empty())
    if (int rc = resolve_resume(a, grade); rc >= 0) return rc;
  if (!a.affected.empty())
    if (int rc = select_affected(a); rc >= 0) return rc;
  if (!a.shard.empty())
    if (int rc = resolve_shard(a); rc >= 0) return rc;
  if (!a.sign_key.empty() && !grade && a.request.trace_path.empty())
    return usage_error("--sign-key signs the run's trace: give kc check a --trace FILE");
  ProgressPrinter progress(a.progress_every);
  a.request.on_progress = [&progress](const kc::engine::CheckProgress& p) { progress.update(p); };
  if (grade && a.request.trace_path.empty()) a.request.trace_path = a.out + "/trace.jsonl";
  if (grade) {
    if (kc::Status s = kc::report::write_file(a.out + "/.kc", "kc report directory\n"); !s.ok()) {
      std::cerr << "kc: cannot write " << s.message() << "\n";
      return kExitInternal;
    }
  }
  if (a.sanitizer) {
    if (grade) return usage_error("--compute-sanitizer works with kc check, not kc grade");
    if (auto why = kc::sanitizer::unavailable_reason()) {
      std::cerr << "kc: --compute-sanitizer " << kc::sanitizer::tool_name(*a.sanitizer) << ": not run: " << *why
                << "\n";
      return kExitUsage;
    }
  }
  const bool valgrind = a.request.isolation == kc::isolate::Mode::kValgrind;
  if (valgrind) {
    if (grade) return usage_error("--isolate valgrind works with kc check, not kc grade (it reruns each case)");
    if (!kc::memcheck::find_binary()) {
      std::cerr << "kc: --isolate valgrind: not run: valgrind not found ($KC_VALGRIND, PATH); "
                   "scripts/install-deps.sh installs it\n";
      return kExitUsage;
    }
  }
  // A baseline that cannot be read is a usage error before anything runs.
  std::optional<kc::report::Baseline> baseline;
  if (!a.baseline.empty()) {
    auto b = kc::report::read_baseline(a.baseline);
    if (!b.ok()) return usage_error("--baseline " + b.status().message());
    baseline = std::move(*b);
  }
  // Ctrl-C (or SIGTERM): no new case starts, workers end, the trace keeps whole records.
  kc::install_interrupt_handlers();
  CheckResult r = kc::engine::run_check(a.request);
  progress.finish();
  if (r.cases.empty() && !r.write_errors.empty()) {  // the trace could not be opened: nothing ran
    for (const auto& e : r.write_errors) std::cerr << "kc: cannot write " << e << "\n";
    return kExitInternal;
  }
  if (r.exit_code() == kExitUsage) {
    // A selection that matches nothing or contracts with errors: nothing ran.
    for (const auto& d : r.diagnostics) std::cerr << d.render();
    if (!grade && a.format != "table") std::cout << render(r, a);
    return kExitUsage;
  }
  if (r.interrupted) {
    // No reports: they would hold part of the run. The trace holds what finished.
    const int sig = kc::interrupt_signal();
    std::cerr << "kc: interrupted by " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": " << r.cases.size() << " of "
              << r.planned << " cases finished";
    if (r.resumed > 0) std::cerr << " (" << r.resumed << " read back from the trace)";
    std::cerr << "; no report written\n";
    for (const auto& e : r.write_errors) std::cerr << "kc: cannot write " << e << "\n";
    if (!r.trace_path.empty()) {
      std::cerr << "kc: trace " << r.trace_path << " last hash " << r.trace_last_hash << "\n";
      std::cerr << "kc: continue with: " << resume_command(a, grade ? a.out : r.trace_path) << "\n";
    } else {
      std::cerr << "kc: no --trace was written, so nothing can be resumed: run it again (with --trace FILE to make "
                   "it resumable)\n";
    }
    return r.exit_code();
  }
  if (a.sanitizer)
    if (int rc = run_under_sanitizer(a, r); rc >= 0) return rc;
  if (valgrind)
    if (int rc = run_under_valgrind(a, r); rc >= 0) return rc;
  if (grade) {
    write_reports(r, a.out, a);
    std::cout << "\nreports: " << a.out << "/" << kc::report::report_set_pattern() << ", trace: " << a.request.trace_path
              << ", run record: " << a.out << "/record.json\n";
    const kc::engine::SampleCacheStats& u = r.reuse;
    std::cout << "shared across impls: inputs generated " << u.inputs_generated << ", reused " << u.inputs_reused
              << "; oracle answers computed " << u.oracles_computed << ", reused " << u.oracles_reused << "\n";
  } else {
    std::cout << render(r, a);
  }
  // The run record `kc diff` and `kc baseline update` read (docs/diff.md).
  if (grade || a.out_given) {
    const std::string path = a.out + "/record.json";
    if (kc::Status s = kc::report::write_file(path, kc::report::render_record(kc::report::make_record(r, a.request)));
        !s.ok())
      r.write_errors.push_back(s.message());
    else if (!grade)
      std::cerr << "kc: run record " << path << "\n";
  }
  sign_outputs(a, {r.trace_path, grade || a.out_given ? a.out + "/record.json" : ""}, &r.write_errors);
  if (const std::string why = r.nothing_judged(); !why.empty())
    std::cerr << "kc: " << why << (a.request.allow_empty ? "" : " (--allow-empty accepts this)") << "\n";
  // The anchor: deleting records from the end leaves a valid chain; this hash does not match it.
  if (!r.trace_path.empty())
    std::cerr << "kc: trace " << r.trace_path << " last hash " << r.trace_last_hash << "\n";
  for (const auto& e : r.write_errors) std::cerr << "kc: cannot write " << e << "\n";
  // Libraries that died or hung while loading (in their probe child) are said
  // here; one given with --plugin (or vetted) fails the run: it was not checked.
  int rc = r.exit_code();
  if (baseline) {
    const kc::report::BaselineOutcome b = kc::report::apply_baseline(*baseline, r, kc::report::today_utc());
    for (const auto& w : b.warnings) std::cerr << "kc: warning: baseline " << w << "\n";
    for (const auto& u : b.unexcused) std::cerr << "kc: not in the baseline: " << u << "\n";
    std::cerr << "kc: baseline " << a.baseline << ": " << b.excused << " known violation" << (b.excused == 1 ? "" : "s")
              << " excused, " << b.unexcused.size() << " not\n";
    rc = b.exit_code;
  }
  for (const std::string& line : kc::library_load_failures()) {
    std::cerr << "kc: unavailable: " << line << "\n";
    for (const std::string& p : a.request.plugin_paths)
      if (line.rfind(p + ": ", 0) == 0 && rc != kExitInternal) rc = kExitViolation;
  }
  return rc;
}

/// kc vet FILE [CONTRACTS...]: build FILE against the plugin ABI, grade its
/// impls (only those) against the standard suite, write the reports.
int cmd_vet(Args& a) {
  if (a.positional.empty()) return usage_error("vet needs a kernel file (.c, .cpp, .cu, .cl) or a plugin .so");
  const std::string source = a.positional.front();
  a.positional.erase(a.positional.begin());
  const char* env_include = std::getenv("KC_INCLUDE_DIR");
  const std::string include_dir =
      env_include ? std::string(env_include) : kc::installed_or("include", "kc/kc_plugin.h", KC_BUILD_INCLUDE_DIR);
  auto built = kc::engine::build_kernel_library(source, a.out + "/build", include_dir);
  if (!built.ok()) {
    std::cerr << "kc vet: " << built.status().message() << "\n";
    return kExitUsage;
  }
  if (!built->command.empty()) std::cout << "built: " << built->command << "\n";
  if (!built->log.empty()) std::cout << built->log;
  if (!built->opencl_source.empty()) {
    a.request.opencl_sources.push_back(built->opencl_source);
    a.request.backends = {"opencl_user"};
  } else {
    a.request.plugin_paths.push_back(built->library);
    a.request.backends = {"plugin"};
  }
  return cmd_check(a, true);
}

int cmd_calibrate(Args& a) {
  a.request.paths = a.positional.empty() ? std::vector<std::string>{KC_DEFAULT_CONTRACTS} : a.positional;
  if (!a.shard.empty())
    if (int rc = resolve_shard(a); rc >= 0) return rc;
  auto r = kc::engine::run_calibration(a.request);
  std::cout << kc::engine::render_calibration(r, a.color);
  return r.exit_code();
}

int cmd_lint(const Args& a) {
  if (a.positional.empty()) return usage_error("lint needs at least one contract file or directory");
  auto loaded = kc::engine::load_contracts(a.positional);
  int rc = kExitOk;
  // A `depends` id outside the linted files may live in a file not given:
  // a warning here (with the nearest id); `kc graph` makes it an error.
  for (auto& d : kc::lang::resolve_depends(loaded.contracts)) {
    if (d.message.find("unknown contract") != std::string::npos) d.severity = kc::lang::Diagnostic::Severity::kWarning;
    loaded.diagnostics.push_back(std::move(d));
  }
  // Reference names only the engine's tables hold (properties, named oracles).
  for (auto& d : kc::engine::check_reference_names(loaded.contracts, loaded.files))
    loaded.diagnostics.push_back(std::move(d));
  // (load_contracts has already made a reference clause whose option the
  // scope's op's oracle does not honour descriptive: `kc list oracle_options`.)
  // A metric kc does not measure under the contract's tolerance: a warning
  // (kc judges what the tolerance says), a failure under --strict.
  std::size_t unit_mismatches = 0;
  for (auto& d : kc::engine::check_metric_units(loaded.contracts, loaded.files)) {
    ++unit_mismatches;
    loaded.diagnostics.push_back(std::move(d));
  }
  for (const auto& d : loaded.diagnostics) {
    std::cerr << d.render() << "\n";
    if (d.severity == kc::lang::Diagnostic::Severity::kError) rc = kExitUsage;
  }
  kc::Document doc;
  doc.contracts = loaded.contracts;
  const auto findings = kc::lang::lint(doc);
  for (const auto& f : findings) {
    std::cout << f.loc.file << ":" << f.loc.line << ":" << f.loc.column << ": " << f.contract << " "
              << f.clause << ": " << f.message << "\n";
  }
  std::size_t executable = 0;
  for (const auto& c : loaded.contracts) executable += c.executable() ? 1 : 0;
  std::size_t errors = 0;
  for (const auto& d : loaded.diagnostics) errors += d.severity == kc::lang::Diagnostic::Severity::kError ? 1 : 0;
  std::cout << loaded.contracts.size() << " contracts: " << executable << " executable, "
            << loaded.contracts.size() - executable << " descriptive";
  if (errors > 0) std::cout << ", " << errors << " error(s): nothing runs until they are fixed";
  if (loaded.diagnostics.size() > errors) std::cout << ", " << loaded.diagnostics.size() - errors << " warning(s)";
  std::cout << "\n";
  // --strict: a descriptive clause is judged under_specified, never enforced.
  if (a.strict && rc == kExitOk && executable < loaded.contracts.size()) {
    std::cerr << "kc lint --strict: " << loaded.contracts.size() - executable
              << " contract(s) with descriptive clauses (listed above); kc cannot enforce them\n";
    rc = kExitViolation;
  }
  if (a.strict && rc == kExitOk && unit_mismatches > 0) {
    std::cerr << "kc lint --strict: " << unit_mismatches << " metric(s) kc does not measure as written (warnings above)\n";
    rc = kExitViolation;
  }
  return rc;
}

int cmd_fmt(const Args& a) {
  if (a.positional.size() != 1) return usage_error("fmt needs exactly one file");
  auto parsed = kc::lang::parse_file(a.positional[0]);
  if (parsed.has_errors()) {
    for (const auto& d : parsed.diagnostics) std::cerr << d.render() << "\n";
    return kExitUsage;
  }
  std::string to = a.to;
  if (to.empty()) {
    const auto& p = a.positional[0];
    to = (p.size() > 5 && (p.ends_with(".yaml") || p.ends_with(".yml"))) ? "yaml" : "kc";
  }
  if (to == "yaml") std::cout << kc::lang::print_yaml(parsed.document);
  else if (to == "kc") std::cout << kc::lang::print_kc(parsed.document);
  else return usage_error("--to must be kc or yaml");
  return kExitOk;
}

const std::string kLanguageTables =
    "probes | aggregates | metrics | observe | signatures | oracles | oracle_options | classes | declarations | "
    "policies | precisions | retest";

/// Prints rows as aligned columns, or (md) as a Markdown table with a header.
void print_rows(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows, bool md) {
  if (md) {
    auto cell = [](std::string v) {
      std::string out;
      for (char ch : v) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
      return out;
    };
    std::string line = "|", rule = "|";
    for (const auto& h : header) {
      line += " " + h + " |";
      rule += " --- |";
    }
    std::cout << line << "\n" << rule << "\n";
    for (const auto& r : rows) {
      std::string l = "|";
      for (const auto& v : r) l += " " + (v.empty() ? std::string("") : cell(v)) + (v.empty() ? "|" : " |");
      std::cout << l << "\n";
    }
    return;
  }
  for (const auto& r : rows) {
    std::string l;
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::string v = r[i];
      if (i + 1 < r.size() && v.size() < 24) v.resize(24, ' ');
      l += (i ? " " : "") + v;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    std::cout << l << "\n";
  }
}

std::vector<std::vector<std::string>> word_rows(std::span<const kc::WordInfo> table, bool with_detail) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& w : table) {
    std::vector<std::string> r = {std::string(w.name) + std::string(w.args), std::string(w.meaning)};
    if (with_detail) r.emplace_back(w.detail);
    rows.push_back(std::move(r));
  }
  return rows;
}

/// `kc list probes|aggregates|...`: the language's tables (kc/vocabulary.h,
/// kc/signature.h, the algebraic properties). -1 when `what` is none of them.
int list_language_table(const std::string& what, bool md) {
  if (what == "probes") {
    print_rows({"probe", "what it injects", "ops"}, word_rows(kc::probe_table(), true), md);
  } else if (what == "aggregates") {
    print_rows({"statistic", "meaning"}, word_rows(kc::aggregate_table(), false), md);
  } else if (what == "metrics") {
    print_rows({"metric", "meaning", "judged under"}, word_rows(kc::metric_table(), true), md);
  } else if (what == "observe") {
    print_rows({"observe", "meaning"}, word_rows(kc::observe_table(), false), md);
  } else if (what == "classes") {
    print_rows({"class", "family"}, word_rows(kc::contract_class_table(), false), md);
  } else if (what == "retest") {
    print_rows({"retest", "when a library update runs the contract again"}, word_rows(kc::retest_table(), false), md);
  } else if (what == "policies") {
    std::vector<std::vector<std::string>> rows;
    for (auto r : word_rows(kc::policy_table(), true)) {
      if (r[2].empty()) r[2] = "the declaration key's values";
      rows.push_back(std::move(r));
    }
    print_rows({"declared_policy", "what its judge decides", "values of in {...}"}, rows, md);
  } else if (what == "precisions") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : kc::all_dtypes()) {
      char max[32];
      std::snprintf(max, sizeof max, "%g", t.max_finite);
      rows.push_back({std::string(t.name),
                      t.is_float ? std::to_string(t.mantissa_bits) + " fraction bits, " + std::to_string(t.exponent_bits) +
                                       " exponent bits, max " + max + (t.has_inf ? "" : ", no infinity")
                                 : std::to_string(8 * t.storage_bytes) + "-bit integer"});
    }
    print_rows({"precision", "format"}, rows, md);
  } else if (what == "declarations") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& k : kc::declaration_key_table()) {
      std::string values;
      for (const auto& v : kc::declaration_values(k)) values += (values.empty() ? "" : " | ") + v;
      rows.push_back({std::string(k.name), std::string(k.meaning), values.empty() ? "any" : values});
    }
    print_rows({"key", "meaning", "values"}, rows, md);
  } else if (what == "signatures") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& sg : kc::signature_table()) {
      const std::string name = std::string(sg.name) + (sg.args.empty() ? "" : "(" + std::string(sg.args) + ")");
      rows.push_back({name, std::string(sg.meaning),
                      sg.members.empty() ? std::string(sg.source) : "family: " + std::string(sg.members)});
    }
    print_rows({"signature", "meaning", "produced by"}, rows, md);
  } else if (what == "oracles") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& o : kc::oracle_table())
      rows.push_back({std::string(o.name) + " " + std::string(o.args), std::string(o.meaning)});
    for (const auto& p : kc::obligation::properties()) {
      std::string ops;
      for (const auto& o : p.ops) ops += (ops.empty() ? "" : ", ") + o;
      rows.push_back({"algebraic " + p.name, p.statement + " (" + ops + ")"});
    }
    for (const auto& o : kc::named_oracles()) {
      const char* kind = o.kind == kc::Reference::Kind::kSpec ? "spec " : "stable_algorithm ";
      rows.push_back({kind + std::string(o.name), std::string(o.what) + " (" + std::string(o.op) + ")" +
                                                     (o.needs_mpfr ? "; needs MPFR" : "")});
    }
    print_rows({"reference", "meaning"}, rows, md);
  } else if (what == "oracle_options") {
    print_rows({"op", "option", "values", "meaning"}, kc::engine::oracle_option_rows(), md);
  } else {
    return -1;
  }
  return kExitOk;
}

/// The built-in backends with the --plugin and --library options given; false
/// (the reason on stderr) when registration failed.
bool register_backends(const Args& a, kc::BackendRegistry& reg) {
  kc::BackendOptions opt;
  opt.plugin_paths = a.request.plugin_paths;
  opt.libraries = a.request.libraries;
  if (auto s = kc::register_builtin_backends(reg, opt); !s.ok()) {
    std::cerr << "kc: " << s.to_string() << "\n";
    return false;
  }
  return true;
}

int cmd_list(const Args& a) {
  const std::string what = a.positional.empty() ? "contracts" : a.positional[0];
  if (what == "ops") {
    for (const kc::Op* op : kc::builtin_ops().all()) {
      std::printf("%-14s %s\n", std::string(op->name()).c_str(), std::string(op->summary()).c_str());
      for (const auto& p : op->params())
        std::printf("    %-10s default %-6s %s\n", p.name.c_str(), p.default_value.c_str(), p.help.c_str());
    }
    return kExitOk;
  }
  if (what == "impls") {
    kc::BackendRegistry reg;
    if (!register_backends(a, reg)) return kExitInternal;
    for (const auto& impl : reg.impls()) {
      const auto& d = impl->declaration();
      std::string dts;
      for (auto t : d.dtypes) dts += (dts.empty() ? "" : ",") + std::string(kc::dtype_name(t));
      std::printf("%-28s op=%-12s %-6s acc=%-5s det=%-10s nan=%-14s %s\n", d.name.c_str(), d.op.c_str(),
                  dts.c_str(), d.get("accumulator").c_str(), d.get("determinism").c_str(),
                  d.get("nan").c_str(), d.description.c_str());
    }
    for (const std::string& line : kc::library_load_failures()) std::cerr << "kc: unavailable: " << line << "\n";
    return kExitOk;
  }
  if (what == "contracts") {
    auto loaded = kc::engine::load_contracts({KC_DEFAULT_CONTRACTS});
    for (std::size_t i = 0; i < loaded.contracts.size(); ++i) {
      const auto& c = loaded.contracts[i];
      auto it = c.meta.find("title");
      std::printf("%-16s %-11s %-12s %s\n", c.id.c_str(), c.executable() ? "executable" : "descriptive",
                  c.scope.empty() ? "" : c.scope[0].c_str(), it == c.meta.end() ? "" : it->second.c_str());
    }
    return kExitOk;
  }
  if (what == "suites") {
    const auto paths = a.positional.size() > 1 ? std::vector<std::string>(a.positional.begin() + 1, a.positional.end())
                                               : std::vector<std::string>{KC_DEFAULT_CONTRACTS};
    auto loaded = kc::engine::load_contracts(paths);
    for (const auto& s : loaded.suites) {
      std::string cs, is;
      for (const auto& c : s.contracts) cs += (cs.empty() ? "" : ", ") + c;
      for (const auto& i : s.impls) is += (is.empty() ? "" : ", ") + i;
      std::printf("%-10s tier %-6s contracts %s; impls %s  (%s:%d)\n", s.name.c_str(), s.tier.c_str(),
                  cs.empty() ? "all" : cs.c_str(), is.empty() ? "all" : is.c_str(), s.loc.file.c_str(), s.loc.line);
    }
    return kExitOk;
  }
  if (what == "properties") {  // the algebraic properties `reference algebraic NAME` can name
    for (const auto& p : kc::obligation::properties()) {
      std::string ops;
      for (const auto& o : p.ops) ops += (ops.empty() ? "" : ",") + o;
      std::printf("%-34s %-22s %s\n", p.name.c_str(), ops.c_str(), p.statement.c_str());
    }
    return kExitOk;
  }
  if (int rc = list_language_table(what, a.format == "md"); rc >= 0) return rc;
  return usage_error("list what? contracts | ops | impls | suites | properties | " + kLanguageTables);
}

int cmd_backends(const Args& a) {
  kc::BackendRegistry reg;
  if (!register_backends(a, reg)) return kExitInternal;
  for (const auto& info : reg.infos()) {
    std::printf("%-12s %-12s %s%s%s\n", info.name.c_str(), info.available ? "available" : "unavailable",
                info.version.c_str(), info.version.empty() || info.reason.empty() ? "" : " — ",
                info.reason.c_str());
  }
  return kExitOk;
}

/// One side of `kc latency`'s comparison, as a line.
std::string latency_side_line(const char* label, const kc::engine::LatencySide& side) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %-8s median %.3g x floor (IQR %.3g-%.3g)  path %s  ", label, side.median, side.q1,
                side.q3, side.path.empty() ? "(not reported)" : side.path.c_str());
  return buf + side.config + "\n";
}

int cmd_latency(const Args& a) {
  if (a.positional.size() != 1 || a.inside.empty() || a.outside.empty())
    return usage_error("latency needs IMPL --inside \"K=V ...\" --outside \"K=V ...\"");
  auto inside = kc::engine::parse_config(a.inside);
  if (!inside.ok()) return usage_error("--inside: " + inside.status().message());
  auto outside = kc::engine::parse_config(a.outside);
  if (!outside.ok()) return usage_error("--outside: " + outside.status().message());
  kc::BackendRegistry reg;
  if (!register_backends(a, reg)) return kExitInternal;
  const std::string& name = a.positional[0];
  const std::shared_ptr<const kc::Impl> impl = reg.find_impl(name);
  if (!impl) {
    std::vector<std::string> names;
    for (const auto& i : reg.impls()) names.push_back(i->declaration().name);
    const std::string near = kc::lang::nearest_word(name, names);
    return usage_error("no impl '" + name + "' is available here" + (near.empty() ? "" : " — did you mean '" + near + "'?") +
                       " (kc list impls)");
  }
  kc::engine::LatencyProbe probe;
  probe.mode = a.request.isolation;
  probe.limits = a.request.limits;
  auto j = kc::engine::latency_jump(*impl, *inside, *outside, probe);
  if (!j.ok()) {
    std::cerr << "kc: latency: " << j.status().message() << "\n";
    // Bad input (an impl that refuses the call, a call too small to time) is a
    // usage error; a kernel that crashed, hung or ran out of memory is a finding.
    const kc::StatusCode code = j.status().code();
    if (code == kc::StatusCode::kInternal) return kExitInternal;
    return code == kc::StatusCode::kInvalidArgument || code == kc::StatusCode::kUnimplemented ? kExitUsage
                                                                                              : kExitViolation;
  }
  std::cout << "kc latency: " << name << " (" << impl->declaration().op << "), time per unit of work against the "
            << "host's floor (" << j->inside.work_basis << " inside)\n"
            << latency_side_line("inside", j->inside) << latency_side_line("outside", j->outside)
            << latency_side_line("control", j->control) << "  " << j->note << "\n";
  if (j->contradicts) {
    std::cout << "  contradicts the declaration: " << name << " declares one path (path = "
              << impl->declaration().get("path") << ") for both calls\n";
    return kExitViolation;
  }
  return kExitOk;
}

int cmd_explain(const Args& a) {
  if (a.positional.empty()) return usage_error("explain needs a contract id");
  const std::string& id = a.positional[0];
  auto loaded = kc::engine::load_contracts(
      a.positional.size() > 1 ? std::vector<std::string>(a.positional.begin() + 1, a.positional.end())
                              : std::vector<std::string>{KC_DEFAULT_CONTRACTS});
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < loaded.contracts.size(); ++i) {
    const auto& c = loaded.contracts[i];
    ids.push_back(c.id);
    if (c.id != id) continue;
    std::cout << kc::engine::explain(c, loaded.files[i]);
    return kExitOk;
  }
  std::string near = kc::lang::nearest_word(id, ids);
  return usage_error("no contract '" + id + "'" + (near.empty() ? "" : " — did you mean '" + near + "'?"));
}

int cmd_ladder(Args& a) {
  if (!a.shard.empty())
    if (int rc = resolve_shard(a); rc >= 0) return rc;
  a.ladder.check = a.request;
  a.ladder.check.paths = a.positional.empty() ? std::vector<std::string>{KC_DEFAULT_CONTRACTS} : a.positional;
  a.ladder.evidence_path = kc::ladder::evidence_file(a.out);
  if (isatty(STDERR_FILENO) != 0 || a.ladder.exhaustive_fp32)
    a.ladder.on_progress = [](const kc::ladder::SweepProgress& p) {
      using Domain = kc::ladder::SweepProgress::Domain;
      if (p.domain == Domain::kFp32Patterns)
        std::fprintf(stderr, "  fp32 sweep %s x %s: %.2f%% of 2^32 patterns, %.1f s\n", p.contract.c_str(),
                     p.impl.c_str(), 100 * p.fraction, p.seconds);
      else
        std::fprintf(stderr, "  pair sweep %s x %s: %.2f%% of %llu pairs, %.1f s\n", p.contract.c_str(),
                     p.impl.c_str(), 100 * p.fraction, static_cast<unsigned long long>(p.size), p.seconds);
    };
  const auto r = kc::ladder::run_ladder(a.ladder);
  std::cout << kc::ladder::render_ladder(r);
  std::cout << "evidence: " << a.ladder.evidence_path << "\n";
  if (!a.pin.empty()) {
    // Every shrunk counterexample becomes a regression contract of its own.
    const auto loaded = kc::engine::load_contracts(a.ladder.check.paths);
    std::string text, ids;
    for (const auto& k : r.kernels)
      for (const auto& rung : k.rungs) {
        if (!rung.shrunk) continue;
        for (const auto& c : loaded.contracts) {
          if (c.id != k.contract) continue;
          auto pinned = kc::ladder::pin_counterexample(c, *rung.shrunk, k.impl);
          if (!pinned.ok()) {
            std::cerr << "kc: --pin: " << pinned.status().message() << "\n";
            return kExitUsage;
          }
          text += (text.empty() ? "" : "\n") + pinned->text;
          ids += (ids.empty() ? "" : ", ") + pinned->id;
        }
      }
    if (text.empty()) {
      std::cout << "--pin: no counterexample to pin; " << a.pin << " not written\n";
    } else {
      std::ofstream out(a.pin, std::ios::binary | std::ios::trunc);
      out << text;
      out.close();
      if (!out) {
        std::cerr << "kc: --pin: cannot write " << a.pin << "\n";
        return kExitInternal;
      }
      std::cout << "pinned as regression contracts in " << a.pin << ": " << ids << "\n";
    }
  }
  return r.exit_code();
}

int cmd_status(const Args& a) {
  const std::string dir = !a.dir.empty() ? a.dir : (a.positional.empty() ? a.out : a.positional[0]);
  auto rep = kc::ladder::read_status(dir);
  if (!rep.ok()) {
    std::cerr << "kc status: " << rep.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << kc::ladder::render_status(*rep);
  return kExitOk;
}

int cmd_graph(const Args& a) {
  const auto paths = a.positional.empty() ? std::vector<std::string>{KC_DEFAULT_CONTRACTS} : a.positional;
  auto loaded = kc::engine::load_contracts(paths);
  int rc = kExitOk;
  auto diags = loaded.diagnostics;
  for (auto& d : kc::lang::resolve_depends(loaded.contracts)) diags.push_back(std::move(d));
  for (const auto& d : diags) {
    std::cerr << d.render() << "\n";
    if (d.severity == kc::lang::Diagnostic::Severity::kError) rc = kExitUsage;
  }
  const auto g = kc::graph::build_graph(loaded.contracts, loaded.files);
  const std::string fmt = a.format_given ? a.format : "mermaid";
  if (fmt == "mermaid") std::cout << kc::graph::render_mermaid(g);
  else if (fmt == "dot") std::cout << kc::graph::render_dot(g);
  else if (fmt == "json") std::cout << kc::graph::render_json(g);
  else return usage_error("graph --format must be mermaid, dot or json");
  return rc;
}

int cmd_verify_trace(const Args& a) {
  if (a.positional.size() != 1) return usage_error("verify-trace needs one file");
  auto r = kc::report::verify_trace(a.positional[0]);
  if (!r.ok()) {
    std::cerr << "kc: " << r.status().message() << "\n";
    return kExitViolation;
  }
  std::cout << a.positional[0] << ": " << *r << " records, chain intact\n";
  if (!a.key.empty()) {
    auto v = kc::report::verify_file_signature(a.positional[0], a.key);
    if (!v.ok()) {
      std::cerr << "kc: " << v.status().message() << "\n";
      return v.status().code() == kc::StatusCode::kUnavailable ? kExitUsage : kExitViolation;
    }
    std::cout << a.positional[0] << ": " << *v << "\n";
  }
  return kExitOk;
}

/// --sign-key: sign the evidence files a run wrote (FILE.sig beside each).
void sign_outputs(const Args& a, const std::vector<std::string>& files, std::vector<std::string>* write_errors) {
  if (a.sign_key.empty()) return;
  for (const auto& f : files) {
    if (f.empty()) continue;
    if (kc::Status s = kc::report::sign_file(f, a.sign_key); !s.ok())
      write_errors->push_back(f + ".sig: " + s.message());
    else
      std::cerr << "kc: signed " << f << " (" << f << ".sig)\n";
  }
}

/// kc keygen --out FILE: an Ed25519 key pair for --sign-key and --key.
int cmd_keygen(const Args& a) {
  if (!a.out_given) return usage_error("keygen needs --out FILE (the secret key; FILE.pub gets the public key)");
  if (kc::Status s = kc::report::generate_key_files(a.out); !s.ok()) {
    std::cerr << "kc: keygen: " << s.message() << "\n";
    return s.code() == kc::StatusCode::kInternal ? kExitInternal : kExitUsage;
  }
  std::cout << "kc: secret key " << a.out << " (keep it private), public key " << a.out << ".pub\n";
  return kExitOk;
}

/// kc certify RUN --sign-key KEY [--out DIR]; kc certify verify CERT --key PUB.
int cmd_certify(const Args& a) {
  if (!a.positional.empty() && a.positional[0] == "verify") {
    if (a.positional.size() != 2 || a.key.empty())
      return usage_error("usage: kc certify verify certificate.json --key SIGNER.pub");
    auto v = kc::report::verify_file_signature(a.positional[1], a.key);
    if (!v.ok()) {
      std::cerr << "kc: " << v.status().message() << "\n";
      return v.status().code() == kc::StatusCode::kUnavailable ? kExitUsage : kExitViolation;
    }
    std::cout << a.positional[1] << ": " << *v << "\n";
    return kExitOk;
  }
  if (a.positional.size() != 1 || a.sign_key.empty())
    return usage_error("usage: kc certify RUN_DIR --sign-key KEY [--out DIR] (or: kc certify verify CERT --key PUB)");
  auto cert = kc::report::make_certificate(a.positional[0]);
  if (!cert.ok()) {
    std::cerr << "kc: certify: " << cert.status().message() << "\n";
    return kExitUsage;
  }
  const std::string dir = a.out_given ? a.out : a.positional[0];
  const std::string json = dir + "/certificate.json";
  std::vector<std::string> errors;
  for (const auto& [path, text] : {std::pair{json, cert->json}, std::pair{dir + "/certificate.html", cert->html}})
    if (kc::Status s = kc::report::write_file(path, text); !s.ok()) errors.push_back(s.message());
  if (errors.empty()) sign_outputs(a, {json}, &errors);
  for (const auto& e : errors) std::cerr << "kc: cannot write " << e << "\n";
  if (!errors.empty()) return kExitInternal;
  std::cout << "certificate: " << json << " (signed: " << json << ".sig), " << dir << "/certificate.html\n"
            << cert->summary << "\n";
  return kExitOk;
}

/// kc merge DIR... --out DIR: the shards of one plan as one run (docs/scale-out.md).
int cmd_merge(Args& a) {
  if (a.positional.size() < 1) return usage_error("merge needs the run directories of the shards");
  if (!a.out_given) return usage_error("merge needs --out DIR for the merged run");
  if (std::any_of(a.positional.begin(), a.positional.end(), kc::ladder::is_ladder_dir)) {
    auto m = kc::ladder::merge_evidence(a.positional, a.out);
    if (!m.ok()) {
      std::cerr << "kc: merge: " << m.status().message() << "\n";
      return kExitUsage;
    }
    for (const auto& n : m->notes) std::cerr << "kc: merge: " << n << "\n";
    std::cout << "merged " << m->shards << " ladder shards: " << m->records << " rung records of " << m->kernels
              << " kernels of plan " << m->fingerprint.substr(0, 12) << "...\nevidence: "
              << kc::ladder::evidence_file(a.out) << " (kc status --dir " << a.out << ")\n";
    return 0;
  }
  auto m = kc::report::merge_runs(a.positional);
  if (!m.ok()) {
    std::cerr << "kc: merge: " << m.status().message() << "\n";
    return kExitUsage;
  }
  CheckResult& r = m->result;
  const std::string trace_path = a.out + "/trace.jsonl";
  std::error_code ec;
  if (std::filesystem::exists(trace_path, ec))
    return usage_error("merge: " + trace_path + " exists; the merged trace starts a new chain: give a new --out");
  if (kc::Status s = kc::report::write_file(a.out + "/.kc", "kc report directory\n"); !s.ok()) {
    std::cerr << "kc: cannot write " << s.message() << "\n";
    return kExitInternal;
  }
  for (const auto& n : m->notes) std::cerr << "kc: merge: " << n << "\n";
  // One chain over the merged run, in plan order; each shard's own chain was verified.
  auto trace = kc::report::TraceWriter::open(trace_path);
  if (!trace.ok()) {
    std::cerr << "kc: cannot write " << trace.status().message() << "\n";
    return kExitInternal;
  }
  for (const auto& c : r.cases) {
    if (c.verdict == kc::engine::Verdict::kNotApplicable) continue;
    if (kc::Status s = trace->append(c); !s.ok()) {
      r.write_errors.push_back(s.message());
      break;
    }
  }
  r.trace_path = trace_path;
  r.trace_last_hash = trace->last_hash();
  write_reports(r, a.out, a);
  if (kc::Status s = kc::report::write_file(a.out + "/record.json",
                                            kc::report::render_record(kc::report::merged_record(*m)));
      !s.ok())
    r.write_errors.push_back(s.message());
  std::cout << "\nmerged " << m->shards.size() << " shard runs: " << r.cases.size() << " cases of plan "
            << r.plan_fingerprint.substr(0, 12) << "...\nreports: " << a.out
            << "/" << kc::report::report_set_pattern() << ", trace: " << trace_path << ", run record: " << a.out << "/record.json\n";
  sign_outputs(a, {trace_path, a.out + "/record.json"}, &r.write_errors);
  if (const std::string why = r.nothing_judged(); !why.empty()) std::cerr << "kc: " << why << "\n";
  std::cerr << "kc: trace " << trace_path << " last hash " << r.trace_last_hash << "\n";
  for (const auto& e : r.write_errors) std::cerr << "kc: cannot write " << e << "\n";
  return r.exit_code();
}

/// kc diff OLD NEW: two run records compared per contract x impl.
int cmd_diff(const Args& a) {
  if (a.positional.size() != 2) return usage_error("diff needs two run records: kc diff OLD NEW (directories or record.json)");
  if (a.format != "table" && a.format != "json") return usage_error("diff --format must be table or json");
  auto fail_on = kc::report::parse_fail_on(a.fail_on);
  if (!fail_on.ok()) return usage_error(fail_on.status().message());
  auto old_run = kc::report::read_record(a.positional[0]);
  if (!old_run.ok()) return usage_error(old_run.status().message());
  auto new_run = kc::report::read_record(a.positional[1]);
  if (!new_run.ok()) return usage_error(new_run.status().message());
  kc::report::DiffOptions options;
  options.fail_on = *fail_on;
  const kc::report::DiffResult d = kc::report::diff_records(*old_run, *new_run, options);
  std::cout << (a.format == "json" ? kc::report::render_diff_json(d) : kc::report::render_diff_text(d));
  int rc = d.regression() ? kExitViolation : kExitOk;
  const std::vector<std::pair<std::string, std::string>> files = {
      {a.junit, a.junit.empty() ? "" : kc::report::render_diff_junit(d)},
      {a.html, a.html.empty() ? "" : kc::report::render_diff_html(d, *old_run, *new_run)}};
  for (const auto& [path, content] : files) {
    if (path.empty()) continue;
    if (kc::Status s = kc::report::write_file(path, content); !s.ok()) {
      std::cerr << "kc: cannot write " << s.message() << "\n";
      rc = kExitInternal;
    }
  }
  return rc;
}

/// kc baseline update --out FILE RUN: the run's violations as a baseline.
int cmd_baseline(const Args& a) {
  if (a.positional.size() != 2 || a.positional[0] != "update" || !a.out_given)
    return usage_error("usage: kc baseline update --out FILE RUN (RUN: a run directory or record.json)");
  auto run = kc::report::read_record(a.positional[1]);
  if (!run.ok()) return usage_error(run.status().message());
  std::optional<kc::report::Baseline> previous;
  if (std::filesystem::exists(a.out)) {
    auto b = kc::report::read_baseline(a.out);
    if (!b.ok()) return usage_error("--out " + b.status().message() + " (kc keeps the reasons of the baseline it updates)");
    previous = std::move(*b);
  }
  const std::string text =
      kc::report::render_baseline(*run, previous ? &*previous : nullptr, kc::report::today_utc(), a.positional[1]);
  if (kc::Status s = kc::report::write_file(a.out, text); !s.ok()) {
    std::cerr << "kc: cannot write " << s.message() << "\n";
    return kExitInternal;
  }
  std::size_t n = 0;
  for (const auto& c : run->cases) n += c.verdict == "violation" ? 1 : 0;
  std::cout << "kc: baseline " << a.out << ": " << n << " violating case" << (n == 1 ? "" : "s") << " from "
            << run->source << "\n";
  return kExitOk;
}

/// `kc retest-plan --from V --to V [--notes FILE] [PATHS]`: which contracts an
/// update of the library from V to V must run again (kc/retest.h).
int cmd_retest_plan(const Args& a) {
  if (a.from.empty() || a.to.empty()) return usage_error("retest-plan needs --from VERSION and --to VERSION");
  std::string notes;
  if (!a.notes.empty()) {
    std::ifstream in(a.notes, std::ios::binary);
    if (!in) return usage_error("--notes: cannot read '" + a.notes + "'");
    notes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto paths = a.positional.empty() ? std::vector<std::string>{KC_DEFAULT_CONTRACTS} : a.positional;
  auto loaded = kc::engine::load_contracts(paths);
  int rc = kExitOk;
  for (const auto& d : loaded.diagnostics) {
    std::cerr << d.render() << "\n";
    if (d.severity == kc::lang::Diagnostic::Severity::kError) rc = kExitUsage;
  }
  if (rc != kExitOk) return rc;
  if (loaded.contracts.empty()) return usage_error("retest-plan: no contract in the given paths");
  std::vector<kc::Contract> chosen;
  for (const auto& c : loaded.contracts) {
    bool match = a.request.contracts.empty();
    for (const auto& g : a.request.contracts) match = match || kc::engine::glob_match(g, c.id);
    if (match) chosen.push_back(c);
  }
  const auto plan = kc::retest_plan(chosen, a.from, a.to, notes, !a.notes.empty());
  std::size_t runs = 0;
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : plan) {
    runs += e.run ? 1 : 0;
    std::string rule = e.rule.declared ? e.rule.kind : "-";
    for (std::size_t i = 0; i < e.rule.subsystems.size(); ++i)
      rule += (i == 0 ? " {" : ", ") + e.rule.subsystems[i] + (i + 1 == e.rule.subsystems.size() ? "}" : "");
    rows.push_back({e.contract, e.run ? "run" : "skip", rule, e.why});
  }
  if (a.format == "md") {
    print_rows({"contract", "decision", "retest", "why"}, rows, true);
  } else {
    std::cout << "update " << a.from << " -> " << a.to << " (major " << kc::major_version(a.from) << " -> "
              << kc::major_version(a.to) << ")" << (a.notes.empty() ? ", no release notes" : ", notes " + a.notes)
              << "\n";
    print_rows({}, rows, false);
  }
  std::cout << runs << " of " << plan.size() << " contracts to run\n";
  if (a.format != "md" && runs > 0 && runs < plan.size()) {
    std::cout << "run them: kc check";
    for (const auto& e : plan)
      if (e.run) std::cout << " --contract " << e.contract;
    std::cout << "\n";
  }
  return kExitOk;
}

int cmd_config_check(const Args& a) {
  if (a.positional.empty()) return usage_error("config-check needs a training config (.yaml)");
  int rc = kExitOk;
  for (const auto& path : a.positional) {
    const kc::train::ConfigCheck c = kc::train::check_train_config_file(path);
    std::cout << c.render();
    rc = std::max(rc, c.exit_code() == 2 ? kExitUsage : c.exit_code());
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // The library prints nothing; what it has to say while it runs (kc/message.h)
  // comes here, one line each, on stderr.
  kc::set_message_sink([](const std::string& text) { std::fprintf(stderr, "kc: %s\n", text.c_str()); });
  Args a;
  if (int rc = parse_args(argc, argv, &a); rc >= 0) return rc;
  a.argv.assign(argv + 1, argv + argc);
  if (a.command.empty()) {
    std::cout << help_text();
    return kExitUsage;
  }
  // A flag the command would not read is refused, never silently dropped
  // (the flags cli_table.h marks enforced).
  for (const auto& flag : a.given)
    if (const std::string why = kc::cli::scope_error(flag, a.command); !why.empty()) return usage_error(why);
  if (a.command == "check") return cmd_check(a, false);
  if (a.command == "grade") return cmd_check(a, true);
  if (a.command == "calibrate") return cmd_calibrate(a);
  if (a.command == "vet") return cmd_vet(a);
  if (a.command == "lint") return cmd_lint(a);
  if (a.command == "fmt") return cmd_fmt(a);
  if (a.command == "list") return cmd_list(a);
  if (a.command == "backends") return cmd_backends(a);
  if (a.command == "explain") return cmd_explain(a);
  if (a.command == "verify-trace") return cmd_verify_trace(a);
  if (a.command == "config-check") return cmd_config_check(a);
  if (a.command == "ladder") return cmd_ladder(a);
  if (a.command == "status") return cmd_status(a);
  if (a.command == "graph") return cmd_graph(a);
  if (a.command == "retest-plan") return cmd_retest_plan(a);
  if (a.command == "diff") return cmd_diff(a);
  if (a.command == "baseline") return cmd_baseline(a);
  if (a.command == "merge") return cmd_merge(a);
  if (a.command == "keygen") return cmd_keygen(a);
  if (a.command == "certify") return cmd_certify(a);
  if (a.command == "latency") return cmd_latency(a);
  std::vector<std::string> commands;
  for (const auto& c : kc::cli::commands()) commands.emplace_back(c.name);
  std::string near = kc::lang::nearest_word(a.command, commands);
  return usage_error("unknown command '" + a.command + "'" + (near.empty() ? "" : " — did you mean '" + near + "'?"));
}
