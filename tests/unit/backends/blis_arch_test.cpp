// BLIS sub-configurations: BLIS_ARCH_TYPE honoured (bli_init before the arch
// query), each sub-configuration of the build as its own impls
// (blis.<routine>_arch_<name>), and those this CPU cannot run not applicable
// with the reason, never a dead worker.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "../../../backends/blas/blas_library.h"
#include "backend_test_util.h"
#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/isolate.h"

namespace kc {
namespace {

using backend_test::registry;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

/// The base BLIS instance, or a skip when BLIS is not installed.
#define KC_OPEN_BLIS_OR_SKIP(var)                                                       \
  auto var##_or = backends::BlasLibrary::open(backends::blis_spec());                  \
  if (!var##_or.ok()) GTEST_SKIP() << "BLIS unavailable: " << var##_or.status().message(); \
  const backends::BlasLibrary& var = **var##_or

/// The arch id this BLIS build gives `name`, or -1.
int arch_id_of(const backends::BlasLibrary& lib, const std::string& name) {
  for (const auto& [id, n] : lib.arch_table())
    if (n == name) return id;
  return -1;
}

/// A sub-configuration of the x86_64 family this CPU cannot run, or nullptr.
const backends::BlisSubconfig* unrunnable_subconfig() {
  for (const backends::BlisSubconfig& sc : backends::blis_x86_64_subconfigs())
    if (!backends::missing_cpu_features(sc).empty()) return &sc;
  return nullptr;
}

struct CliRun {
  int code = -1;
  std::string out;
};

CliRun kc_cli(const std::string& env, const std::string& args) {
  CliRun r;
  const std::string kc = std::string(KC_BINARY_DIR) + "/bin/kc";
  if (!std::filesystem::exists(kc)) {
    ADD_FAILURE() << kc << " is not built (cmake --build --preset ci --target kc)";
    return r;
  }
  const std::string cmd = env + " " + kc + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The arch table is read from the library, up to "generic", and names every
// sub-configuration of the x86_64 family kc knows the requirements of.
TEST(BlisArch, ArchTableEndsWithGenericAndHoldsTheX86Family) {
  KC_OPEN_BLIS_OR_SKIP(lib);
  const auto table = lib.arch_table();
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(table.back().second, "generic");
  for (std::size_t i = 0; i < table.size(); ++i) EXPECT_EQ(table[i].first, static_cast<int>(i));
  for (const backends::BlisSubconfig& sc : backends::blis_x86_64_subconfigs())
    EXPECT_GE(arch_id_of(lib, sc.name), 0) << sc.name;
  // The instance reports a real arch, after bli_init, never -1.
  const int id = lib.arch_id();
  ASSERT_GE(id, 0);
  std::printf("[ measured ] BLIS picks arch %d (%s) on this CPU; version line: %s\n", id,
              lib.arch_name(id).c_str(), lib.version().c_str());
  EXPECT_NE(lib.version().find("arch " + lib.arch_name(id) + " (id " + std::to_string(id)), std::string::npos)
      << lib.version();
}

// A fresh copy initialised with BLIS_ARCH_TYPE=<id> reads the id back, for
// every sub-configuration this CPU can run; the variable is set only while
// the copy initialises.
TEST(BlisArch, FreshCopyHonoursArchType) {
  if (kSanitized) GTEST_SKIP() << "dlmopen copies are disabled in sanitizer builds";
  KC_OPEN_BLIS_OR_SKIP(lib);
  const bool had = std::getenv("BLIS_ARCH_TYPE") != nullptr;
  int copies = 0;
  for (const char* name : {"haswell", "generic"}) {
    const int id = arch_id_of(lib, name);
    ASSERT_GE(id, 0) << name;
    auto copy = backends::BlasLibrary::open_fresh(backends::blis_spec(), lib.path(), "BLIS_ARCH_TYPE",
                                                  std::to_string(id));
    ASSERT_TRUE(copy.ok()) << copy.status().message();
    EXPECT_EQ((*copy)->arch_id(), id) << name;
    EXPECT_EQ((*copy)->arch_name((*copy)->arch_id()), name);
    EXPECT_NE(reinterpret_cast<void*>((*copy)->sgemm), reinterpret_cast<void*>(lib.sgemm));
    ++copies;
  }
  EXPECT_EQ(copies, 2);
  EXPECT_EQ(std::getenv("BLIS_ARCH_TYPE") != nullptr, had);
}

// `BLIS_ARCH_TYPE=<id> kc backends` loads BLIS with that sub-configuration
// and says so; it used to abort while loading (the arch was queried before
// bli_init). An id outside the table still makes blis unavailable, not kc dead.
TEST(BlisArch, ArchTypeInTheEnvironmentIsHonouredByKc) {
  KC_OPEN_BLIS_OR_SKIP(lib);
  const int haswell = arch_id_of(lib, "haswell");
  ASSERT_GE(haswell, 0);
  if (!backends::missing_cpu_features(*backends::find_blis_subconfig("haswell")).empty())
    GTEST_SKIP() << "this CPU cannot run the haswell sub-configuration";
  const std::string env = "BLIS_ARCH_TYPE=" + std::to_string(haswell);
  const CliRun listed = kc_cli(env, "backends");
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("blis         available    BLIS "), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("arch haswell (id " + std::to_string(haswell) + ", " + env + ")"), std::string::npos)
      << listed.out;

  const CliRun checked = kc_cli(env, "check " KC_SOURCE_DIR "/contracts/blas/KC-GEMM-01.kc --impl blis.sgemm "
                                     "--samples 1 --no-color");
  EXPECT_EQ(checked.code, 0) << checked.out;
  EXPECT_NE(checked.out.find("blis.sgemm  conforming"), std::string::npos) << checked.out;
}

// Forcing a sub-configuration the CPU cannot run (bulldozer's FMA4 on a CPU
// without it) would kill every call with SIGILL: blis's impls are not
// applicable instead, with the missing features named.
TEST(BlisArch, ForcedArchTheCpuLacksMakesBlisImplsNotApplicable) {
  KC_OPEN_BLIS_OR_SKIP(lib);
  const backends::BlisSubconfig* sc = unrunnable_subconfig();
  if (!sc) GTEST_SKIP() << "this CPU runs every x86_64 sub-configuration";
  const std::string env = "BLIS_ARCH_TYPE=" + std::to_string(arch_id_of(lib, sc->name));
  const CliRun listed = kc_cli(env, "backends");
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("its impls are not applicable: BLIS runs sub-configuration " + std::string(sc->name)),
            std::string::npos)
      << listed.out;
  const CliRun checked = kc_cli(env, "check " KC_SOURCE_DIR "/contracts/blas/KC-GEMM-01.kc --impl blis.sgemm "
                                     "--samples 1 --no-color");
  EXPECT_EQ(checked.code, 4) << checked.out;  // no case judged: not applicable, not a crash
  EXPECT_NE(checked.out.find("1 not_applicable"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find(backends::missing_cpu_features(*sc)), std::string::npos) << checked.out;
  EXPECT_EQ(checked.out.find("CRASH"), std::string::npos) << checked.out;
}

// The impls: two per sub-configuration, declaring which one.
TEST(BlisArch, OneSgemmAndSdotImplPerSubconfiguration) {
  if (!registry().find_impl("blis.sgemm")) GTEST_SKIP() << backend_test::backend_info("blis").reason;
  for (const backends::BlisSubconfig& sc : backends::blis_x86_64_subconfigs()) {
    auto gemm = registry().find_impl(std::string("blis.sgemm_arch_") + sc.name);
    auto dot = registry().find_impl(std::string("blis.sdot_arch_") + sc.name);
    ASSERT_NE(gemm, nullptr) << sc.name;
    ASSERT_NE(dot, nullptr) << sc.name;
    EXPECT_EQ(gemm->declaration().extra.at("blis_arch"), sc.name);
    EXPECT_EQ(dot->declaration().op, "dot");
    EXPECT_NE(gemm->declaration().source.find("BLIS_ARCH_TYPE"), std::string::npos);
  }
}

// A sub-configuration the CPU lacks features for is not applicable with the
// features named, in both isolation modes (no copy is ever made of it).
TEST(BlisArch, UnrunnableSubconfigurationIsNotApplicableWithTheReason) {
  if (kSanitized) GTEST_SKIP() << "sub-configuration impls are disabled in sanitizer builds";
  if (!registry().find_impl("blis.sgemm")) GTEST_SKIP() << backend_test::backend_info("blis").reason;
  const backends::BlisSubconfig* sc = unrunnable_subconfig();
  if (!sc) GTEST_SKIP() << "this CPU runs every x86_64 sub-configuration";
  for (isolate::Mode mode : {isolate::Mode::kProcess, isolate::Mode::kNone}) {
    engine::CheckRequest request;
    request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc"};
    request.contracts = {"KC-GEMM-01"};
    request.impls = {std::string("blis.sgemm_arch_") + sc->name};
    request.samples = 1;
    request.isolation = mode;
    const engine::CheckResult r = engine::run_check(request, registry());
    ASSERT_EQ(r.cases.size(), 1u);
    EXPECT_EQ(r.cases[0].verdict, engine::Verdict::kNotApplicable) << r.cases[0].reason;
    EXPECT_NE(r.cases[0].reason.find("which this CPU lacks"), std::string::npos) << r.cases[0].reason;
    EXPECT_NE(r.cases[0].reason.find(backends::missing_cpu_features(*sc)), std::string::npos) << r.cases[0].reason;
  }
}

// An id the build does not carry aborts BLIS: the probe child says so, and
// kc's process survives. Debian's x86_64 build knows the name "knc" (the enum
// is shared by all builds) but does not carry it.
TEST(BlisArch, ProbeChildReportsAnIdTheBuildDoesNotCarry) {
  if (kSanitized) GTEST_SKIP() << "dlmopen copies are disabled in sanitizer builds";
  KC_OPEN_BLIS_OR_SKIP(lib);
  const int knc = arch_id_of(lib, "knc");
  if (knc < 0) GTEST_SKIP() << "this BLIS has no knc id";
  auto probed = backends::blis_arch_probe(lib, knc);
  ASSERT_FALSE(probed.ok()) << "knc probed as carried: " << *probed;
  EXPECT_NE(probed.status().message().find("aborted while loading (SIGABRT)"), std::string::npos)
      << probed.status().message();
  const int generic = arch_id_of(lib, "generic");
  auto ok = backends::blis_arch_probe(lib, generic);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "generic");
}

// Every sub-configuration this CPU runs meets the GEMM error bound, in worker
// processes as `kc check` runs them.
TEST(BlisArch, RunnableSubconfigurationsConformToGemmContract) {
  if (kSanitized) GTEST_SKIP() << "dlmopen copies are disabled in sanitizer builds";
  if (!registry().find_impl("blis.sgemm")) GTEST_SKIP() << backend_test::backend_info("blis").reason;
  const auto cases = backend_test::smoke_check("contracts/blas/KC-GEMM-01.kc", "KC-GEMM-01", "blis.sgemm_arch_*");
  int conforming = 0;
  for (const auto& c : cases) {
    const backends::BlisSubconfig* sc = backends::find_blis_subconfig(c.impl.substr(c.impl.rfind('_') + 1));
    ASSERT_NE(sc, nullptr) << c.impl;
    if (backends::missing_cpu_features(*sc).empty()) {
      EXPECT_EQ(c.verdict, engine::Verdict::kConforming) << c.impl << ": " << c.reason;
      ++conforming;
    } else {
      EXPECT_EQ(c.verdict, engine::Verdict::kNotApplicable) << c.impl << ": " << c.reason;
    }
  }
  EXPECT_GT(conforming, 0);
}

}  // namespace
}  // namespace kc
