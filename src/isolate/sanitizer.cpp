#include "kc/sanitizer.h"
#include "isolate/tool_run.h"
#include "kc/signature.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace kc::sanitizer {
namespace {

constexpr std::string_view kPrefix = "=========";
// Exit status the sanitizer is told to use when it found errors.
constexpr int kErrorExit = 86;

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

/// Lines of the sanitizer's own text that are not findings.
bool is_banner(std::string_view body) {
  for (std::string_view b : {"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY",
                             "Target application returned an error", "Saved host backtrace"})
    if (starts_with(body, b)) return true;
  return false;
}

}  // namespace

std::optional<Tool> parse_tool(std::string_view name) {
  if (name == "memcheck") return Tool::kMemcheck;
  if (name == "initcheck") return Tool::kInitcheck;
  if (name == "racecheck") return Tool::kRacecheck;
  return std::nullopt;
}

const char* tool_name(Tool tool) {
  switch (tool) {
    case Tool::kMemcheck:
      return "memcheck";
    case Tool::kInitcheck:
      return "initcheck";
    case Tool::kRacecheck:
      return "racecheck";
  }
  return "?";
}

Report parse_report(std::string_view text, std::size_t max_findings) {
  Report r;
  std::string current;  // the finding being assembled
  int details = 0;      // detail lines added to it
  auto flush = [&] {
    if (!current.empty() && r.findings.size() < max_findings) r.findings.push_back(current);
    current.clear();
    details = 0;
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const std::size_t at = line.find(kPrefix);
    if (at == std::string_view::npos) continue;
    std::string_view rest = line.substr(at + kPrefix.size());
    if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) {
      flush();  // "=========" alone ends a finding
      continue;
    }
    rest.remove_prefix(1);
    const bool indented = !rest.empty() && (rest.front() == ' ' || rest.front() == '\t');
    const std::string_view body = trim(rest);
    if (body.empty()) {
      flush();
      continue;
    }
    if (starts_with(body, "ERROR SUMMARY:")) {
      flush();
      r.summary_seen = true;
      r.errors += std::strtol(std::string(trim(body.substr(14))).c_str(), nullptr, 10);
      continue;
    }
    if (!indented) {
      flush();
      if (!is_banner(body)) current = std::string(body);
      continue;
    }
    // Details of the current finding: where and which thread (the host
    // backtrace frames are left out).
    if (!current.empty() && details < 3 &&
        (starts_with(body, "at ") || starts_with(body, "by thread") || starts_with(body, "Address ") ||
         starts_with(body, "Write Thread") || starts_with(body, "Read Thread") || starts_with(body, "and is "))) {
      current += "; ";
      current += body;
      ++details;
    }
  }
  flush();
  return r;
}

std::optional<std::string> find_binary() {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("KC_COMPUTE_SANITIZER"); e && *e) candidates.emplace_back(e);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(var); e && *e) candidates.push_back(std::string(e) + "/bin/compute-sanitizer");
  candidates.emplace_back("/usr/local/cuda/bin/compute-sanitizer");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/local", ec)) {
    const std::string name = entry.path().filename().string();
    if (starts_with(name, "cuda-")) candidates.push_back(entry.path().string() + "/bin/compute-sanitizer");
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty()) candidates.push_back(dir + "/compute-sanitizer");
  }
  for (const auto& c : candidates)
    if (executable(c)) return c;
  return std::nullopt;
}

bool gpu_present() {
  std::error_code ec;
  if (!std::filesystem::exists("/dev/nvidiactl", ec)) return false;
  for (int i = 0; i < 64; ++i)
    if (std::filesystem::exists("/dev/nvidia" + std::to_string(i), ec)) return true;
  return false;
}

std::optional<std::string> unavailable_reason() {
  if (!find_binary()) {
    return std::string(
        "compute-sanitizer not found (looked at $KC_COMPUTE_SANITIZER, $CUDA_HOME/bin, $CUDA_PATH/bin, "
        "/usr/local/cuda/bin, /usr/local/cuda-*/bin and PATH)");
  }
  if (!gpu_present()) return std::string("no NVIDIA GPU on this machine (no /dev/nvidiactl and /dev/nvidiaN)");
  return std::nullopt;
}

Result<Report> run(const std::string& binary, Tool tool, const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) return invalid_argument("compute-sanitizer: nothing to run");
  std::string tmpl = (std::filesystem::temp_directory_path() / "kc-sanitizer-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return internal_error("compute-sanitizer: cannot create a temporary directory");
  const std::filesystem::path dir = tmpl;
  const std::string log = (dir / "sanitizer.%p.log").string();
  std::vector<std::string> args = {binary,
                                   "--tool",
                                   tool_name(tool),
                                   "--target-processes",
                                   "all",
                                   "--error-exitcode",
                                   std::to_string(kErrorExit),
                                   "--print-limit",
                                   "20",
                                   "--log-file",
                                   log};
  args.insert(args.end(), argv.begin(), argv.end());
  const std::string out_path = (dir / "kc.out").string();
  KC_ASSIGN_OR_RETURN(const isolate::detail::ToolRun run, isolate::detail::run_tool(args, out_path, timeout_s,
                                                                                    "compute-sanitizer"));
  const int status = run.status;
  const bool timed_out = run.timed_out;
  std::string text;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename() == "kc.out") continue;
    std::ifstream in(entry.path());
    text += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    text += "\n";
  }
  std::string kc_out;
  {
    std::ifstream in(out_path);
    kc_out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove_all(dir, ec);
  if (timed_out)
    return Status(StatusCode::kDeadlineExceeded,
                  "compute-sanitizer run killed after " + std::to_string(static_cast<long>(timeout_s)) + " s");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return unavailable("compute-sanitizer could not be started: " + binary);
  // Some versions print to stdout despite --log-file when it cannot be opened.
  Report r = parse_report(text.empty() ? kc_out : text);
  if (!r.summary_seen && WIFEXITED(status) && WEXITSTATUS(status) == kErrorExit && r.errors == 0) r.errors = 1;
  return r;
}

void apply(const Report& report, Tool tool, engine::CaseResult& c) {
  if (report.errors <= 0) return;
  const std::string count = std::to_string(report.errors) + (report.errors == 1 ? " error" : " errors");
  c.verdict = engine::Verdict::kError;
  c.signatures.insert(c.signatures.begin(), Signature{sig::kSanitizer, {tool_name(tool), count}});
  std::string reason = std::string("compute-sanitizer ") + tool_name(tool) + " reported " + count;
  if (!report.findings.empty()) reason += "; first: " + report.findings.front();
  c.reason = reason + (c.reason.empty() ? "" : " (without the sanitizer: " + c.reason + ")");
  for (const auto& f : report.findings) c.evidence.notes.push_back(std::string("compute-sanitizer: ") + f);
}

}  // namespace kc::sanitizer
