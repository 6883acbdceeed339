// kc — the valgrind isolation mode (kc/memcheck.h): kernel-call markers,
// memcheck's XML log split by them, and the rerun of a case under valgrind.
#include "kc/memcheck.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "isolate/tool_run.h"
#include "kc/signature.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define KC_HAVE_VALGRIND_H 1
#endif

namespace kc::memcheck {
namespace {

/// The text between <tag> and </tag> starting at `from`, or nullopt; `end`
/// receives the position after the closing tag.
std::optional<std::string_view> element(std::string_view s, std::string_view tag, std::size_t from, std::size_t* end) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  const std::size_t b = s.find(open, from);
  if (b == std::string_view::npos) return std::nullopt;
  const std::size_t e = s.find(close, b + open.size());
  if (e == std::string_view::npos) return std::nullopt;
  if (end) *end = e + close.size();
  return s.substr(b + open.size(), e - b - open.size());
}

std::string first(std::string_view block, std::string_view tag) {
  auto v = element(block, tag, 0, nullptr);
  return v ? std::string(*v) : std::string();
}

/// XML text as plain text: the five entities, whitespace collapsed.
std::string plain(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '&') {
      static const std::pair<std::string_view, char> entities[] = {
          {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
      bool replaced = false;
      for (const auto& [name, c] : entities)
        if (s.substr(i, name.size()) == name) {
          out += c;
          i += name.size() - 1;
          replaced = true;
          break;
        }
      if (replaced) continue;
    }
    const char c = s[i] == '\n' || s[i] == '\t' ? ' ' : s[i];
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

}  // namespace

void mark_kernel_begin() {
#ifdef KC_HAVE_VALGRIND_H
  if (RUNNING_ON_VALGRIND) VALGRIND_PRINTF("%s\n", kKernelBegin);
#endif
}

void mark_kernel_end() {
#ifdef KC_HAVE_VALGRIND_H
  if (RUNNING_ON_VALGRIND) VALGRIND_PRINTF("%s\n", kKernelEnd);
#endif
}

std::string Finding::line() const {
  std::string s = kind + ": " + what;
  if (!where.empty()) s += "; at " + where;
  return s;
}

Report parse_xml(std::string_view xml) {
  Report r;
  r.complete = xml.find("</valgrindoutput>") != std::string_view::npos;
  bool inside = false;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t msg = xml.find("<clientmsg>", pos);
    const std::size_t err = xml.find("<error>", pos);
    if (msg == std::string_view::npos && err == std::string_view::npos) break;
    std::size_t end = 0;
    if (msg < err) {
      auto body = element(xml, "clientmsg", msg, &end);
      if (!body) break;
      const std::string text = plain(first(*body, "text"));
      if (text.find(kKernelBegin) != std::string::npos) {
        inside = true;
        ++r.kernel_calls;
      } else if (text.find(kKernelEnd) != std::string::npos) {
        inside = false;
      }
    } else {
      auto body = element(xml, "error", err, &end);
      if (!body) break;
      Finding f;
      f.kind = plain(first(*body, "kind"));
      f.what = plain(first(*body, "what"));
      if (f.what.empty()) f.what = plain(first(first(*body, "xwhat"), "text"));
      const std::string aux = plain(first(*body, "auxwhat"));
      if (!aux.empty()) f.what += " (" + aux + ")";
      const std::string frame = first(*body, "frame");
      const std::string fn = plain(first(frame, "fn"));
      const std::string obj = plain(first(frame, "obj"));
      f.object = std::filesystem::path(obj).filename().string();
      f.where = fn.empty() ? f.object : fn + (f.object.empty() ? "" : " (" + f.object + ")");
      if (inside) r.in_kernel.push_back(std::move(f));
      else ++r.outside;
    }
    pos = end;
  }
  return r;
}

std::optional<std::string> find_binary() {
  if (const char* e = std::getenv("KC_VALGRIND"); e && *e) return executable(e) ? std::optional<std::string>(e) : std::nullopt;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && executable(dir + "/valgrind")) return dir + "/valgrind";
  }
  return std::nullopt;
}

Result<Report> run(const std::string& binary, const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) return invalid_argument("valgrind: nothing to run");
  std::string tmpl = (std::filesystem::temp_directory_path() / "kc-memcheck-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return internal_error("valgrind: cannot create a temporary directory");
  const std::filesystem::path dir = tmpl;
  const std::string xml_path = (dir / "memcheck.xml").string();
  // Forked children (kc's library probes) run on without reporting: only the
  // process that runs the case writes the log.
  std::vector<std::string> args = {binary, "--tool=memcheck", "--smc-check=all", "--child-silent-after-fork=yes",
                                   "--xml=yes", "--xml-file=" + xml_path, "--error-limit=no", "--leak-check=no"};
  args.insert(args.end(), argv.begin(), argv.end());
  const std::string out_path = (dir / "kc.out").string();
  KC_ASSIGN_OR_RETURN(const isolate::detail::ToolRun run, isolate::detail::run_tool(args, out_path, timeout_s,
                                                                                    "valgrind"));
  const int status = run.status;
  const bool timed_out = run.timed_out;
  std::string xml;
  {
    std::ifstream in(xml_path);
    xml.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string kc_out;
  {
    std::ifstream in(out_path);
    kc_out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (timed_out)
    return Status(StatusCode::kDeadlineExceeded,
                  "valgrind run killed after " + std::to_string(static_cast<long>(timeout_s)) + " s");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return unavailable("valgrind could not be started: " + binary);
  Report r = parse_xml(xml);
  if (!r.complete) {
    const std::size_t tail = kc_out.size() > 400 ? kc_out.size() - 400 : 0;
    return internal_error("valgrind wrote no complete log (exit status " + std::to_string(status) +
                          "); kc printed: " + kc_out.substr(tail));
  }
  return r;
}

void apply(const Report& report, engine::CaseResult& c) {
  if (report.in_kernel.empty()) {
    c.evidence.notes.push_back("valgrind memcheck: 0 errors in " + std::to_string(report.kernel_calls) +
                               " kernel call(s)" +
                               (report.outside > 0 ? " (" + std::to_string(report.outside) +
                                                         " outside them: kc's start-up, the loader, the oracle)"
                                                   : std::string()));
    return;
  }
  const Finding& f = report.in_kernel.front();
  const std::string count =
      std::to_string(report.in_kernel.size()) + (report.in_kernel.size() == 1 ? " error" : " errors");
  c.verdict = engine::Verdict::kError;
  c.signatures.insert(c.signatures.begin(), Signature{sig::kMemcheck, {f.kind, f.object.empty() ? "?" : f.object}});
  c.reason = "valgrind memcheck found " + count + " inside the kernel's calls; first: " + f.line() +
             (c.reason.empty() ? "" : " (without valgrind: " + c.reason + ")");
  std::size_t shown = 0;
  for (const auto& e : report.in_kernel) {
    if (++shown > 5) break;
    c.evidence.notes.push_back("valgrind memcheck: " + e.line());
  }
}

}  // namespace kc::memcheck
