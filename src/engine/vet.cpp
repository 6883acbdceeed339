// kc — `kc vet`: build a user's kernel file against the plugin ABI so the
// standard suite can run on it ("a model wrote this kernel; may we ship it?").
// The build runs the system compilers; the kernel itself runs later, isolated,
// like every impl.
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "kc/engine.h"

namespace kc::engine {
namespace {

std::string extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
  return path.substr(dot);
}

std::string stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = base.find_last_of('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs `command` through the shell; its stdout and stderr go to `log`.
int run_command(const std::string& command, std::string* log) {
  std::FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) log->append(buf.data(), n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

Result<VetBuild> build_kernel_library(const std::string& source, const std::string& work_dir,
                                      const std::string& include_dir) {
  if (!exists(source)) return invalid_argument("no such file: " + source);
  const std::string ext = extension(source);
  VetBuild b;
  if (ext == ".so") {
    b.library = source;
    return b;
  }
  if (ext == ".cl") {
    // Built (in a child process) by the OpenCL runtime; graded as backend opencl_user.
    auto built = backends::build_opencl_source(source);
    if (!built.ok()) return built.status();
    b.opencl_source = source;
    b.command = "clBuildProgram " + source;
    b.log = *built;
    return b;
  }
  std::string compiler;
  std::string flags = "-O2 -shared -fPIC";
  if (ext == ".c") {
    compiler = "cc";
    flags += " -std=c11";
  } else if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") {
    compiler = "c++";
    flags += " -std=c++17";
  } else if (ext == ".cu") {
    compiler = exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "nvcc";
    flags = "-O2 -shared -Xcompiler -fPIC -lcudart";
  } else {
    return invalid_argument("cannot vet '" + source + "': expected a .c, .cpp, .cc, .cxx, .cu or .so file");
  }
  if (run_command("mkdir -p " + quote(work_dir), &b.log) != 0)
    return invalid_argument("cannot create " + work_dir + ": " + b.log);
  b.library = work_dir + "/lib" + stem(source) + ".so";
  b.command = compiler + " " + flags + " -I" + quote(include_dir) + " " + quote(source) + " -o " + quote(b.library);
  const int rc = run_command(b.command, &b.log);
  if (rc != 0) {
    return invalid_argument("building " + source + " failed (exit " + std::to_string(rc) + "):\n  " + b.command +
                            "\n" + b.log);
  }
  return b;
}

}  // namespace kc::engine
