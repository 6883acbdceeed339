// `kc lint` on `reference higher_precision P with key = value`: a key or
// value the contract's op does not declare (Op::oracle_options), or a
// precision other than FP64, makes the clause descriptive, at the word, with
// the op's keys and the nearest one; declared options stay executable.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "kc/lang.h"
#include "kc/oracle_options.h"

namespace kc {
namespace {

/// The contract with `reference` on line 6, parsed from a file (the lint
/// check reads the file to place the finding), marked and linted.
Contract linted(const std::string& scope, const std::string& reference, std::vector<lang::LintFinding>* findings) {
  const std::string file =
      (std::filesystem::temp_directory_path() / ("kc_oracle_options_" + std::to_string(::getpid()) + ".kc")).string();
  {
    std::ofstream out(file);
    out << "contract T-OPT {\n"
        << "  scope      " << scope << "\n"
        << "  pre        precision(x) in {FP32}\n"
        << "  post       output y satisfies elementwise_close(y, ref(y))\n"
        << "  tolerance  relative 1e-3\n"
        << "  reference  " << reference << "\n"
        << "  measure    sample 2 random inputs per config; compute max rel_error; pass if <= 1\n"
        << "  violation  signature TOLERANCE_EXCEEDED\n"
        << "}\n";
  }
  auto parsed = lang::parse_file(file);
  for (const auto& d : parsed.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(parsed.document.contracts.size(), 1u);
  std::vector<Contract> contracts = parsed.document.contracts;
  engine::mark_unhonoured_references(&contracts, {file});
  std::filesystem::remove(file);
  if (contracts.empty()) return {};
  Document doc;
  doc.contracts = contracts;
  *findings = lang::lint(doc);
  return contracts[0];
}

TEST(OracleOptionsLint, AnUndeclaredKeyIsDescriptiveAtTheKey) {
  std::vector<lang::LintFinding> f;
  const std::string ref =
      "higher_precision FP64 with softmax_stabilization = max_subtraction, accumulator = FP32, "
      "summation = pairwise";
  const Contract c = linted("softmax", ref, &f);
  EXPECT_FALSE(c.executable());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].clause, "reference");
  EXPECT_EQ(f[0].loc.line, 6);
  EXPECT_EQ(f[0].loc.column, static_cast<int>(std::string("  reference  ").size() + ref.find("summation") + 1));
  EXPECT_NE(f[0].message.find("'summation'"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("known: softmax_stabilization, accumulator, reduction_order"), std::string::npos)
      << f[0].message;
}

TEST(OracleOptionsLint, AMisspelledKeyGetsTheNearest) {
  std::vector<lang::LintFinding> f;
  const Contract c = linted("softmax", "higher_precision FP64 with acumulator = FP32", &f);
  EXPECT_FALSE(c.executable());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("nearest: accumulator"), std::string::npos) << f[0].message;
}

TEST(OracleOptionsLint, AnUndeclaredValueIsDescriptive) {
  std::vector<lang::LintFinding> f;
  const Contract c = linted("log_softmax", "higher_precision FP64 with softmax_stabilization = online", &f);
  EXPECT_FALSE(c.executable());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("max_subtraction | none"), std::string::npos) << f[0].message;
}

TEST(OracleOptionsLint, AKeyOneScopedOpLacksIsDescriptive) {
  // softmax_stabilization: softmax declares it, sum does not.
  std::vector<lang::LintFinding> f;
  const Contract c = linted("softmax, sum", "higher_precision FP64 with softmax_stabilization = none", &f);
  EXPECT_FALSE(c.executable());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("sum's oracle"), std::string::npos) << f[0].message;
}

TEST(OracleOptionsLint, AnFp32ReferenceWithDeclaredOptionsIsExecutable) {
  std::vector<lang::LintFinding> f;
  const Contract c = linted("softmax",
                            "higher_precision FP32 with softmax_stabilization = max_subtraction, accumulator = FP32, "
                            "reduction_order = row_major",
                            &f);
  EXPECT_TRUE(c.executable());
  EXPECT_TRUE(f.empty());
  const Contract i = linted("softmax", "higher_precision I32", &f);
  EXPECT_FALSE(i.executable());
}

TEST(OracleOptionsLint, DeclaredOptionsStayExecutable) {
  std::vector<lang::LintFinding> f;
  const Contract c =
      linted("softmax, log_softmax", "higher_precision FP64 with softmax_stabilization = none, accumulator = FP32", &f);
  EXPECT_TRUE(c.executable());
  EXPECT_TRUE(f.empty());
  const Contract plain = linted("softmax", "higher_precision FP64", &f);
  EXPECT_TRUE(plain.executable());
}

}  // namespace
}  // namespace kc

namespace kc {
namespace {

TEST(OracleOptionsLint, AKeyGivenTwiceIsNotExecutable) {
  auto r = lang::parse_kc(R"(
contract T-TWICE {
  scope      softmax
  pre        precision(x) in {FP32}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  relative 1e-3
  reference  higher_precision FP64 with accumulator = FP32, accumulator = FP64
  measure    sample 2 random inputs per config; compute max rel_error; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
})",
                          "t.kc");
  ASSERT_EQ(r.document.contracts.size(), 1u);
  EXPECT_FALSE(r.document.contracts[0].executable());
  EXPECT_NE(r.document.contracts[0].reference_info.gap.find("given twice"), std::string::npos)
      << r.document.contracts[0].reference_info.gap;
}

}  // namespace
}  // namespace kc
