// The command line's tables: every command has its own --help page listing
// only the flags it reads, every flag the help lists is one the parser
// knows, --format's choices come from the report formats' table, and a run
// off a terminal prints progress with an estimate of the time left.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kc/reporter.h"
#include "cli_util.h"

namespace {

using kc_cli_test::run_kc;

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

/// The names at the start of the entries of one section of `kc --help`
/// ("commands:" or every "options (...):").
std::vector<std::string> help_entries(const std::string& help, bool commands) {
  std::vector<std::string> out;
  std::istringstream in(help);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      inside = commands ? line == "commands:" : line.rfind("options (", 0) == 0;
      continue;
    }
    if (!inside || line.size() < 3 || line[2] == ' ') continue;
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

TEST(CliHelp, EveryCommandHasItsOwnPage) {
  const auto global = run_kc("--help");
  ASSERT_EQ(global.code, 0);
  const auto commands = help_entries(global.out, true);
  ASSERT_GE(commands.size(), 20u) << global.out;
  for (const auto& c : commands) {
    const auto page = run_kc(c + " --help");
    EXPECT_EQ(page.code, 0) << c;
    EXPECT_EQ(page.out.rfind("usage: kc " + c, 0), 0u) << page.out;
    EXPECT_NE(page.out, global.out) << c;
    EXPECT_LT(page.out.size(), global.out.size()) << c;
  }
}

TEST(CliHelp, ACommandPageListsOnlyTheFlagsItReads) {
  const auto check = run_kc("check --help");
  for (const char* f : {"--contract GLOB", "--format F", "--trace FILE", "--jobs N, -j N", "--progress-every S"})
    EXPECT_NE(check.out.find(f), std::string::npos) << f << "\n" << check.out;
  for (const char* f : {"--strict", "--pin", "--fail-on", "--exhaustive-fp32"})
    EXPECT_EQ(check.out.find(f), std::string::npos) << f;
  const auto lint = run_kc("lint --help");
  EXPECT_NE(lint.out.find("--strict"), std::string::npos) << lint.out;
  EXPECT_EQ(lint.out.find("--seed"), std::string::npos) << lint.out;
  // The report set grade writes, from the report formats' table.
  const auto grade = run_kc("grade --help");
  for (const auto& r : kc::report::reporters())
    if (!r.file.empty()) {
      EXPECT_NE(grade.out.find(std::string(r.file)), std::string::npos) << r.file;
    }
}

// Each flag the help documents reaches the parser's own branch: none is
// answered "unknown option".
TEST(CliHelp, EveryDocumentedFlagIsParsed) {
  const auto flags = help_entries(run_kc("--help").out, false);
  ASSERT_GE(flags.size(), 45u);
  for (const auto& f : flags) {
    ASSERT_EQ(f.rfind("--", 0), 0u) << f;
    const auto r = run_kc("no-such-command " + f + " 1");
    EXPECT_EQ(r.out.find("unknown option"), std::string::npos) << f << ": " << r.out;
  }
  // And the other way round: each flag the parser has a branch for is documented.
  std::ifstream main_cpp(src("tools/kc/main.cpp"));
  const std::string code((std::istreambuf_iterator<char>(main_cpp)), std::istreambuf_iterator<char>());
  const std::regex branch("s == \"(--[a-z0-9-]+)\"");
  std::size_t parsed = 0;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), branch); it != std::sregex_iterator(); ++it) {
    const std::string f = (*it)[1];
    if (f == "--help" || f == "--version") continue;
    ++parsed;
    EXPECT_NE(std::find(flags.begin(), flags.end(), f), flags.end()) << f << " is parsed but not in kc --help";
  }
  EXPECT_GE(parsed, 45u);
  const auto typo = run_kc("check --contrct X");
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.out.find("did you mean '--contract'"), std::string::npos) << typo.out;
}

TEST(CliHelp, FormatsComeFromTheReporterTable) {
  const auto r = run_kc("check --format nope");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("(" + kc::report::reporter_names() + "; graph"), std::string::npos) << r.out;
  for (const auto& rep : kc::report::reporters())
    EXPECT_NE(run_kc("check --help").out.find("  " + std::string(rep.name) + ": "), std::string::npos) << rep.name;
  // An enforced scope: a flag given to a command that does not read it.
  const auto scoped = run_kc("lint --pin x.kc " + src("contracts/classes"));
  EXPECT_EQ(scoped.code, 2);
  EXPECT_NE(scoped.out.find("--pin belongs to kc ladder, not kc lint"), std::string::npos) << scoped.out;
}

// Off a terminal (here: a pipe) a run prints progress lines with cases done
// of planned and an estimate of the time left; --progress-every 0 none.
TEST(CliProgress, OffATerminalALineWithTheTimeLeft) {
  const std::string args = "check " + src("contracts/classes/C-PRC-03.kc") + " --impl 'ref.*' --no-color";
  const auto r = run_kc(args + " --progress-every 0.000001");
  EXPECT_NE(r.out.find("kc: progress: 1 of "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" left\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\r"), std::string::npos) << "no terminal control characters in a log";
  const auto quiet = run_kc(args + " --progress-every 0");
  EXPECT_EQ(quiet.out.find("kc: progress:"), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.code, r.code);
  EXPECT_EQ(run_kc(args + " --progress-every -1").code, 2);
}

}  // namespace
