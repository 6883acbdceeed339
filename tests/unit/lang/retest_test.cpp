// Retest schedules: the `retest` line's grammar, major versions, and the plan
// for one library update.
#include <gtest/gtest.h>

#include "kc/lang.h"
#include "kc/retest.h"

namespace kc {
namespace {

Contract with_retest(const std::string& id, const std::string& retest) {
  const std::string text = "contract " + id + " {\n" + (retest.empty() ? "" : "  retest  " + retest + "\n") +
                           "  scope   relu\n}\n";
  auto parsed = lang::parse_kc(text, "t.kc");
  EXPECT_EQ(parsed.document.contracts.size(), 1u);
  for (const auto& d : parsed.diagnostics)
    EXPECT_NE(d.severity, lang::Diagnostic::Severity::kError) << d.render();
  return parsed.document.contracts.front();
}

TEST(Retest, ParsesTheThreeSchedules) {
  auto a = parse_retest("always");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, "always");
  EXPECT_TRUE(a->declared);
  auto m = parse_retest("  major_version ");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kind, "major_version");
  auto n = parse_retest("release_notes {gemm, loss scaling ,threads}");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->subsystems, (std::vector<std::string>{"gemm", "loss scaling", "threads"}));
}

TEST(Retest, RefusesWhatIsNotASchedule) {
  std::size_t at = 99;
  auto typo = parse_retest("alwayz", &at);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'always'"), std::string::npos) << typo.status().message();
  EXPECT_EQ(at, 0u);
  EXPECT_FALSE(parse_retest("always now").ok());
  EXPECT_FALSE(parse_retest("release_notes").ok());
  EXPECT_FALSE(parse_retest("release_notes {gemm").ok());
  EXPECT_FALSE(parse_retest("release_notes {gemm, }").ok());
  EXPECT_FALSE(parse_retest("release_notes {gemm} extra").ok());
  EXPECT_FALSE(parse_retest("").ok());
}

TEST(Retest, ABadLineIsAnErrorAtItsPlace) {
  auto parsed = lang::parse_kc("contract X-1 {\n  retest  major_versoin\n  scope relu\n}\n", "t.kc");
  bool found = false;
  for (const auto& d : parsed.diagnostics)
    if (d.severity == lang::Diagnostic::Severity::kError && d.loc.line == 2) {
      found = true;
      EXPECT_EQ(d.loc.column, 11) << d.render();
      EXPECT_NE(d.message.find("major_version"), std::string::npos) << d.render();
    }
  EXPECT_TRUE(found);
}

TEST(Retest, TheLineReadsBackFromBothForms) {
  const Contract c = with_retest("X-1", "release_notes {softmax, layer norm}");
  Document doc;
  doc.contracts.push_back(c);
  const std::string kc_text = lang::print_kc(doc);
  EXPECT_NE(kc_text.find("retest     release_notes {softmax, layer norm}"), std::string::npos) << kc_text;
  auto again = lang::parse_kc(kc_text, "again.kc");
  ASSERT_EQ(again.document.contracts.size(), 1u);
  EXPECT_EQ(retest_rule(again.document.contracts[0]).subsystems, (std::vector<std::string>{"softmax", "layer norm"}));
  auto yaml = lang::parse_yaml(lang::print_yaml(doc), "again.yaml");
  ASSERT_EQ(yaml.document.contracts.size(), 1u);
  EXPECT_EQ(retest_rule(yaml.document.contracts[0]).kind, "release_notes");
}

TEST(Retest, MajorVersionIsTheLeadingPartUpToTheFirstNonZero) {
  EXPECT_EQ(major_version("0.3.21"), "0.3");
  EXPECT_EQ(major_version("0.9.0"), "0.9");
  EXPECT_EQ(major_version("2.6.3"), "2");
  EXPECT_EQ(major_version("v1.1"), "1");
  EXPECT_EQ(major_version("3.4.0-rc1"), "3");
  EXPECT_EQ(major_version("0.0.7"), "0.0.7");
  EXPECT_EQ(major_version("trunk"), "");
}

TEST(Retest, ThePlanFollowsEachSchedule) {
  const std::vector<Contract> cs = {with_retest("A-1", "always"), with_retest("B-1", "major_version"),
                                    with_retest("C-1", "release_notes {loss scaling, softmax}"),
                                    with_retest("D-1", "")};
  // A patch release whose notes name no subsystem of C-1.
  auto plan = retest_plan(cs, "0.3.21", "0.3.29", "Fixed sgemm on Zen.", true);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_TRUE(plan[0].run);
  EXPECT_FALSE(plan[1].run) << plan[1].why;
  EXPECT_FALSE(plan[2].run) << plan[2].why;
  EXPECT_TRUE(plan[3].run);
  EXPECT_FALSE(plan[3].rule.declared);
  // Notes that name a subsystem in another spelling; a major version change.
  plan = retest_plan(cs, "0.9.0", "1.1", "* Improved LOSS-SCALING support", true);
  EXPECT_TRUE(plan[1].run) << plan[1].why;
  EXPECT_TRUE(plan[2].run) << plan[2].why;
  EXPECT_NE(plan[2].why.find("loss scaling"), std::string::npos);
  // A word inside another word is not a mention ("softmaxes" names softmax? no: "presoftmax" does not).
  plan = retest_plan(cs, "1.0", "1.1", "presoftmax cleanup", true);
  EXPECT_FALSE(plan[2].run) << plan[2].why;
  // No notes given: every release_notes contract runs.
  plan = retest_plan(cs, "1.0", "1.1", "", false);
  EXPECT_TRUE(plan[2].run);
  // A version kc cannot read counts as a major change.
  plan = retest_plan(cs, "trunk", "1.1", "", false);
  EXPECT_TRUE(plan[1].run) << plan[1].why;
}

}  // namespace
}  // namespace kc
