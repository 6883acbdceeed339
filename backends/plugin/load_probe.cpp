#include "plugin/load_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "kc/child.h"

namespace kc::backends {

namespace {

constexpr double kDefaultLoadTimeoutS = 30;
/// What a probe child may write to its stdout and stderr; the rest is refused.
constexpr off_t kCaptureBytes = 64 * 1024;

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

/// The last few non-empty lines of `text`, joined with " / ", at most ~300 characters.
std::string last_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    std::string clean;
    for (char ch : line) {
      const auto u = static_cast<unsigned char>(ch);
      if (u >= 0x20 && u < 0x7f) clean += ch;
      else if (ch == '\t') clean += ' ';
    }
    while (!clean.empty() && clean.back() == ' ') clean.pop_back();
    if (!clean.empty()) lines.push_back(clean);
    start = nl + 1;
  }
  std::string out;
  const std::size_t from = lines.size() > 3 ? lines.size() - 3 : 0;
  for (std::size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : " / ") + lines[i];
  if (out.size() > 300) out = "..." + out.substr(out.size() - 297);
  return out;
}

/// A memory file for the child's stdout and stderr, sealed at kCaptureBytes so
/// a library printing without end cannot fill kc's memory; -1 if unavailable.
int make_capture() {
  const int fd = memfd_create("kc-load-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, kCaptureBytes) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/// What the child wrote: the file offset it shares with this descriptor says how much.
std::string read_capture(int fd) {
  if (fd < 0) return "";
  const off_t n = std::min<off_t>(lseek(fd, 0, SEEK_CUR), kCaptureBytes);
  if (n <= 0) return "";
  std::string text(static_cast<std::size_t>(n), '\0');
  const ssize_t got = pread(fd, text.data(), text.size(), 0);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

struct Probed {
  Result<std::string> result;
  bool died = false;
};

std::map<std::string, Probed>& cache() {
  static std::map<std::string, Probed> c;
  return c;
}

std::vector<std::string>& failures() {
  static std::vector<std::string> f;
  return f;
}

/// `library` names the child; `record` lists a death in failures() (not for a
/// joint probe, whose libraries are then probed, and named, one by one).
Probed probe_uncached(const std::string& library, const std::function<Result<std::string>()>& load,
                      bool record = true) {
  const double timeout_s = load_timeout_s();
  const int capture = make_capture();
  ChildEnd end;
  Result<std::string> r = run_in_child(
      [&]() -> Result<std::string> {
        // The library's output is evidence, never kc's output (a --format json
        // stream stays valid); it reads nothing from kc's stdin.
        const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd >= 0) dup2(null_fd, 0);
        const int out = capture >= 0 ? capture : null_fd;
        if (out >= 0) {
          dup2(out, 1);
          dup2(out, 2);
        }
        // The library's code runs inside the sandbox a strict worker gets.
        Result<std::string> got = run_sandboxed_here(load);
        std::fflush(nullptr);
        return got;
      },
      timeout_s, "the probe of " + library, &end);
  const std::string printed = last_lines(read_capture(capture));
  if (capture >= 0) close(capture);
  std::string failure;
  if (end.timed_out) failure = "hung while loading (timeout " + seconds_text(timeout_s) + ")";
  else if (end.signal == SIGABRT) failure = "aborted while loading (SIGABRT)";
  else if (end.signal != 0) failure = "crashed while loading (" + signal_name(end.signal) + ")";
  else if (!end.answered && end.exit_code >= 0)
    failure = "exited while loading (exit " + std::to_string(end.exit_code) + ")";
  if (failure.empty()) return {r, false};
  failure += printed.empty() ? "" : "; it printed: " + printed;
  if (record) failures().push_back(library + ": " + failure);
  return {unavailable(failure), true};
}

}  // namespace

double load_timeout_s() {
  if (const char* env = std::getenv("KC_LOAD_TIMEOUT"); env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0) return v;
  }
  return kDefaultLoadTimeoutS;
}

Result<std::string> probe_load(const std::string& key, const std::string& library,
                               const std::function<Result<std::string>()>& load, bool* died) {
  // Held for the whole probe: a library is loaded once even if two threads ask.
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto it = cache().find(key);
  if (it == cache().end()) it = cache().emplace(key, probe_uncached(library, load)).first;
  if (died) *died = it->second.died;
  return it->second.result;
}

std::optional<Result<std::string>> probe_load_together(const std::string& key, const std::string& libraries,
                                                       const std::function<Result<std::string>()>& load) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto it = cache().find(key);
  if (it == cache().end()) it = cache().emplace(key, probe_uncached(libraries, load, false)).first;
  if (it->second.died) return std::nullopt;
  return it->second.result;
}

std::string file_key(const std::string& key, const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return key + "|" + path;
  return key + "|" + path + "|" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

void FieldWriter::add(const std::string& field) {
  text_ += '+';
  text_ += std::to_string(field.size());
  text_ += ':';
  text_ += field;
}

void FieldWriter::add_optional(const char* field) {
  if (field) add(field);
  else text_ += '-';
}

bool FieldReader::next(std::string* field, bool* present) {
  if (at_ >= text_.size()) return false;
  if (text_[at_] == '-') {
    ++at_;
    field->clear();
    if (present) *present = false;
    return true;
  }
  if (text_[at_] != '+') return false;
  const std::size_t colon = text_.find(':', at_);
  if (colon == std::string::npos || colon == at_ + 1) return false;
  std::size_t n = 0;
  for (std::size_t i = at_ + 1; i < colon; ++i) {
    if (text_[i] < '0' || text_[i] > '9') return false;
    n = n * 10 + static_cast<std::size_t>(text_[i] - '0');
  }
  if (colon + 1 + n > text_.size()) return false;
  *field = text_.substr(colon + 1, n);
  if (present) *present = true;
  at_ = colon + 1 + n;
  return true;
}

}  // namespace kc::backends

namespace kc {

std::vector<std::string> library_load_failures() {
  std::lock_guard<std::mutex> lock(backends::cache_mutex());
  return backends::failures();
}

}  // namespace kc
