// The command line's tables (cli_table.h) and the help generated from them.
#include "cli_table.h"

#include <algorithm>
#include <vector>

#include "kc/lang.h"
#include "kc/reporter.h"

namespace kc::cli {

namespace {

// The global help's text per command and per flag. A flag can have one row
// per section it is documented in (--out: the report set, the run record).
  // clang-format off
constexpr CommandInfo kCommands[] = {
    {"check", "[PATHS...]",
     "run contracts against impls; PATHS are .kc/.yaml files or dirs\n"
     "(default: the standard suite)"},
    {"grade", "[PATHS...]",
     "run the suite over every available impl; print the conformance\n"
     "matrix and grades; write report files (--out DIR)"},
    {"calibrate", "[PATHS...]",
     "prove every contract separates its trio: baseline fails the visible\n"
     "test, bad passes it but violates the contract, good passes both"},
    {"vet", "FILE [PATHS...]",
     "build a kernel file (.c, .cpp, .cu; or a plugin .so) against the plugin\n"
     "ABI (include/kc/kc_plugin.h), or an OpenCL .cl file (kc_<op> kernels,\n"
     "docs/backends/opencl.md), grade its impls against the standard\n"
     "suite (or PATHS) in worker processes, write the reports (--out DIR)"},
    {"lint", "PATHS...",
     "parse contracts; list clause by clause what keeps them from executing"},
    {"fmt", "FILE [--to kc|yaml]",
     "print the canonical form (or convert between .kc and YAML)"},
    {"list", "[WHAT]",
     "what kc knows: contracts (default), ops, impls, suites, properties, and the\n"
     "language's tables: probes, aggregates, metrics, observe, signatures,\n"
     "oracles, classes, declarations, policies, precisions, retest\n"
     "(--format md: a Markdown table)"},
    {"backends", "",
     "which backends are available here, with versions, and why not"},
    {"explain", "ID",
     "what a contract promises, how it is measured, what a violation means"},
    {"verify-trace", "FILE [--key PUB]",
     "check a trace's hash chain; with --key also its signature (FILE.sig)"},
    {"diff", "OLD NEW",
     "compare two run records (run directories or record.json files) per\n"
     "contract x impl: new violations, fixed ones, signature changes, bound-ratio\n"
     "shift, outputs changed bit for bit, latency (docs/diff.md); exit 1 on a\n"
     "regression beyond --fail-on"},
    {"baseline", "update --out FILE RUN",
     "write a known-violation baseline from a run record (docs/diff.md)"},
    {"config-check", "FILE...",
     "check a YAML training config's algebra before any compute is spent:\n"
     "steps/epoch, epochs for max_steps, warmup, peak LR, tokens >= 10 x\n"
     "parameters (docs/transformer-training.md); exit 1 on a failed obligation"},
    {"ladder", "[PATHS...]",
     "climb the verification ladder per contract x impl: L1 type, L2 named\n"
     "edge cases, L3 10,000 random inputs with a shrunk counterexample, L4\n"
     "exhaustive (all fp16/bf16 inputs of unary ops, value pairs of 2-element\n"
     "kernels); records evidence in DIR/ladder.jsonl (--out DIR)"},
    {"status", "[--dir DIR]",
     "per contract x impl: the ladder level reached and the evidence behind it"},
    {"graph", "[PATHS...]",
     "the contract dependency DAG (`depends` lines): --format mermaid|dot|json"},
    {"keygen", "--out FILE",
     "an Ed25519 key pair: FILE (secret, mode 0600) and FILE.pub"},
    {"certify", "RUN --sign-key KEY [--out DIR]",
     "a signed conformance certificate of a finished run (certificate.json +\n"
     ".sig, certificate.html): suite content hash, contract hashes, impls with\n"
     "library versions, grades, machine profiles, the trace's last hash;\n"
     "`kc certify verify certificate.json --key KEY.pub` checks it"},
    {"latency", "IMPL --inside \"K=V ...\" --outside \"K=V ...\"",
     "time IMPL on a call just inside a capability boundary and one just\n"
     "outside, each in its own worker with a control, interleaved, per unit of\n"
     "work; infer a path change where every block shows a jump beyond the\n"
     "measured noise (docs/capability.md); exit 1 when one shows where the\n"
     "declaration names one path for both calls"},
    {"merge", "DIR... --out DIR",
     "put the run directories of one plan's shards (--shard) back together:\n"
     "one matrix, grade, report set, record and trace, in the unsharded run's\n"
     "order; refuses other plans, names missing shards, keeps the later of a\n"
     "retried one; of `kc ladder --shard` directories: one evidence chain\n"
     "in plan order, for kc status (docs/scale-out.md)"},
    {"retest-plan", "--from OLD --to NEW [--notes FILE] [PATHS...]",
     "which contracts an update of a library from OLD to NEW must run again,\n"
     "from each contract's `retest` line (always | release_notes {...} |\n"
     "major_version); runs nothing (docs/suites.md)"},
};

constexpr FlagInfo kFlags[] = {
    {"--contract", "", "GLOB", "check, grade, calibrate", "check grade calibrate vet ladder retest-plan", false,
     "only contracts whose id matches (repeatable)"},
    {"--impl", "", "GLOB", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "only impls whose name matches (repeatable)"},
    {"--suite", "", "NAME", "check, grade, calibrate", "check grade", true,
     "(check, grade) only what the `suite NAME` block of the loaded files\n"
     "selects, together with --contract/--impl (`kc list suites`)"},
    {"--backend", "", "GLOB", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "load and run only the backends whose name matches (repeatable); the\n"
     "others are never probed, so their libraries stay out of kc"},
    {"--plugin", "", "LIB.so", "check, grade, calibrate", "check grade calibrate vet ladder list backends latency", false,
     "load a plugin library through the kc_plugin.h C ABI (repeatable)"},
    {"--library", "", "NAME=PATH", "check, grade, calibrate", "check grade calibrate vet ladder list backends latency", false,
     "(openblas | blis | refblas) load this build of the library instead of\n"
     "the installed one; NAME@LABEL=PATH loads it beside the installed one as\n"
     "backend NAME@LABEL (impls NAME@LABEL.sgemm, ...): two builds, one run"},
    {"--seed", "", "N", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "base seed (default 0x6b63); inputs depend on seed, contract, config"},
    {"--samples", "", "N", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "override the protocol's sample count"},
    {"--config", "", "\"K=V ...\"", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "run only this config (used by repro lines)"},
    {"--sample", "", "I", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "run only sample I of each config (used by repro lines)"},
    {"--format", "", "F", "check, grade, calibrate", "check list graph diff retest-plan", false,
     "@formats"},
    {"--trace", "", "FILE", "check, grade, calibrate", "check", false,
     "append one hash-chained JSON line per verdict"},
    {"--resume", "", "DIR|FILE", "check, grade, calibrate", "check grade", false,
     "continue a run that was killed or interrupted (Ctrl-C): grade: its --out\n"
     "DIR; check: its trace FILE (or a DIR holding trace.jsonl). Cases the trace\n"
     "records are read back, not run again; the chain continues; the reports\n"
     "equal an uninterrupted run's. Give the run's own options: another --seed,\n"
     "--samples, selection or contract text is refused (exit 2; docs/trace.md)"},
    {"--out", "", "DIR", "check, grade, calibrate", "grade vet merge ladder status", false,
     "@out"},
    {"--no-color", "", "", "check, grade, calibrate", "check grade calibrate vet merge", false,
     "never colour the table (NO_COLOR in the environment does the same)"},
    {"--color", "", "", "check, grade, calibrate", "check grade calibrate vet merge", false,
     "colour it even when stdout is not a terminal"},
    {"--progress-every", "", "S", "check, grade, calibrate", "check grade vet", false,
     "(check, grade) when stderr is not a terminal (a CI log), a line every S\n"
     "seconds: cases done of planned and an estimate of the time left\n"
     "(default 30; 0: none). On a terminal one line is updated per case"},
    {"--isolate", "", "MODE", "check, grade, calibrate", "check grade calibrate vet ladder latency", false,
     "process (default): each impl runs in a worker process on guarded\n"
     "buffers, so a crash, hang, memory blow-up or out-of-bounds write\n"
     "becomes an error verdict; none: in kc's process, for debugging;\n"
     "valgrind (kc check): as process, then each judged case again in a kc\n"
     "process under valgrind memcheck, whose errors during a kernel call\n"
     "(inside the library's own buffers too) make it an error, MEMCHECK(...)"},
    {"--timeout", "", "SECONDS", "check, grade, calibrate", "check grade calibrate vet ladder latency", false,
     "wall-clock limit per kernel call in a worker (default 60)"},
    {"--memory-limit", "", "SIZE", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "memory a worker may add per impl, e.g. 512M, 4G (default 4G)"},
    {"--memory-budget", "", "SIZE", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "memory all workers running at once may use together (default: the\n"
     "available memory); --jobs is lowered so jobs x --memory-limit fits,\n"
     "and a kc cgroup holds the workers to it where one can be made"},
    {"--compute-sanitizer", "", "TOOL", "check, grade, calibrate", "check", false,
     "(kc check, one case, NVIDIA GPU) run the case again under compute-sanitizer\n"
     "--tool TOOL (memcheck | initcheck | racecheck); reported errors make it an\n"
     "error verdict SANITIZER(TOOL, N errors). Refused (exit 2) without the binary\n"
     "or a GPU"},
    {"--jobs", "-j", "N", "check, grade, calibrate", "check grade calibrate vet ladder", false,
     "cases run at once, each kernel in its own worker (default 0: one and a\n"
     "half per core, rounded up); cases that measure time or determinism and\n"
     "in-process kernels run alone; results and the trace keep plan order\n"
     "whatever N is"},
    {"--fast", "", "", "check, grade, calibrate", "check grade vet ladder", false,
     "judge matmul and attention cases under a `bound` tolerance with the\n"
     "fast verifier (matmul: Freivalds probes + sampled elements, O(n^2);\n"
     "attention: sampled query rows) instead of the FP64 oracle; the\n"
     "report's evidence.method says which check decided"},
    {"--fast-probes", "", "K", "check, grade, calibrate", "check grade vet ladder", false,
     "with --fast: Freivalds probe vectors (default 10; a crafted error in\n"
     "one row escapes K probes with probability <= 2^-K)"},
    {"--fast-samples", "", "S", "check, grade, calibrate", "check grade vet ladder", false,
     "with --fast: sampled elements (matmul) or query rows (attention),\n"
     "default 64"},
    {"--shard", "", "I/N", "check, grade, calibrate", "check grade calibrate ladder", true,
     "(check, grade, calibrate, ladder) run only shard I (from 0) of N of the\n"
     "plan (calibrate: of the contracts, each with its trio; ladder: of the\n"
     "contract x impl kernels, each with all its rungs); every shard\n"
     "of one plan splits it the same way, so N machines run each case once;\n"
     "`kc merge` joins their --out directories. auto: I and N from Slurm\n"
     "(SLURM_ARRAY_TASK_ID/COUNT), Kubernetes (JOB_COMPLETION_INDEX and\n"
     "KC_SHARD_COUNT), GoogleTest (GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS) or\n"
     "KC_SHARD_INDEX/KC_SHARD_COUNT. Give the shards of GPU and CPU nodes\n"
     "different --backend filters to place them (docs/scale-out.md)"},
    {"--sign-key", "", "FILE", "check, grade, calibrate", "check grade merge certify", true,
     "(check, grade, merge) sign the trace and the run record with this secret\n"
     "key (kc keygen): FILE.sig beside each; `kc verify-trace --key` checks it"},
    {"--shard-balance", "", "RUN", "check, grade, calibrate", "check grade ladder", true,
     "with --shard: split by the case durations of an earlier run (its\n"
     "directory or record.json; ladder: its --out directory's evidence)\n"
     "instead of round robin"},
    {"--allow-empty", "", "", "check, grade, calibrate", "check grade vet", false,
     "exit 0 when no case was judged (every case not_applicable,\n"
     "under_specified or skipped); by default such a run exits 4"},
    {"--junit-not-applicable", "", "", "check, grade, calibrate", "check grade vet merge", false,
     "(check --format junit, grade, merge) list not_applicable pairs as\n"
     "skipped testcases; by default they are left out and each suite's\n"
     "kc.not_applicable property counts them"},
    {"--strict", "", "", "lint", "lint", false,
     "exit 1 when any clause is descriptive (prose kc cannot enforce) or a\n"
     "metric is not what kc measures under the tolerance;\n"
     "an unknown name in a clause is exit 2 with or without it"},
    {"--affected", "", "ID", "check", "check", false,
     "re-verify contract ID and every contract downstream of it (depends)"},
    {"--level", "", "N", "ladder", "ladder", false,
     "climb at most to level N (1..4, default 4)"},
    {"--pin", "", "FILE", "ladder", "ladder", true,
     "write each shrunk L3 counterexample to FILE as a regression contract: the\n"
     "contract with its config and inputs fixed to the counterexample\n"
     "(`inject values(...)`), id CONTRACT-PIN-<hash>"},
    {"--inputs", "", "N", "ladder", "ladder", false,
     "L3 random inputs per obligation (default 10000)"},
    {"--exhaustive-fp32", "", "", "ladder", "ladder", false,
     "opt-in L4 job: all 2^32 fp32 inputs of unary kernels, every bf16\n"
     "pair of 2-element kernels (multi-threaded; prints coverage and time)"},
    {"--fraction", "", "F", "ladder", "ladder", false,
     "with --exhaustive-fp32: sweep only the leading fraction F, and\n"
     "extrapolate the full time"},
    {"--threads", "", "N", "ladder", "ladder", false,
     "threads of the opt-in job (default: all hardware threads)"},
    {"--out", "", "DIR", "run records, diff, baselines; docs/diff.md", "check", false,
     "(check) also write DIR/record.json, the run record `kc diff` compares\n"
     "(kc grade always writes one)"},
    {"--timing", "", "N", "run records, diff, baselines; docs/diff.md", "check grade vet", false,
     "time each case's first call (cold) and N >= 20 more calls of the same\n"
     "inputs (warm) in its worker; timed cases run one at a time"},
    {"--baseline", "", "FILE", "run records, diff, baselines; docs/diff.md", "check grade vet", false,
     "(check, grade) known violations (YAML or JSON): exit 0 when only those\n"
     "occur, 1 on any other; warns on expired entries and ones that no longer occur"},
    {"--fail-on", "", "RULES", "run records, diff, baselines; docs/diff.md", "diff", false,
     "(diff) new-violation,new-error (default), signature-change, output-change,\n"
     "missing, ratio:F, latency:R (significantly slower by a median ratio > R)"},
    {"--junit", "", "FILE", "run records, diff, baselines; docs/diff.md", "diff", false,
     "(diff) also write a JUnit XML report"},
    {"--html", "", "FILE", "run records, diff, baselines; docs/diff.md", "diff", false,
     "(diff) also write an HTML page with plots"},
    {"--out", "", "FILE", "other commands", "keygen certify baseline", false,
     "(keygen) the secret key file (FILE.pub gets the public key); (certify) the\n"
     "directory for the certificate; (baseline update) the baseline file"},
    {"--to", "", "kc|yaml|VERSION", "other commands", "fmt retest-plan", false,
     "(fmt) the form to print; (retest-plan) the new library version"},
    {"--from", "", "VERSION", "other commands", "retest-plan", true,
     "(retest-plan) the library version in use now"},
    {"--notes", "", "FILE", "other commands", "retest-plan", true,
     "(retest-plan) the new version's release notes"},
    {"--key", "", "PUB", "other commands", "verify-trace certify", true,
     "(verify-trace, certify verify) the signer's public key (FILE.pub of kc keygen)"},
    {"--inside", "", "\"K=V ...\"", "other commands", "latency", true,
     "(latency) the call inside the boundary: its config, as in --config"},
    {"--outside", "", "\"K=V ...\"", "other commands", "latency", true,
     "(latency) the call just outside it"},
    {"--dir", "", "DIR", "other commands", "status", false,
     "(status) the ladder's --out directory (default kc-report)"},
};
// clang-format on

constexpr std::string_view kIntro = "kc — Kernel Contracts: check ML kernels against written contracts.\n";
constexpr std::size_t kColumn = 23;  // where descriptions start

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

/// The help lines of a flag, with the generated ones filled in.
std::vector<std::string> help_lines(const FlagInfo& f) {
  std::vector<std::string> out;
  if (f.help == "@formats") {
    out.push_back(kc::report::reporter_names() + " (check; default table);");
    out.push_back("graph: mermaid | dot | json; diff: table | json; list, retest-plan: md");
    for (const auto& r : kc::report::reporters())
      out.push_back("  " + std::string(r.name) + ": " + std::string(r.help));
    return out;
  }
  if (f.help == "@out") {
    std::string files;
    for (const auto& r : kc::report::reporters())
      if (!r.file.empty()) files += std::string(r.file) + ", ";
    out.push_back("(grade, vet, merge) directory for " + files + "trace.jsonl,");
    out.push_back("record.json (default kc-report); (ladder, status) for ladder.jsonl");
    return out;
  }
  for (auto l : split(f.help, '\n')) out.emplace_back(l);
  return out;
}

/// "  HEAD   first line\n" + continuation lines at kColumn.
void entry(std::string& out, const std::string& head, const std::vector<std::string>& lines) {
  std::string first = "  " + head;
  if (first.size() + 1 > kColumn) {
    out += first + "\n";
    first.clear();
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string line = i == 0 && !first.empty() ? first : std::string();
    line.resize(kColumn, ' ');
    out += line + lines[i] + "\n";
  }
  if (lines.empty()) out += first + "\n";
}

std::string flag_head(const FlagInfo& f) {
  std::string h(f.name);
  if (!f.value.empty()) h += " " + std::string(f.value);
  if (!f.alias.empty()) h += ", " + std::string(f.alias) + (f.value.empty() ? "" : " " + std::string(f.value));
  return h;
}

}  // namespace

std::span<const CommandInfo> commands() { return kCommands; }
std::span<const FlagInfo> flags() { return kFlags; }

const CommandInfo* find_command(std::string_view name) {
  for (const auto& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

bool reads(const FlagInfo& flag, std::string_view command) {
  for (auto c : split(flag.commands, ' '))
    if (c == command) return true;
  return false;
}

std::string global_help() {
  std::string out(kIntro);
  out += "\nusage: kc <command> [options]    (kc <command> --help: that command's options)\n\ncommands:\n";
  for (const auto& c : kCommands) {
    std::vector<std::string> lines;
    for (auto l : split(c.summary, '\n')) lines.emplace_back(l);
    entry(out, std::string(c.name) + (c.usage.empty() ? "" : " " + std::string(c.usage)), lines);
  }
  std::vector<std::string_view> groups;
  for (const auto& f : kFlags)
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end()) groups.push_back(f.group);
  for (const auto& g : groups) {
    out += "\noptions (" + std::string(g) + "):\n";
    for (const auto& f : kFlags)
      if (f.group == g) entry(out, flag_head(f), help_lines(f));
  }
  return out;
}

std::string command_help(const CommandInfo& c) {
  std::string out = "usage: kc " + std::string(c.name) + (c.usage.empty() ? "" : " " + std::string(c.usage));
  bool any = false;
  for (const auto& f : kFlags) any = any || reads(f, c.name);
  out += any ? " [options]\n\n" : "\n\n";
  for (auto l : split(c.summary, '\n')) out += "  " + std::string(l) + "\n";
  if (any) {
    out += "\noptions:\n";
    for (const auto& f : kFlags)
      if (reads(f, c.name)) entry(out, flag_head(f), help_lines(f));
  }
  out += "\n(kc --help: every command and option)\n";
  return out;
}

std::string scope_error(std::string_view flag, std::string_view command) {
  for (const auto& f : kFlags) {
    if (f.name != flag || !f.enforced) continue;
    if (reads(f, command)) return {};
    std::string where;
    for (auto c : split(f.commands, ' ')) where += (where.empty() ? "kc " : " or kc ") + std::string(c);
    return std::string(flag) + " belongs to " + where + ", not kc " + std::string(command);
  }
  return {};
}

std::string nearest_flag(std::string_view flag) {
  std::vector<std::string> names;
  for (const auto& f : kFlags) names.emplace_back(f.name);
  return kc::lang::nearest_word(std::string(flag), names);
}

}  // namespace kc::cli
