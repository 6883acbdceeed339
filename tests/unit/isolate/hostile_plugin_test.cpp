// A plugin or system library that aborts or hangs while it is loaded cannot
// take kc down (docs/isolation.md, "Plugins and libraries"). Each library is
// loaded first in a probe child (backends/plugin/load_probe.h); kc's own
// process never loads a plugin, the worker running its impl does. Each test
// asserts that kc (this test process, or the kc binary it runs) survives,
// names the failure, still judges the other impls, and leaves no process behind.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "backends/plugin/plugin_backend.h"
#include "kc/backend.h"
#include "kc/isolate.h"

namespace kc {
namespace {

std::string hostile(const std::string& mode) { return std::string(KC_HOSTILE_DIR) + "/" + mode + ".so"; }
const std::string kExamplePlugin = KC_BINARY_DIR "/lib/libkc_example_plugin.so";

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Processes named `comm` still running (zombies not counted).
int running_named(const std::string& comm) {
  int found = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(f, stat);
    const std::size_t lp = stat.find('('), rp = stat.rfind(')');
    if (lp == std::string::npos || rp == std::string::npos || rp + 2 >= stat.size()) continue;
    if (stat.substr(lp + 1, rp - lp - 1) == comm && stat[rp + 2] != 'Z') ++found;
  }
  closedir(d);
  return found;
}

/// Children of this process, zombies included: a probe child is reaped, not left.
int children_left() {
  int found = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  const long self = getpid();
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(f, stat);
    const std::size_t rp = stat.rfind(')');
    char state = 0;
    long ppid = 0;
    if (rp != std::string::npos && std::sscanf(stat.c_str() + rp + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
      ++found;
  }
  closedir(d);
  return found;
}

/// What the hostile plugins of this test process name their processes after
/// (KC_HOSTILE_TAG, read by hostile_plugin.c): this process's pid.
std::string tag() { return std::to_string(getpid()); }

/// Polls for up to a second: a SIGKILL'd process leaves /proc asynchronously.
bool none_left() {
  for (int i = 0; i < 100; ++i) {
    if (running_named("kch_ld_" + tag()) == 0 && running_named("kch_kid_" + tag()) == 0 && children_left() == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Whether this process has `path` mapped (/proc/self/maps names the file).
bool mapped_here(const std::string& path) {
  const std::string real = std::filesystem::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(real) != std::string::npos) return true;
  return false;
}

struct CliRun {
  int code = -1;
  std::string out;  ///< stdout and stderr
};

CliRun kc_run(const std::string& env, const std::string& args) {
  CliRun r;
  const std::string cmd = env + " " KC_BIN " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

struct Attack {
  const char* mode;    ///< the library: tests/unit/isolate/hostile_plugins, built as <mode>.so
  const char* failure; ///< what kc must say about it
};

void PrintTo(const Attack& a, std::ostream* os) { *os << a.mode; }

class HostileLoad : public ::testing::TestWithParam<Attack> {
 protected:
  void SetUp() override {
    setenv("KC_LOAD_TIMEOUT", "2", 1);
    setenv("KC_HOSTILE_TAG", tag().c_str(), 1);
  }
  void TearDown() override { unsetenv("KC_LOAD_TIMEOUT"); }
};

TEST_P(HostileLoad, KcSurvivesNamesTheFailureAndLeavesNothingRunning) {
  const std::string lib = hostile(GetParam().mode);
  ASSERT_TRUE(std::filesystem::exists(lib)) << lib << " is missing: build target kc_hostile_" << GetParam().mode;
  const auto t0 = std::chrono::steady_clock::now();
  auto backend = backends::make_plugin_backend(std::vector<std::string>{lib});
  const BackendInfo info = backend->probe();
  EXPECT_LT(since(t0), 15.0);  // a hang costs its timeout (2 s here), not more
  EXPECT_FALSE(info.available);
  EXPECT_TRUE(info.load_died);
  EXPECT_NE(info.reason.find(lib + ": " + GetParam().failure), std::string::npos) << info.reason;
  EXPECT_TRUE(backend->impls().empty());
  EXPECT_TRUE(none_left()) << "a process the hostile loader started is still there";
  EXPECT_FALSE(mapped_here(lib));
  bool listed = false;
  for (const std::string& line : library_load_failures())
    listed = listed || line.rfind(lib + ": " + GetParam().failure, 0) == 0;
  EXPECT_TRUE(listed);

  // Probed once per process: a second registry gets the same answer without a child.
  const auto t1 = std::chrono::steady_clock::now();
  auto again = backends::make_plugin_backend(std::vector<std::string>{lib});
  EXPECT_EQ(again->probe().reason, info.reason);
  EXPECT_LT(since(t1), 0.5);
}

// The kc binary with the hostile plugin given: `kc backends` lists it as
// unavailable with the reason; `kc check` of another impl judges that impl,
// says what became of the plugin, and fails the run (the plugin the user gave
// was not checked).
TEST_P(HostileLoad, TheKcBinaryGoesOnWithTheOtherImpls) {
  const std::string lib = hostile(GetParam().mode);
  const std::string env = "KC_LOAD_TIMEOUT=2 KC_HOSTILE_TAG=" + tag();
  const CliRun listed = kc_run(env, "backends --plugin " + lib);
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("unavailable  " + lib + ": " + GetParam().failure), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("ref          available"), std::string::npos) << listed.out;

  const CliRun checked =
      kc_run(env, "check " KC_SOURCE_DIR "/contracts/blas/KC-GEMM-01.kc --impl ref.matmul --no-color --plugin " + lib);
  EXPECT_EQ(checked.code, 1) << checked.out;
  EXPECT_NE(checked.out.find("kc: unavailable: " + lib + ": " + GetParam().failure), std::string::npos) << checked.out;
  EXPECT_TRUE(checked.out.find("ref.matmul") != std::string::npos &&
              checked.out.find("conforming") != std::string::npos)
      << checked.out;
  EXPECT_TRUE(none_left());
}

INSTANTIATE_TEST_SUITE_P(Plugins, HostileLoad,
                         ::testing::Values(Attack{"abort_in_ctor", "aborted while loading (SIGABRT)"},
                                           Attack{"loop_in_ctor", "hung while loading (timeout 2s)"},
                                           Attack{"abort_in_init", "aborted while loading (SIGABRT)"},
                                           Attack{"loop_in_init", "hung while loading (timeout 2s)"}),
                         [](const ::testing::TestParamInfo<Attack>& i) { return std::string(i.param.mode); });

// Libraries probed together (the variant builds of one backend share a child):
// one that aborts takes the joint child down, and each is then probed alone,
// which names it; the others load.
TEST(HostileLoadTogether, TheLoaderThatDiesIsNamedAndTheOthersLoad) {
  setenv("KC_LOAD_TIMEOUT", "2", 1);
  setenv("KC_HOSTILE_TAG", tag().c_str(), 1);
  const std::string bad = hostile("abort_in_ctor");
  const auto probed = backends::load_plugins(
      {{kExamplePlugin, nullptr}, {bad, nullptr}, {hostile("loop_in_init"), nullptr}}, "plugin");
  unsetenv("KC_LOAD_TIMEOUT");
  ASSERT_EQ(probed.size(), 3u);
  ASSERT_TRUE(probed[0].ok()) << probed[0].status().message();
  EXPECT_EQ(probed[0]->impls.size(), 3u);
  ASSERT_FALSE(probed[1].ok());
  EXPECT_NE(probed[1].status().message().find("aborted while loading (SIGABRT)"), std::string::npos)
      << probed[1].status().message();
  ASSERT_FALSE(probed[2].ok());
  EXPECT_NE(probed[2].status().message().find("hung while loading (timeout 2s)"), std::string::npos)
      << probed[2].status().message();
  EXPECT_TRUE(none_left());
  EXPECT_FALSE(mapped_here(kExamplePlugin));
}

Call dot_call() {
  Call call;
  call.op = "dot";
  call.config.dtype = DType::kF32;
  call.names = {"x", "y", "out"};
  call.roles = {Role::kIn, Role::kIn, Role::kOut};
  call.tensors = {Tensor(DType::kF32, {3}), Tensor(DType::kF32, {3}), Tensor(DType::kF32, {1})};
  for (int i = 0; i < 3; ++i) {
    call.tensors[0].data<float>()[i] = static_cast<float>(i + 1);  // 1 2 3
    call.tensors[1].data<float>()[i] = static_cast<float>(i + 4);  // 4 5 6
  }
  return call;
}

// kc's process lists a plugin's impls without loading it; the worker that
// runs an impl loads it. --isolate none loads it in kc's process: the user's
// explicit choice.
TEST(PluginLoading, TheWorkerLoadsThePluginKcDoesNot) {
  ASSERT_TRUE(std::filesystem::exists(kExamplePlugin)) << kExamplePlugin;
  auto backend = backends::make_plugin_backend(std::vector<std::string>{kExamplePlugin});
  ASSERT_TRUE(backend->probe().available) << backend->probe().reason;
  std::shared_ptr<const Impl> dot;
  for (const auto& impl : backend->impls())
    if (impl->declaration().name == "example.dot_fp32") dot = impl;
  ASSERT_NE(dot, nullptr);
  EXPECT_FALSE(mapped_here(kExamplePlugin)) << "listing the impls loaded the plugin into kc's process";

  isolate::Worker worker(*dot, isolate::Mode::kProcess, isolate::Limits{});
  ASSERT_TRUE(worker.isolated());
  Call call = dot_call();
  const isolate::Outcome o = worker.run(call);
  ASSERT_TRUE(o.status.ok()) << o.status.to_string();
  EXPECT_EQ(call.tensors[2].data<float>()[0], 32.0f);  // 4 + 10 + 18
  EXPECT_EQ(worker.spawned(), 1);
  EXPECT_FALSE(mapped_here(kExamplePlugin)) << "running an impl in a worker loaded the plugin into kc's process";

  isolate::Worker in_process(*dot, isolate::Mode::kNone, isolate::Limits{});
  Call again = dot_call();
  ASSERT_TRUE(in_process.run(again).status.ok());
  EXPECT_EQ(again.tensors[2].data<float>()[0], 32.0f);
  EXPECT_TRUE(mapped_here(kExamplePlugin));
}

// A constructor that tries to reach out of its process (SIGKILL to its
// parent, SIGSTOP to kc by pid, a file written outside the scratch /tmp, a
// socket) runs inside the sandbox twice: in its probe child and in the
// worker. Each time it reports what it got, and the report must show it ran
// there: uid nobody (when kc is root), every attempt refused. kc (this
// process) is not stopped or killed, and the file is not there.
struct Escape {
  std::string probe;   ///< what the constructor saw in the probe child
  std::string worker;  ///< what it saw in the worker
};

Escape escape_from(const std::string& lib, const std::string& target) {
  setenv("KC_HOSTILE_KC_PID", tag().c_str(), 1);
  setenv("KC_HOSTILE_WRITE", target.c_str(), 1);
  std::filesystem::remove(target);
  Escape e;
  const backends::PluginSource src{lib, nullptr, backends::LoadPolicy::kWorkerOnly, {"kc_hostile_observed"}};
  auto loaded = backends::load_plugin(src, "plugin");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  if (!loaded.ok() || loaded->impls.empty()) return e;
  e.probe = loaded->info["kc_hostile_observed"];
  isolate::Worker worker(*loaded->impls[0], isolate::Mode::kProcess, isolate::Limits{});
  EXPECT_TRUE(worker.isolated());
  Call call = dot_call();
  e.worker = worker.run(call).status.message();
  return e;
}

void expect_confined(const std::string& seen, const char* where) {
  EXPECT_NE(seen.find("ran uid="), std::string::npos) << where << ": the constructor reported nothing: " << seen;
  if (geteuid() == 0) {
    EXPECT_NE(seen.find("ran uid=65534 "), std::string::npos) << where << ": " << seen;
  }
  EXPECT_NE(seen.find(" kill_kc=-1/"), std::string::npos) << where << ": " << seen;
  EXPECT_NE(seen.find(" open=-1/"), std::string::npos) << where << ": " << seen;
  EXPECT_NE(seen.find(" socket=-1/"), std::string::npos) << where << ": " << seen;
}

bool stopped_or_gone(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return true;
  const std::size_t rp = stat.rfind(')');
  return rp == std::string::npos || rp + 2 >= stat.size() || stat[rp + 2] == 'T';
}

// With namespaces, from a copy under /tmp: the sandbox's scratch tmpfs hides
// that path, so the file is loaded through the descriptor opened before.
TEST(HostileEscape, TheConstructorRunsInsideTheSandboxInProbeAndWorker) {
  const std::string built = hostile("escape_in_ctor");
  ASSERT_TRUE(std::filesystem::exists(built)) << built;
  const std::string dir = "/tmp/kc-hostile-" + tag();
  std::filesystem::create_directories(dir);
  const std::string lib = dir + "/escape_in_ctor.so";
  std::filesystem::copy_file(built, lib, std::filesystem::copy_options::overwrite_existing);
  const std::string target = std::string(KC_BINARY_DIR) + "/hostile_escape_" + tag();
  const Escape e = escape_from(lib, target);
  expect_confined(e.probe, "probe child");
  expect_confined(e.worker, "worker");
  EXPECT_FALSE(std::filesystem::exists(target)) << "the constructor wrote " << target;
  EXPECT_FALSE(stopped_or_gone(getpid()));
  EXPECT_FALSE(mapped_here(lib));
  EXPECT_TRUE(none_left());
  std::filesystem::remove_all(dir);
}

// Where namespaces are refused (forced here), the fallback: seccomp refuses
// the signals to other processes and the write-open.
TEST(HostileEscape, TheConstructorIsConfinedWithoutNamespacesToo) {
  const std::string lib = hostile("escape_in_ctor");
  ASSERT_TRUE(std::filesystem::exists(lib)) << lib;
  setenv("KC_ISOLATE_NO_NAMESPACES", "1", 1);
  const std::string target = std::string(KC_BINARY_DIR) + "/hostile_escape_nons_" + tag();
  const Escape e = escape_from(lib, target);
  unsetenv("KC_ISOLATE_NO_NAMESPACES");
  expect_confined(e.probe, "probe child");
  expect_confined(e.worker, "worker");
  EXPECT_NE(e.probe.find(" kill_parent=-1/"), std::string::npos) << e.probe;  // kc, refused
  EXPECT_FALSE(std::filesystem::exists(target)) << "the constructor wrote " << target;
  EXPECT_FALSE(stopped_or_gone(getpid()));
  EXPECT_TRUE(none_left());
}

// BLIS reads BLIS_ARCH_TYPE when it initialises and aborts on an id outside
// its arch table (99: "Invalid architecture id value", in every build; the
// ids a build carries work, BlasBackendTest.BlisArchType*): with it set, kc
// lists blis as unavailable and says why, and a check of another impl goes on
// (exit 0: blis was not what the user asked about).
TEST(SystemLibraryLoading, BlisWithAnInvalidArchTypeIsUnavailableNotFatal) {
  const CliRun plain = kc_run("", "backends");
  ASSERT_EQ(plain.code, 0) << plain.out;
  if (plain.out.find("blis         available") == std::string::npos)
    GTEST_SKIP() << "BLIS is not installed here (kc backends lists it unavailable)";
  const CliRun listed = kc_run("BLIS_ARCH_TYPE=99", "backends");
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("aborted while loading (SIGABRT)"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("Invalid architecture id"), std::string::npos) << listed.out;  // what BLIS printed, kept
  EXPECT_NE(listed.out.find("openblas     available"), std::string::npos) << listed.out;

  const CliRun checked =
      kc_run("BLIS_ARCH_TYPE=99", "check " KC_SOURCE_DIR "/contracts/blas/KC-GEMM-01.kc --impl ref.matmul --no-color");
  EXPECT_EQ(checked.code, 0) << checked.out;
  EXPECT_NE(checked.out.find("kc: unavailable: "), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("libblis.so.4: aborted while loading (SIGABRT)"), std::string::npos) << checked.out;
  EXPECT_TRUE(checked.out.find("ref.matmul") != std::string::npos &&
              checked.out.find("conforming") != std::string::npos)
      << checked.out;
}

}  // namespace
}  // namespace kc
