// The valgrind isolation mode: memcheck's XML split by kc's kernel-call
// markers, and end to end, a kernel that reads past a heap workspace of its
// own (which kc's guard pages never see) caught under --isolate valgrind while
// its clean twin is not.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "kc/memcheck.h"
#include "kc/signature.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KC_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KC_TEST_ASAN 1
#endif

namespace kc::memcheck {
namespace {

std::string error_xml(const std::string& kind, const std::string& fn, const std::string& obj) {
  return "<error>\n  <unique>0x1</unique>\n  <tid>1</tid>\n  <kind>" + kind +
         "</kind>\n  <what>Invalid read of size 4</what>\n  <stack>\n    <frame>\n      <ip>0x1</ip>\n      <obj>" +
         obj + "</obj>\n      <fn>" + fn +
         "</fn>\n    </frame>\n  </stack>\n  <auxwhat>Address 0x4a is 0 bytes after a block of size 16 "
         "alloc&apos;d</auxwhat>\n</error>\n";
}

std::string marker(const char* text) {
  return "<clientmsg>\n  <tid>1</tid>\n  <text>" + std::string(text) + "\n  </text>\n</clientmsg>\n";
}

TEST(MemcheckXml, OnlyErrorsInsideAKernelCallCount) {
  const std::string xml = "<?xml version=\"1.0\"?>\n<valgrindoutput>\n" +
                          error_xml("InvalidRead", "strncmp", "/usr/lib/ld-linux-x86-64.so.2") +
                          marker(kKernelBegin) + error_xml("InvalidRead", "dot", "/x/lib/workspace.so") +
                          marker(kKernelEnd) + error_xml("UninitCondition", "oracle", "/x/bin/kc") +
                          marker(kKernelBegin) + marker(kKernelEnd) + "</valgrindoutput>\n";
  const Report r = parse_xml(xml);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.kernel_calls, 2);
  EXPECT_EQ(r.outside, 2);
  ASSERT_EQ(r.in_kernel.size(), 1u);
  EXPECT_EQ(r.in_kernel[0].kind, "InvalidRead");
  EXPECT_EQ(r.in_kernel[0].object, "workspace.so");
  EXPECT_EQ(r.in_kernel[0].line(),
            "InvalidRead: Invalid read of size 4 (Address 0x4a is 0 bytes after a block of size 16 alloc'd); at dot "
            "(workspace.so)");
  EXPECT_FALSE(parse_xml("<valgrindoutput>\n" + marker(kKernelBegin)).complete);
}

TEST(MemcheckXml, ApplyMakesAnErrorWithTheSignatureOrAddsANote) {
  Report r;
  r.complete = true;
  r.kernel_calls = 3;
  engine::CaseResult clean;
  clean.verdict = engine::Verdict::kConforming;
  apply(r, clean);
  EXPECT_EQ(clean.verdict, engine::Verdict::kConforming);
  ASSERT_FALSE(clean.evidence.notes.empty());
  EXPECT_NE(clean.evidence.notes.back().find("0 errors in 3 kernel call(s)"), std::string::npos);
  r.in_kernel.push_back({"InvalidWrite", "Invalid write of size 8", "pack (libfoo.so)", "libfoo.so"});
  engine::CaseResult bad;
  bad.verdict = engine::Verdict::kConforming;
  apply(r, bad);
  EXPECT_EQ(bad.verdict, engine::Verdict::kError);
  ASSERT_FALSE(bad.signatures.empty());
  EXPECT_EQ(bad.signatures[0].to_string(), "MEMCHECK(InvalidWrite, libfoo.so)");
}

struct CliRun {
  int code = -1;
  std::string out;
};

CliRun kc_run(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(KC_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(ValgrindIsolation, AWorkspaceOverReadIsAnErrorItsCleanTwinIsNot) {
#ifdef KC_TEST_ASAN
  GTEST_SKIP() << "valgrind cannot run an AddressSanitizer build of kc";
#endif
  if (!find_binary()) GTEST_SKIP() << "valgrind is not installed (scripts/install-deps.sh installs it)";
  const std::string contract = ::testing::TempDir() + "kc_memcheck_dot.kc";
  {
    std::ofstream f(contract);
    f << "contract T-WS-01 {\n"
         "  scope      dot\n"
         "  pre        precision(x, y) in {FP32} and value_range(x, y) normal(0, 1) and n in {64}\n"
         "  post       output out satisfies elementwise_close(out, ref(out))\n"
         "  tolerance  bound gamma(n + 1, P) * |x|\n"
         "  reference  higher_precision FP64\n"
         "  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1\n"
         "  violation  signature TOLERANCE_EXCEEDED\n"
         "}\n";
  }
  const std::string base = "check " + contract + " --plugin " KC_WORKSPACE_PLUGIN " --impl 'workspace.*' --no-color";
  // Without valgrind both conform: the over-read is on the heap, not next to a tensor.
  const CliRun plain = kc_run(base);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("2 conforming"), std::string::npos) << plain.out;
  const CliRun vg = kc_run(base + " --isolate valgrind");
  EXPECT_EQ(vg.code, 1) << vg.out;  // an error verdict
  EXPECT_NE(vg.out.find("MEMCHECK(InvalidRead, workspace.so)"), std::string::npos) << vg.out;
  EXPECT_NE(vg.out.find("1 conforming"), std::string::npos) << vg.out;
  EXPECT_NE(vg.out.find("1 error"), std::string::npos) << vg.out;
}

}  // namespace
}  // namespace kc::memcheck
