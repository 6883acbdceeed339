// Every name a contract uses is checked against the table the engine acts on:
// a misspelt probe, statistic, metric, observed quantity, declaration key or
// value, contract class, op class or signature is an error at the word, with
// the nearest known word (a word near none makes its clause prose); every word of every table is accepted; and the
// signatures kc's producers attach are all in the one signature table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "kc/declaration.h"
#include "kc/lang.h"
#include "kc/op.h"
#include "kc/rng.h"
#include "kc/signature.h"
#include "kc/vocabulary.h"

namespace kc::lang {
namespace {

/// A contract that parses executable; `field` replaces one clause body.
std::string contract(const std::string& keyword, const std::string& body) {
  std::map<std::string, std::string> c = {
      {"scope", "matmul"},
      {"pre", "precision(A, B, C) in {FP32}"},
      {"post", "output C satisfies elementwise_close(C, ref(C))"},
      {"tolerance", "relative 1e-5"},
      {"reference", "higher_precision FP64"},
      {"measure", "sample 3 random inputs per config; compute max ratio; pass if <= 1"},
      {"violation", "\"wrong\" signature TOLERANCE_EXCEEDED"},
  };
  c[keyword] = body;
  std::string out = "contract T-NAMES-01 {\n  class      precision\n";
  for (const char* k : {"scope", "pre", "post", "tolerance", "reference", "measure", "violation"})
    out += "  " + std::string(k) + std::string(11 - std::string(k).size(), ' ') + c[k] + "\n";
  return out + "}\n";
}

struct Found {
  ParseResult result;
  const Diagnostic* error = nullptr;
};

Found parse(const std::string& text) {
  Found f{parse_kc(text, "t.kc"), nullptr};
  for (const auto& d : f.result.diagnostics)
    if (d.severity == Diagnostic::Severity::kError && !f.error) f.error = &d;
  return f;
}

/// The error for an unknown word: at the word's column, with the suggestion.
void expect_unknown(const std::string& keyword, const std::string& body, const std::string& what,
                    const std::string& word, const std::string& suggestion) {
  const std::string text = contract(keyword, body);
  Found f = parse(text);
  ASSERT_NE(f.error, nullptr) << "no error for " << keyword << " " << body;
  const Diagnostic& e = *f.error;
  EXPECT_EQ(e.message, "unknown " + what + " '" + word + "'") << e.render();
  EXPECT_EQ(e.suggestion, suggestion) << e.render();
  // The caret points at the word itself.
  ASSERT_GT(e.loc.line, 0);
  ASSERT_GT(e.loc.column, 0);
  EXPECT_EQ(e.line_text.substr(static_cast<std::size_t>(e.loc.column - 1), word.size()), word) << e.render();
  EXPECT_NE(e.render().find("^"), std::string::npos);
  EXPECT_EQ(e.loc.file, "t.kc");
}

TEST(Names, TheBaseContractIsExecutable) {
  Found f = parse(contract("scope", "matmul"));
  EXPECT_EQ(f.error, nullptr) << (f.error ? f.error->render() : "");
  ASSERT_EQ(f.result.document.contracts.size(), 1u);
  EXPECT_TRUE(f.result.document.contracts[0].executable());
}

TEST(Names, ATypoedProbeIsAnErrorNotADescriptiveClause) {
  expect_unknown("measure", "inject saturaton(65504) at density 1; observe max rel_error", "probe", "saturaton",
                 "saturation");
}

/// A word near no known word is the author writing prose: no error, the
/// clause is descriptive (so the contract is judged under_specified and fails
/// --strict), and lint's finding names the word and the known words.
void expect_prose(const std::string& keyword, const std::string& body, const std::string& word,
                  const std::string& known) {
  Found f = parse(contract(keyword, body));
  EXPECT_EQ(f.error, nullptr) << f.error->render();
  ASSERT_EQ(f.result.document.contracts.size(), 1u);
  EXPECT_FALSE(f.result.document.contracts[0].executable()) << keyword << " " << body;
  const std::vector<LintFinding> findings = lint(f.result.document);
  ASSERT_EQ(findings.size(), 1u) << keyword << " " << body;
  EXPECT_EQ(findings[0].clause, keyword);
  EXPECT_NE(findings[0].message.find("'" + word + "'"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find(known), std::string::npos) << findings[0].message;
}

TEST(Names, AnUnknownProbeFarFromEveryWordMakesTheClauseProse) {
  expect_prose("measure", "inject cosmic_rays at density 0.1; observe propagation", "cosmic_rays", "saturation");
}

TEST(Names, AWordThatDiffersOnlyInCaseIsATypo) {
  expect_unknown("measure", "sample 3 random inputs per config; compute max bound_rAtio; pass if <= 1", "metric",
                 "bound_rAtio", "bound_ratio");
}

TEST(Names, AMisspeltStepIsAnErrorAnEnglishStepIsProse) {
  Found typo = parse(contract("measure", "sample 3 random inputs per config; comput max ratio; pass if <= 1"));
  ASSERT_NE(typo.error, nullptr);
  EXPECT_EQ(typo.error->message, "unknown protocol step 'comput'");
  EXPECT_EQ(typo.error->suggestion, "compute");
  expect_prose("measure", "sample 3 random inputs per config; compare against the reference",
               "compare against the reference",
               "compute");
}

TEST(Names, ALatencyStepIsReadPrintedAndItsMistakesAreErrors) {
  const std::string base = "sample 1 random inputs per config; compute max ratio; pass if <= 1; ";
  Found f = parse(contract("measure", base + "time latency across K + 1 beyond 2x"));
  ASSERT_EQ(f.error, nullptr) << f.error->render();
  const Contract& c = f.result.document.contracts.at(0);
  EXPECT_TRUE(c.executable());
  ASSERT_TRUE(c.measure.latency);
  EXPECT_EQ(c.measure.latency->size, "K");
  EXPECT_FALSE(c.measure.latency->absolute);
  EXPECT_EQ(c.measure.latency->value, 1);
  EXPECT_EQ(c.measure.latency->beyond, 2);
  // The canonical text reads back to the same step; yaml carries it too.
  const std::string printed = print_contract_kc(c);
  EXPECT_NE(printed.find("time latency across K + 1 beyond 2"), std::string::npos) << printed;
  Found again = parse(printed);
  ASSERT_EQ(again.error, nullptr) << again.error->render();
  EXPECT_EQ(again.result.document.contracts.at(0).content_hash(), c.content_hash());
  ParseResult yaml = parse_yaml(print_yaml(f.result.document), "t.yaml");
  ASSERT_EQ(yaml.document.contracts.size(), 1u);
  ASSERT_TRUE(yaml.document.contracts[0].measure.latency);
  EXPECT_EQ(yaml.document.contracts[0].measure.latency->to_string(), "K + 1 beyond 2");

  Found fixed = parse(contract("measure", base + "time latency across K = 257"));
  ASSERT_EQ(fixed.error, nullptr) << fixed.error->render();
  EXPECT_TRUE(fixed.result.document.contracts.at(0).measure.latency->absolute);
  EXPECT_EQ(fixed.result.document.contracts.at(0).measure.latency->to_string(), "K = 257");
  Found down = parse(contract("measure", base + "time latency across N - 3"));
  ASSERT_EQ(down.error, nullptr) << down.error->render();
  EXPECT_EQ(down.result.document.contracts.at(0).measure.latency->value, -3);

  for (const char* bad : {"time latency K + 1", "time latency across + 1", "time latency across K * 2",
                          "time latency across K + 0", "time latency across K + 1.5", "time latency across K = 0",
                          "time latency across K + 1 beyond 0.5", "time latency across K + 1 soon"}) {
    // A malformed step makes the clause descriptive, with the executable form.
    Found e = parse(contract("measure", base + bad));
    EXPECT_EQ(e.error, nullptr) << bad;
    ASSERT_EQ(e.result.document.contracts.size(), 1u);
    EXPECT_FALSE(e.result.document.contracts[0].executable()) << bad;
    const std::vector<LintFinding> findings = lint(e.result.document);
    ASSERT_EQ(findings.size(), 1u) << bad;
    EXPECT_NE(findings[0].message.find("time latency across K + 1"), std::string::npos) << findings[0].message;
  }
  Found typo = parse(contract("measure", base + "tme latency"));
  ASSERT_NE(typo.error, nullptr);
  EXPECT_EQ(typo.error->suggestion, "time");
}

TEST(Names, StatisticsMetricsAndObservedQuantities) {
  expect_unknown("measure", "sample 3 random inputs per config; compute maxx ratio; pass if <= 1", "statistic", "maxx",
                 "max");
  // count is not a statistic the engine decides on, nor close to one: prose.
  expect_prose("measure", "sample 3 random inputs per config; compute count ratio; pass if <= 1", "count", "max");
  expect_unknown("measure", "sample 3 random inputs per config; compute max rel_eror; pass if <= 1", "metric",
                 "rel_eror", "rel_error");
  expect_unknown("measure", "inject nan at density 0.1; observe propagaton", "observed quantity", "propagaton",
                 "propagation");
  expect_unknown("measure", "inject nan at density 0.1; observe max ulpp", "metric", "ulpp", "ulp");
}

TEST(Names, DeclarationKeysAndValues) {
  expect_unknown("pre", "precision(A, B, C) in {FP32} and declared accumulater = FP32", "declaration key",
                 "accumulater", "accumulator");
  expect_unknown("pre", "precision(A, B, C) in {FP32} and declared beta_zero = C_NOT_REED", "value of declared beta_zero",
                 "C_NOT_REED", "C_NOT_READ");
}

TEST(Names, SignaturesOpClassesAndContractClasses) {
  expect_unknown("violation", "\"wrong\" signature SATURATON(65504)", "signature", "SATURATON", "SATURATION");
  // Far from every word: prose, never "it can never be matched" and run anyway.
  expect_prose("violation", "\"wrong\" signature COSMIC_RAY_FLIP", "COSMIC_RAY_FLIP", "SATURATION");
  expect_unknown("scope", "matmull", "op class", "matmull", "matmul");
  expect_prose("scope", "quantum_fourier", "quantum_fourier", "matmul");
  std::string text = contract("scope", "matmul");
  text.replace(text.find("class      precision"), 20, "class      precison");
  Found cls = parse(text);
  ASSERT_NE(cls.error, nullptr);
  EXPECT_EQ(cls.error->message, "unknown contract class 'precison'");
  EXPECT_EQ(cls.error->suggestion, "precision");
}

TEST(Names, UnknownNamesAreErrorsInYamlToo) {
  const std::string yaml =
      "contracts:\n"
      "  - id: T-NAMES-02\n"
      "    scope: matmul\n"
      "    pre: precision(A, B, C) in {FP32}\n"
      "    post: output C satisfies elementwise_close(C, ref(C))\n"
      "    tolerance: relative 1e-5\n"
      "    reference: higher_precision FP64\n"
      "    measure: inject saturaton at density 1; observe max rel_error\n"
      "    violation: signature SATURATION\n";
  ParseResult r = parse_yaml(yaml, "t.yaml");
  bool found = false;
  for (const auto& d : r.diagnostics)
    found = found || (d.severity == Diagnostic::Severity::kError && d.message == "unknown probe 'saturaton'" &&
                      d.suggestion == "saturation" && d.loc.line == 8);
  EXPECT_TRUE(found) << (r.diagnostics.empty() ? "no diagnostics" : r.diagnostics[0].render());
}

TEST(Names, EveryWordOfEveryTableIsAccepted) {
  for (const auto& p : probe_table()) {
    Found f = parse(contract("measure", "inject " + std::string(p.name) + " at density 0.5; observe policy"));
    EXPECT_EQ(f.error, nullptr) << p.name << ": " << (f.error ? f.error->render() : "");
  }
  for (const auto& s : aggregate_table())
    for (const auto& m : metric_table()) {
      Found f = parse(contract("measure", "sample 2 random inputs per config; compute " + std::string(s.name) + " " +
                                              std::string(m.name) + "; pass if <= 1"));
      EXPECT_EQ(f.error, nullptr) << s.name << " " << m.name << ": " << (f.error ? f.error->render() : "");
    }
  for (const auto& o : observe_table()) {
    Found f = parse(contract("measure", "inject nan at density 0.5; observe " + std::string(o.name)));
    EXPECT_EQ(f.error, nullptr) << o.name << ": " << (f.error ? f.error->render() : "");
  }
  for (const auto& sg : signature_table()) {
    Found f = parse(contract("violation", "signature " + std::string(sg.name)));
    EXPECT_EQ(f.error, nullptr) << sg.name << ": " << (f.error ? f.error->render() : "");
    for (const auto& d : f.result.diagnostics) EXPECT_NE(d.severity, Diagnostic::Severity::kWarning) << d.render();
  }
  for (const auto& k : declaration_key_table()) {
    std::vector<std::string> values = declaration_values(k);
    if (values.empty()) values = {"1"};
    for (const auto& v : values) {
      Found f = parse(contract("pre", "precision(A, B, C) in {FP32} and declared " + std::string(k.name) + " = " + v));
      EXPECT_EQ(f.error, nullptr) << k.name << " = " << v << ": " << (f.error ? f.error->render() : "");
    }
  }
  for (const auto& c : contract_class_table()) {
    std::string text = contract("scope", "matmul");
    text.replace(text.find("precision\n"), 9, std::string(c.name));
    Found f = parse(text);
    EXPECT_EQ(f.error, nullptr) << c.name << ": " << (f.error ? f.error->render() : "");
  }
}

// The values of the five core keys are the enum tables Declaration::set reads.
TEST(Names, CoreDeclarationValuesAreTheOnesDeclarationsAccept) {
  for (const auto& k : declaration_key_table()) {
    for (const auto& v : declaration_values(k)) {
      Declaration d;
      std::string err;
      EXPECT_TRUE(d.set(std::string(k.name), v, &err)) << k.name << " = " << v << ": " << err;
    }
  }
  Declaration d;
  std::string err;
  EXPECT_FALSE(d.set("nan", "SWALLOW", &err));
}

// The four signatures the worker and the sanitizer attach were unknown to the
// language once; every produced signature is named without a warning.
TEST(Names, SignaturesTheWorkerAndSanitizerProduceAreKnown) {
  for (const char* name : {sig::kSanitizer, sig::kMemoryLimit, sig::kGuardRead, sig::kWorkerFailed}) {
    ASSERT_NE(find_signature(name), nullptr) << name;
    const auto& known = known_signatures();
    EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << name;
  }
}

TEST(Names, AFamilyMatchesItsMembersOnly) {
  EXPECT_TRUE(signature_matches("DENORMAL_POLICY", "FTZ_OBSERVED"));
  EXPECT_TRUE(signature_matches("DENORMAL_POLICY", "IEEE_OBSERVED"));
  EXPECT_FALSE(signature_matches("DENORMAL_POLICY", "NAN_SWALLOWED"));
  EXPECT_TRUE(signature_matches("SATURATION", "SATURATION"));
  EXPECT_FALSE(signature_matches("SATURATION", "OVERFLOW_TO_INF"));
  // Members are signatures kc produces, never other families.
  for (const auto& s : signature_table()) {
    if (s.members.empty()) {
      EXPECT_FALSE(s.source.empty()) << s.name << " says nothing about what produces it";
      continue;
    }
    std::istringstream in{std::string(s.members)};
    std::string m;
    while (in >> m) {
      const SignatureInfo* member = find_signature(m);
      ASSERT_NE(member, nullptr) << s.name << " member " << m;
      EXPECT_TRUE(member->members.empty()) << s.name << " member " << m << " is a family";
    }
  }
}

TEST(Names, TheSignatureTableHasNoDuplicatesAndMatchesItsConstants) {
  std::set<std::string> seen;
  for (const auto& s : signature_table()) EXPECT_TRUE(seen.insert(std::string(s.name)).second) << s.name;
  // Every constant of kc/signature.h (what producers build from) is in the table.
  std::ifstream in(std::string(KC_SOURCE_DIR) + "/include/kc/signature.h");
  const std::regex constant(R"re(inline constexpr char k\w+\[\] = "(\w+)";)re");
  std::string line;
  int constants = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, constant)) continue;
    ++constants;
    EXPECT_NE(find_signature(m[1].str()), nullptr) << m[1];
  }
  EXPECT_GT(constants, 40);
}

// A producer that spells a signature as a string literal instead of a
// constant: the literal must still be a name of the table, or a contract
// could never name what it reports.
TEST(Names, EverySignatureLiteralInTheSourcesIsInTheTable) {
  const std::regex literal(
      R"re((?:\{\s*"([A-Z][A-Z0-9_]{2,})"\s*,\s*\{|Signature\s*\{\s*"([A-Z][A-Z0-9_]+)"|\?\s*"([A-Z][A-Z0-9_]+)"\s*:\s*"([A-Z][A-Z0-9_]+)"\s*,\s*\{|add_signature\(\{\s*"([A-Z][A-Z0-9_]+)"))re");
  int files = 0;
  for (const char* dir : {"src", "backends", "calibration", "include", "tools"}) {
    const std::filesystem::path root = std::filesystem::path(KC_SOURCE_DIR) / dir;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu")) continue;
      ++files;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      for (auto it = std::sregex_iterator(text.begin(), text.end(), literal); it != std::sregex_iterator(); ++it) {
        for (std::size_t g = 1; g < it->size(); ++g) {
          if (!(*it)[g].matched) continue;
          EXPECT_NE(find_signature((*it)[g].str()), nullptr)
              << e.path().string() << ": signature " << (*it)[g].str() << " is not in kc/signature.h's table";
        }
      }
    }
  }
  EXPECT_GT(files, 100);
}

// The probe table is what the ops apply: every probe but oob works on an
// elementwise op, oob on an indexing op, and a name outside the table is refused.
TEST(Names, EveryProbeOfTheTableIsOneTheOpsApply) {
  const Op* relu = builtin_ops().find("relu");
  const Op* gather = builtin_ops().find("gather");
  const Op* nrm2 = builtin_ops().find("nrm2");
  ASSERT_NE(relu, nullptr);
  ASSERT_NE(gather, nullptr);
  ASSERT_NE(nrm2, nullptr);
  for (const auto& p : probe_table()) {
    // oob is the indexing ops' probe, the two range probes nrm2's, accumulator_bits and arithmetic matmul's.
    const Op* op = p.name == "oob"                                        ? gather
                   : p.name.ends_with("_range")                           ? nrm2
                   : p.name == "accumulator_bits" || p.name == "arithmetic" ? builtin_ops().find("matmul")
                                                                          : relu;
    ASSERT_NE(op, nullptr) << p.name;
    auto call = op->make_call(Config{});
    ASSERT_TRUE(call.ok()) << call.status().to_string();
    Probe probe;
    probe.name = std::string(p.name);
    if (p.name == "offset") probe.args = {100};
    if (p.name == "values") {  // values(x, 2.5): the plan lays it out as [count, values...] per tensor
      probe.tensors = {"x"};
      probe.args = {1, 2.5};
    }
    Rng rng(7);
    const Status s = op->apply_probe(*call, probe, rng);
    EXPECT_TRUE(s.ok()) << p.name << ": " << s.to_string();
  }
  auto call = relu->make_call(Config{});
  ASSERT_TRUE(call.ok());
  Probe typo;
  typo.name = "saturaton";
  Rng rng(7);
  EXPECT_FALSE(relu->apply_probe(*call, typo, rng).ok());
}

}  // namespace
}  // namespace kc::lang
