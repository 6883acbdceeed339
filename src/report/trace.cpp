// The hash-chained JSON-lines trace (docs/trace.md is the normative description).
//
// A line is   {"prev":"<64 hex>",<body members>,"hash":"<64 hex>"}\n
// where body = case_json(record) = {<body members>} and
//       hash = sha256_hex(prev + body)   (prev as its 64 ASCII hex characters).
// The first line's prev is 64 zeros. Lines are only ever appended.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

namespace {

constexpr std::string_view kPrefix = "{\"prev\":\"";  // then 64 hex, then kPrevEnd
constexpr std::string_view kPrevEnd = "\",";
constexpr std::string_view kHashStart = ",\"hash\":\"";  // then 64 hex, then kSuffix
constexpr std::string_view kSuffix = "\"}";
constexpr std::size_t kHexLen = 64;
constexpr std::size_t kHead = kPrefix.size() + kHexLen + kPrevEnd.size();    // 75
constexpr std::size_t kTail = kHashStart.size() + kHexLen + kSuffix.size();  // 75
const std::string kGenesis(kHexLen, '0');

bool is_hex64(std::string_view s) {
  if (s.size() != kHexLen) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string errno_text() { return std::strerror(errno); }

struct ParsedLine {
  std::string prev, body, hash;
};

// Splits one line (without its '\n') into prev, body and hash; checks the
// line's own hash. Error messages lack the "line N" context; callers add it.
Result<ParsedLine> parse_line(std::string_view line) {
  if (line.size() < kHead + kTail + 1 || line.substr(0, kPrefix.size()) != kPrefix ||
      line.substr(kPrefix.size() + kHexLen, kPrevEnd.size()) != kPrevEnd ||
      line.substr(line.size() - kTail, kHashStart.size()) != kHashStart ||
      line.substr(line.size() - kSuffix.size()) != kSuffix) {
    return invalid_argument("not a trace record (expected {\"prev\":\"<hex>\",...,\"hash\":\"<hex>\"})");
  }
  ParsedLine p;
  p.prev = std::string(line.substr(kPrefix.size(), kHexLen));
  p.hash = std::string(line.substr(line.size() - kSuffix.size() - kHexLen, kHexLen));
  if (!is_hex64(p.prev) || !is_hex64(p.hash)) return invalid_argument("prev/hash is not 64 lower-case hex digits");
  p.body = "{" + std::string(line.substr(kHead, line.size() - kHead - kTail)) + "}";
  if (sha256_hex(p.prev + p.body) != p.hash)
    return invalid_argument("record hash mismatch: the line was edited after it was written");
  return p;
}

// The hash of the last record in the open file fd, or 64 zeros for an empty
// file. A final line without '\n' is an interrupted write: an error, never
// repaired silently.
Result<std::string> read_last_hash(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return internal_error(path + ": fstat: " + errno_text());
  const off_t size = st.st_size;
  if (size == 0) return kGenesis;
  char last = 0;
  if (pread(fd, &last, 1, size - 1) != 1) return internal_error(path + ": read: " + errno_text());
  if (last != '\n') {
    return invalid_argument(path +
                            ": the last line is truncated (no newline at the end of the file), probably "
                            "an interrupted write; kc never rewrites a trace: check the partial last line, "
                            "remove it by hand, and run `kc verify-trace` before appending");
  }
  // Walk back in blocks to the newline that ends the previous line.
  std::string line;      // the last line, built from the back
  off_t end = size - 1;  // exclusive end of the last line (its '\n' excluded)
  off_t pos = end;
  constexpr off_t kBlock = 4096;
  bool found = false;
  while (pos > 0 && !found) {
    const off_t start = pos > kBlock ? pos - kBlock : 0;
    std::string buf(static_cast<std::size_t>(pos - start), '\0');
    if (pread(fd, buf.data(), buf.size(), start) != static_cast<ssize_t>(buf.size()))
      return internal_error(path + ": read: " + errno_text());
    const std::size_t nl = buf.rfind('\n');
    if (nl != std::string::npos) {
      line.insert(0, buf.substr(nl + 1));
      found = true;
    } else {
      line.insert(0, buf);
    }
    pos = start;
  }
  auto parsed = parse_line(line);
  if (!parsed.ok()) return parsed.status().with_context(path + ": last line");
  return parsed->hash;
}

// Walks the chain of a whole trace's bytes: the number of records and the
// last hash, or "path:LINE: what" for the first line that breaks it.
// `data` may be the tail of a file whose earlier lines (`lines_before` of
// them, ending with hash `prev`) are already verified.
Result<std::size_t> walk_chain(std::string_view data, const std::string& path, std::string* last_hash,
                               const std::string& prev = kGenesis, std::size_t lines_before = 0) {
  std::string expected_prev = prev;
  std::size_t count = 0, pos = 0, line_no = lines_before;
  while (pos < data.size()) {
    ++line_no;
    const std::size_t nl = data.find('\n', pos);
    const auto where = [&](const std::string& what) {
      return invalid_argument(path + ":" + std::to_string(line_no) + ": " + what);
    };
    if (nl == std::string_view::npos) return where("truncated record (no newline at the end of the file)");
    const std::string_view line = data.substr(pos, nl - pos);
    pos = nl + 1;
    auto parsed = parse_line(line);
    if (!parsed.ok()) return where(parsed.status().message());
    if (parsed->prev != expected_prev) {
      return where("chain broken: prev is " + parsed->prev.substr(0, 12) + "… but the previous record's hash is " +
                   expected_prev.substr(0, 12) + "… (a record before this line was deleted, inserted or edited)");
    }
    expected_prev = parsed->hash;
    ++count;
  }
  if (last_hash) *last_hash = expected_prev;
  return count;
}

// The content of the regular file open on fd from byte `from` on (a device
// such as /dev/full reads as empty: it has no records, and reading it would not end).
Result<std::string> read_from(int fd, const std::string& path, off_t from) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return internal_error(path + ": fstat: " + errno_text());
  if (!S_ISREG(st.st_mode) || st.st_size <= from) return std::string();
  std::string data(static_cast<std::size_t>(st.st_size - from), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = pread(fd, data.data() + got, data.size() - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return internal_error(path + ": read: " + errno_text());
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  data.resize(got);
  return data;
}

Status write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return internal_error("write: " + errno_text());
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok_status();
}

// Closes fd on every path out of a scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<TraceWriter> TraceWriter::open(const std::string& path) {
  if (path.empty()) return invalid_argument("empty trace path");
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return internal_error(path + ": cannot create directory " + parent.string() + ": " + ec.message());
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return internal_error(path + ": cannot open trace for appending: " + errno_text());
  FdCloser closer{fd};
  KC_ASSIGN_OR_RETURN(std::string last, read_last_hash(fd, path));
  // Appending continues a chain only if the chain holds: a trace edited,
  // cut or spliced before its last line is refused, and nothing is appended.
  // The whole file is verified the first time this process opens it; a
  // later open (the ladder opens its evidence file per record) verifies what
  // was appended since, from the hash that ended the verified part, as long
  // as that part still ends where it did with the same hash.
  struct stat st {};
  if (fstat(fd, &st) != 0) return internal_error(path + ": fstat: " + errno_text());
  struct Verified {
    dev_t dev;
    ino_t ino;
    off_t size;
    std::string hash;
    std::size_t lines;
  };
  static std::mutex verified_mu;
  static std::map<std::string, Verified> verified;
  Verified from{st.st_dev, st.st_ino, 0, kGenesis, 0};
  {
    const std::lock_guard<std::mutex> lock(verified_mu);
    if (auto it = verified.find(path); it != verified.end() && it->second.dev == st.st_dev &&
                                       it->second.ino == st.st_ino && it->second.size <= st.st_size) {
      // The verified part must still end with its last hash: a line ending at that offset.
      std::string tail(kTail + 1, '\0');
      if (it->second.size == 0 ||
          (it->second.size >= static_cast<off_t>(tail.size()) &&
           pread(fd, tail.data(), tail.size(), it->second.size - static_cast<off_t>(tail.size())) ==
               static_cast<ssize_t>(tail.size()) &&
           tail.compare(kHashStart.size(), kHexLen, it->second.hash) == 0 && tail.back() == '\n'))
        from = it->second;
    }
  }
  KC_ASSIGN_OR_RETURN(const std::string data, read_from(fd, path, from.size));
  std::string walked;
  auto chain = walk_chain(data, path, &walked, from.hash, from.lines);
  if (!chain.ok() || walked != last) {
    const std::string why = chain.ok() ? path + ": the last line's hash does not end the chain" : chain.status().message();
    return invalid_argument(why + "; kc appends only to a trace whose chain is intact: keep this file as it is "
                                  "(it is evidence), and write to a new trace (--trace FILE, or another --out)");
  }
  {
    const std::lock_guard<std::mutex> lock(verified_mu);
    verified[path] = Verified{st.st_dev, st.st_ino, from.size + static_cast<off_t>(data.size()), walked,
                              from.lines + *chain};
  }
  // A new (or empty) trace: make its directory entry durable.
  if (last == kGenesis) KC_RETURN_IF_ERROR(fsync_parent_dir(path));
  TraceWriter w;
  w.path_ = path;
  w.last_hash_ = std::move(last);
  return w;
}

Status TraceWriter::append(const engine::CaseResult& c) { return append_body(case_json(c)); }

Status TraceWriter::append_body(const std::string& body) {
  KC_CHECK(body.size() >= 2 && body.front() == '{' && body.back() == '}');
  KC_DCHECK(body.find('\n') == std::string::npos);

  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return internal_error(path_ + ": cannot open trace: " + errno_text());
  FdCloser closer{fd};
  // An exclusive lock for the read-tail-then-append step, so two kc processes
  // writing one trace interleave whole records and keep one chain.
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return internal_error(path_ + ": flock: " + errno_text());
  }
  // The file's own tail is the truth (another writer may have appended since open).
  KC_ASSIGN_OR_RETURN(std::string prev, read_last_hash(fd, path_));

  const std::string hash = sha256_hex(prev + body);
  std::string line;
  line.reserve(body.size() + kHead + kTail + 1);
  line += kPrefix;
  line += prev;
  line += kPrevEnd;
  line.append(body, 1, body.size() - 2);
  line += kHashStart;
  line += hash;
  line += kSuffix;
  line += '\n';

  struct stat st {};
  if (fstat(fd, &st) != 0) return internal_error(path_ + ": fstat: " + errno_text());
  if (Status s = write_all(fd, line); !s.ok()) {
    // Take back our own partial line so the trace stays well-formed; earlier
    // lines are untouched.
    if (ftruncate(fd, st.st_size) != 0) { /* the next open reports the truncated line */
    }
    return s.with_context(path_);
  }
  if (fsync(fd) != 0) return internal_error(path_ + ": fsync: " + errno_text());
  closer.fd = -1;
  if (::close(fd) != 0) return internal_error(path_ + ": close: " + errno_text());
  last_hash_ = hash;
  return ok_status();
}

Result<std::vector<TraceRecord>> read_trace_records(const std::string& path, std::string* cut_note) {
  const int fd = ::open(path.c_str(), cut_note ? O_RDWR | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(path + ": cannot open trace: " + errno_text());
  FdCloser closer{fd};
  // The same lock append takes: nothing is appended while the tail is cut.
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return internal_error(path + ": flock: " + errno_text());
  }
  KC_ASSIGN_OR_RETURN(std::string data, read_from(fd, path, 0));
  if (!data.empty() && data.back() != '\n' && cut_note) {
    // A kill during a record's write: the partial line is no record (its
    // hash cannot hold), and the run that wrote it never counted it as done.
    const std::size_t nl = data.rfind('\n');
    const std::size_t keep = nl == std::string::npos ? 0 : nl + 1;
    const std::size_t line_no = static_cast<std::size_t>(std::count(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(keep), '\n')) + 1;
    if (ftruncate(fd, static_cast<off_t>(keep)) != 0) return internal_error(path + ": ftruncate: " + errno_text());
    if (fsync(fd) != 0) return internal_error(path + ": fsync: " + errno_text());
    *cut_note = path + ":" + std::to_string(line_no) + ": cut off a truncated last line (" +
                std::to_string(data.size() - keep) + " bytes without a newline: a write the interrupted run did not finish)";
    data.resize(keep);
  }
  KC_RETURN_IF_ERROR(walk_chain(data, path, nullptr).status());
  std::vector<TraceRecord> out;
  for (std::size_t pos = 0; pos < data.size();) {
    const std::size_t nl = data.find('\n', pos);
    auto parsed = parse_line(std::string_view(data).substr(pos, nl - pos));
    KC_CHECK(parsed.ok());  // walk_chain accepted every line
    out.push_back({std::move(parsed->body), std::move(parsed->hash)});
    pos = nl + 1;
  }
  return out;
}

Result<std::size_t> verify_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open trace");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return internal_error(path + ": read error");
  return walk_chain(data, path, nullptr);
}

}  // namespace kc::report
