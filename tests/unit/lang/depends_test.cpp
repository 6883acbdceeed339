// The optional `depends` line: both front ends, canonical printing, and the
// set-level checks (unknown ids with a suggestion, cycles).
#include <gtest/gtest.h>

#include "kc/lang.h"

namespace kc::lang {
namespace {

const char* kTwo = R"(contract KC-A-01 {
  scope      matmul
  pre        precision(A, B, C) in {FP32}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  relative 1e-5
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max rel_error; pass if <= 1
  violation  "x"
}

contract KC-B-01 {
  title      "b"
  depends    KC-A-01, KC-C-01
  scope      matmul
  pre        precision(A, B, C) in {FP32}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  relative 1e-5
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max rel_error; pass if <= 1
  violation  "x"
}
)";

TEST(Depends, ParsesPrintsAndRoundTripsThroughYaml) {
  ParseResult p = parse_kc(kTwo, "t.kc");
  ASSERT_FALSE(p.has_errors()) << (p.diagnostics.empty() ? "" : p.diagnostics[0].render());
  ASSERT_EQ(p.document.contracts[1].depends, (std::vector<std::string>{"KC-A-01", "KC-C-01"}));
  EXPECT_EQ(p.document.contracts[1].depends_locs[1].line, 13);
  EXPECT_EQ(p.document.contracts[1].depends_locs[1].column, 23);
  const std::string kc = print_kc(p.document);
  EXPECT_NE(kc.find("  depends    KC-A-01, KC-C-01\n"), std::string::npos) << kc;
  EXPECT_EQ(print_kc(parse_kc(kc, "t.kc").document), kc);
  const std::string yaml = print_yaml(p.document);
  EXPECT_NE(yaml.find("depends:"), std::string::npos) << yaml;
  ParseResult y = parse_yaml(yaml, "t.yaml");
  ASSERT_FALSE(y.has_errors()) << (y.diagnostics.empty() ? "" : y.diagnostics[0].render());
  EXPECT_EQ(y.document.contracts[1].depends, p.document.contracts[1].depends);
  EXPECT_EQ(print_kc(y.document), kc);
}

TEST(Depends, UnknownIdGetsLocationAndSuggestion) {
  ParseResult p = parse_kc(kTwo, "t.kc");
  // KC-C-01 is not in the set; KC-A-01 is the nearest id.
  const auto diags = resolve_depends(p.document.contracts);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].loc.line, 13);
  EXPECT_EQ(diags[0].suggestion, "KC-A-01");
  EXPECT_NE(diags[0].render().find("unknown contract 'KC-C-01'"), std::string::npos) << diags[0].render();
}

TEST(Depends, CycleAndSelfAndMalformedIdsAreErrors) {
  ParseResult p = parse_kc(kTwo, "t.kc");
  p.document.contracts[0].depends = {"KC-B-01"};
  p.document.contracts[1].depends = {"KC-A-01"};
  const auto diags = resolve_depends(p.document.contracts);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("dependency cycle"), std::string::npos) << diags[0].message;

  std::string self = kTwo;
  self.replace(self.find("KC-A-01, KC-C-01"), 16, "KC-B-01");
  EXPECT_TRUE(parse_kc(self, "t.kc").has_errors());
  std::string bad = kTwo;
  bad.replace(bad.find("KC-A-01, KC-C-01"), 16, "KC-A-01, K C");
  EXPECT_TRUE(parse_kc(bad, "t.kc").has_errors());
}

TEST(Depends, YamlListForm) {
  const char* y = R"(contracts:
  - id: KC-B-01
    depends: [KC-A-01]
    scope: matmul
)";
  ParseResult p = parse_yaml(y, "t.yaml");
  ASSERT_EQ(p.document.contracts.size(), 1u);
  EXPECT_EQ(p.document.contracts[0].depends, (std::vector<std::string>{"KC-A-01"}));
}

}  // namespace
}  // namespace kc::lang
