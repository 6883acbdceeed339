#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

Status write_file(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  if (path.empty()) return invalid_argument("empty output path");
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) return internal_error(path + ": cannot create directory: " + ec.message());
  }
  // Write a sibling temporary, then rename over the target: a reader sees the
  // old file or the new one, never half of one.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return internal_error(path + ": cannot create temporary file: " + std::strerror(errno));
  const auto fail = [&](const std::string& what) {
    const std::string msg = path + ": " + what + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return internal_error(msg);
  };
  std::string_view rest(content);
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  if (fchmod(fd, 0644) != 0) return fail("chmod");  // mkstemp makes 0600
  if (fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return internal_error(path + ": close: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = path + ": rename: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return internal_error(msg);
  }
  return fsync_parent_dir(path);
}

}  // namespace kc::report
