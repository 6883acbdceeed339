// End-to-end: a grade killed with SIGKILL (or stopped with SIGINT) part-way
// continues with --resume and ends with the same matrix as a run that was
// never interrupted; Ctrl-C ends every worker and leaves the trace valid; a
// resume with other options is refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

fs::path temp_root() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("kc_resume_cli_" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t count_lines(const fs::path& p) {
  const std::string s = read_file(p);
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// The grade every test runs: four contracts against the reference and
// calibration impls, two samples: 62 recorded cases in a few seconds.
std::vector<std::string> grade_args(const std::string& out) {
  return {"grade",     src("contracts/classes"), "--contract", "C-EXC-0*", "--contract", "C-PRC-01", "--impl",
          "ref.*",     "--impl",                 "calib.*",    "--samples", "2",         "--jobs",   "1",
          "--no-color", "--out",                 out};
}

/// Starts kc with args; stdout and stderr go to log. Signals at their defaults.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    std::string bin = KC_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(KC_BIN, argv.data());
    _exit(127);
  }
  return pid;
}

/// Exit code of pid, or -1 (a signal, or still running after timeout_s: then killed).
int wait_exit(pid_t pid, double timeout_s, double* took = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (took) *took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct KcRun {
  int code = -1;
  std::string out;
};

KcRun run_kc(const std::vector<std::string>& args, const std::string& name) {
  const fs::path log = temp_root() / (name + ".log");
  KcRun r;
  r.code = wait_exit(spawn(args, log), 600);
  r.out = read_file(log);
  return r;
}

/// Per contract x impl of report.json: verdict, signatures, reason and evidence
/// (the whole nested object but the wall time), as compact text.
std::map<std::string, std::string> matrix(const fs::path& report) {
  // report.json is kc's own pretty JSON: one case is the object between a
  // line `    {` and the next `    }` inside "cases"; fields are one per line.
  std::map<std::string, std::string> out;
  std::istringstream in(read_file(report));
  std::string line, key, cell;
  bool in_cases = false, in_case = false;
  while (std::getline(in, line)) {
    if (line == "  \"cases\": [") in_cases = true;
    else if (in_cases && line.rfind("  ]", 0) == 0) in_cases = false;
    if (!in_cases) continue;
    if (line == "    {") {
      in_case = true;
      key.clear();
      cell.clear();
      continue;
    }
    if (in_case && (line == "    }" || line == "    },")) {
      in_case = false;
      out[key] = cell;
      continue;
    }
    if (!in_case) continue;
    const auto field = [&](const char* name) { return line.find(std::string("\"") + name + "\": ") != std::string::npos; };
    if (field("seconds") || field("time") || field("host")) continue;
    if (line.rfind("      \"contract\": ", 0) == 0 || line.rfind("      \"impl\": ", 0) == 0) key += line;
    cell += line + "\n";
  }
  return out;
}

/// (contract, impl) of every record of a trace, in order.
std::vector<std::string> recorded(const fs::path& trace) {
  std::vector<std::string> out;
  std::istringstream in(read_file(trace));
  std::string line;
  while (std::getline(in, line)) {
    const auto c = line.find("\"contract\":\"");
    const auto i = line.find("\"impl\":\"");
    if (c == std::string::npos || i == std::string::npos) continue;
    out.push_back(line.substr(c, line.find('"', c + 12) - c) + " " + line.substr(i, line.find('"', i + 8) - i));
  }
  return out;
}

/// The uninterrupted run every resumed one is compared with (made once).
const fs::path& reference_run() {
  static const fs::path dir = [] {
    const fs::path d = temp_root() / "uninterrupted";
    const KcRun r = run_kc(grade_args(d.string()), "uninterrupted");
    EXPECT_EQ(r.code, 1) << r.out;  // the calibration impls violate on purpose
    return d;
  }();
  return dir;
}

/// Waits until trace holds at least n records (or the process ended).
bool wait_records(pid_t pid, const fs::path& trace, std::size_t n, double timeout_s) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
    if (fs::exists(trace) && count_lines(trace) >= n) return true;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

struct ProcInfo {
  long ppid = 0, pgrp = 0;
  char state = 0;
};

std::map<long, ProcInfo> processes() {
  std::map<long, ProcInfo> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    char* end = nullptr;
    const long pid = std::strtol(e.path().filename().c_str(), &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string stat = read_file(e.path() / "stat");
    const auto rp = stat.rfind(')');
    if (rp == std::string::npos) continue;
    ProcInfo p;
    if (std::sscanf(stat.c_str() + rp + 1, " %c %ld %ld", &p.state, &p.ppid, &p.pgrp) == 3) out[pid] = p;
  }
  return out;
}

/// Every process below pid (children, grandchildren, ...).
std::set<long> descendants(long pid) {
  const auto all = processes();
  std::set<long> out{pid};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [p, info] : all)
      if (out.count(info.ppid) && out.insert(p).second) grew = true;
  }
  out.erase(pid);
  return out;
}

TEST(ResumeCli, AGradeKilledWithSigkillResumesToTheUninterruptedMatrix) {
  const fs::path& ref = reference_run();
  const std::size_t total = count_lines(ref / "trace.jsonl");
  ASSERT_GT(total, 20u);

  const fs::path dir = temp_root() / "killed";
  const pid_t pid = spawn(grade_args(dir.string()), temp_root() / "killed.log");
  ASSERT_TRUE(wait_records(pid, dir / "trace.jsonl", 10, 300)) << read_file(temp_root() / "killed.log");
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const std::size_t before = count_lines(dir / "trace.jsonl");
  ASSERT_LT(before, total) << "the run finished before it was killed";
  // A kill in the middle of a record's write leaves a line without its newline.
  { std::ofstream(dir / "trace.jsonl", std::ios::app) << "{\"prev\":\"0123456789abcdef"; }

  std::vector<std::string> args = grade_args(dir.string());
  args.push_back("--resume");
  args.push_back(dir.string());
  const KcRun r = run_kc(args, "resumed");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("cut off a truncated last line"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resumed: " + std::to_string(before) + " cases read back"), std::string::npos) << r.out;

  // The same matrix, case by case: verdicts, signatures, reasons, evidence.
  const auto want = matrix(ref / "report.json");
  const auto got = matrix(dir / "report.json");
  ASSERT_GT(want.size(), total);  // not_applicable pairs are in the matrix, not the trace
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [k, v] : want) {
    const auto it = got.find(k);
    ASSERT_NE(it, got.end()) << "missing after resume: " << k;
    EXPECT_EQ(it->second, v) << k;
  }
  // Every case recorded exactly once, the chain intact across the kill.
  auto a = recorded(ref / "trace.jsonl"), b = recorded(dir / "trace.jsonl");
  EXPECT_EQ(b.size(), a.size());
  EXPECT_EQ(std::set<std::string>(b.begin(), b.end()).size(), b.size()) << "a case recorded twice";
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  const KcRun v = run_kc({"verify-trace", (dir / "trace.jsonl").string()}, "verify_killed");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find(std::to_string(total) + " records, chain intact"), std::string::npos) << v.out;
}

TEST(ResumeCli, SigintStopsPromptlyEndsEveryWorkerAndLeavesAResumableTrace) {
  const fs::path& ref = reference_run();
  const fs::path dir = temp_root() / "interrupted";
  const fs::path log = temp_root() / "interrupted.log";
  const pid_t pid = spawn(grade_args(dir.string()), log);
  // Interrupt while a worker runs, once some records exist.
  std::set<long> workers;
  ASSERT_TRUE(wait_records(pid, dir / "trace.jsonl", 3, 300)) << read_file(log);
  const auto t0 = std::chrono::steady_clock::now();
  while (workers.empty() && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 60) {
    workers = descendants(pid);
    if (workers.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_FALSE(workers.empty()) << "no worker seen";
  std::set<long> groups;
  for (const auto& [p, info] : processes())
    if (workers.count(p)) groups.insert(info.pgrp);
  kill(pid, SIGINT);
  double took = 0;
  const int code = wait_exit(pid, 60, &took);
  const std::string out = read_file(log);
  EXPECT_EQ(code, 130) << out;
  EXPECT_LT(took, 20.0) << "Ctrl-C took " << took << " s";
  EXPECT_NE(out.find("kc: interrupted by SIGINT"), std::string::npos) << out;
  EXPECT_NE(out.find("continue with: kc grade"), std::string::npos) << out;
  EXPECT_NE(out.find("--resume " + dir.string()), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "report.json")) << "an interrupted run wrote a partial report";
  // No process of the run is left: not the workers seen, not anything in their groups.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (const auto& [p, info] : processes()) {
    if (info.state == 'Z') continue;  // ended, waiting for its reaper
    EXPECT_FALSE(workers.count(p)) << "worker " << p << " outlived kc";
    EXPECT_FALSE(groups.count(info.pgrp)) << "process " << p << " in a worker's group outlived kc";
  }
  const KcRun v = run_kc({"verify-trace", (dir / "trace.jsonl").string()}, "verify_interrupted");
  EXPECT_EQ(v.code, 0) << v.out;
  const std::size_t before = count_lines(dir / "trace.jsonl");
  EXPECT_LT(before, count_lines(ref / "trace.jsonl"));

  std::vector<std::string> args = grade_args(dir.string());
  args.push_back("--resume");
  args.push_back(dir.string());
  const KcRun r = run_kc(args, "resumed_after_sigint");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(matrix(dir / "report.json"), matrix(ref / "report.json"));
  EXPECT_EQ(count_lines(dir / "trace.jsonl"), count_lines(ref / "trace.jsonl"));
}

TEST(ResumeCli, AResumeWithAnotherSeedSamplesOrContractTextIsRefused) {
  const fs::path& ref = reference_run();
  const fs::path dir = temp_root() / "refused";
  fs::copy(ref, dir, fs::copy_options::recursive);
  const std::string trace_before = read_file(dir / "trace.jsonl");

  std::vector<std::string> args = grade_args(dir.string());
  args.insert(args.end(), {"--seed", "7", "--resume", dir.string()});
  KcRun r = run_kc(args, "other_seed");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--seed: the interrupted run had '0x6b63', this one '0x7'"), std::string::npos) << r.out;

  args = grade_args(dir.string());
  args[11] = "3";  // --samples 3
  args.insert(args.end(), {"--resume", dir.string()});
  r = run_kc(args, "other_samples");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--samples: the interrupted run had '2', this one '3'"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(dir / "trace.jsonl"), trace_before) << "a refused resume appended";

  // The same contract id with other text: its record belongs to another version.
  const fs::path contracts = temp_root() / "contracts";
  fs::create_directories(contracts);
  fs::copy_file(src("contracts/classes/C-EXC-01.kc"), contracts / "C-EXC-01.kc");
  const fs::path small = temp_root() / "small";
  const std::vector<std::string> one = {"grade", contracts.string(), "--impl", "ref.*", "--samples", "1",
                                        "--no-color", "--out", small.string()};
  r = run_kc(one, "small");
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.out;
  std::string text = read_file(contracts / "C-EXC-01.kc");
  const auto at = text.find("density 0.02");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "density 0.03");
  std::ofstream(contracts / "C-EXC-01.kc") << text;
  std::vector<std::string> again = one;
  again.insert(again.end(), {"--resume", small.string()});
  r = run_kc(again, "edited");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("C-EXC-01 changed since the interrupted run recorded it"), std::string::npos) << r.out;
}

TEST(ResumeCli, CheckResumesFromItsTraceFile) {
  const fs::path trace = temp_root() / "check" / "t.jsonl";
  const std::vector<std::string> args = {"check", src("contracts/classes"), "--contract", "C-EXC-01", "--impl", "ref.*",
                                         "--samples", "1", "--format", "json", "--trace", trace.string()};
  const KcRun first = run_kc(args, "check_first");
  ASSERT_TRUE(first.code == 0 || first.code == 1) << first.out;
  const std::size_t n = count_lines(trace);
  ASSERT_GT(n, 0u);
  std::vector<std::string> resume(args.begin(), args.end() - 2);
  resume.insert(resume.end(), {"--resume", trace.string()});
  const KcRun again = run_kc(resume, "check_resumed");
  EXPECT_EQ(again.code, first.code) << again.out;
  EXPECT_NE(again.out.find("resumed: " + std::to_string(n) + " cases read back"), std::string::npos) << again.out;
  EXPECT_EQ(count_lines(trace), n) << "a resumed case was recorded again";
  // A trace with no run state beside it is not resumed.
  fs::remove(trace.string() + ".run.json");
  const KcRun refused = run_kc(resume, "check_no_state");
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.out.find("run.json: missing"), std::string::npos) << refused.out;
}

}  // namespace
