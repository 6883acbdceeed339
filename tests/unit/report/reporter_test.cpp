// The report formats' table: unique names and files, every row renders, and
// the report set kc grade writes is exactly the rows with a file.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kc/engine.h"
#include "kc/reporter.h"

namespace {

TEST(Reporters, NamesAndFilesAreUniqueAndEveryRowRenders) {
  std::set<std::string> names, files;
  kc::engine::CheckResult r;
  kc::engine::CaseResult c;
  c.contract_id = "C-X";
  c.impl = "ref.x";
  c.backend = "ref";
  c.verdict = kc::engine::Verdict::kConforming;
  r.cases.push_back(c);
  for (const auto& rep : kc::report::reporters()) {
    EXPECT_TRUE(names.insert(std::string(rep.name)).second) << "duplicate format " << rep.name;
    if (!rep.file.empty()) {
      EXPECT_TRUE(files.insert(std::string(rep.file)).second) << "duplicate file " << rep.file;
    }
    EXPECT_FALSE(rep.help.empty()) << rep.name;
    ASSERT_NE(rep.render, nullptr) << rep.name;
    EXPECT_NE(rep.render(r, {}).find("ref.x"), std::string::npos) << rep.name;
    EXPECT_EQ(kc::report::find_reporter(rep.name), &rep);
  }
  EXPECT_EQ(kc::report::find_reporter("nope"), nullptr);
  for (const char* f : {"table", "json", "junit", "md", "html"}) EXPECT_TRUE(names.count(f)) << f;
  EXPECT_EQ(files, (std::set<std::string>{"report.json", "report.junit.xml", "report.md", "report.html"}));
  EXPECT_EQ(kc::report::report_set_pattern(), "report.{json,junit.xml,md,html}");
  EXPECT_EQ(kc::report::reporter_names(), "table | json | junit | md | html");
}

}  // namespace
