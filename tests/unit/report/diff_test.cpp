// Tests of run records, `kc diff` and baselines: the statistics against
// known values, the record's round trip, the diff's classification, and the
// kc binary's exit codes on a real run against itself and a seeded change.
#include "kc/diff.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kc/exit_code.h"
#include "report/stats.h"

namespace {

namespace report = kc::report;
namespace stats = kc::report::stats;
using kc::engine::CaseResult;
using kc::engine::CheckResult;
using kc::engine::Verdict;

std::string temp_dir(const std::string& name) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kc_diff_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

// ---------------------------------------------------------------------------
// Statistics. Reference values: scipy.stats.mannwhitneyu(method="asymptotic")
// (normal approximation with tie and continuity correction), exact two-sided
// KS p-values counted by brute force over every split of the pooled sample
// (C(n1+n2, n1) relabelings), and scipy.special.kolmogorov.

TEST(Stats, MannWhitneyUSeparatedSamples) {
  const std::vector<double> x = {1, 2, 3}, y = {4, 5, 6};
  const auto r = stats::mann_whitney_u(x, y);
  EXPECT_EQ(r.statistic, 0);
  // z = (4.5 - 0.5) / sqrt(9 * 7 / 12); p = 2 P(Z > z).
  EXPECT_NEAR(r.p, 0.0808555983700523, 1e-12);
}

TEST(Stats, MannWhitneyUWithTies) {
  const std::vector<double> x = {1, 2, 2, 3, 3, 4}, y = {2, 3, 4, 4, 5, 6, 7};
  const auto r = stats::mann_whitney_u(x, y);
  EXPECT_EQ(r.statistic, 7);
  EXPECT_NEAR(r.p, 0.049859275588638, 1e-12);
  // Symmetric in its p-value; the statistic is the other sample's U.
  const auto s = stats::mann_whitney_u(y, x);
  EXPECT_EQ(s.statistic, 6 * 7 - 7);
  EXPECT_NEAR(s.p, r.p, 1e-15);
}

TEST(Stats, MannWhitneyUAllTiedOrEmptyIsNoEvidence) {
  const std::vector<double> x = {2, 2, 2}, y = {2, 2}, none;
  EXPECT_EQ(stats::mann_whitney_u(x, y).p, 1);
  EXPECT_EQ(stats::mann_whitney_u(x, none).p, 1);
}

TEST(Stats, KolmogorovSmirnovExact) {
  const std::vector<double> a = {1, 2, 3}, b = {4, 5, 6};
  auto r = stats::ks_two_sample(a, b);
  EXPECT_EQ(r.statistic, 1);
  EXPECT_NEAR(r.p, 0.1, 1e-12);  // 2 of the C(6,3) = 20 splits
  const std::vector<double> c = {0.61, 0.29, 0.06, 0.59, -1.73, -0.74}, d = {0.49, -0.3, 1.45, 2.3, 1.51, 2.9};
  r = stats::ks_two_sample(c, d);
  EXPECT_NEAR(r.statistic, 2.0 / 3, 1e-15);
  EXPECT_NEAR(r.p, 0.14285714285714285, 1e-12);
  const std::vector<double> e = {1.2, 3.4, 0.5, 2.2, 5.1, 4.4, 0.9}, f = {2.8, 6.1, 7.3, 3.9, 5.5};
  r = stats::ks_two_sample(e, f);
  EXPECT_NEAR(r.statistic, 0.6, 1e-15);
  EXPECT_NEAR(r.p, 1.0 / 6, 1e-12);
  // Five against five, fully separated: 2 of C(10,5) = 252 splits.
  const std::vector<double> g = {1, 2, 3, 4, 5}, h = {6, 7, 8, 9, 10};
  EXPECT_NEAR(stats::ks_two_sample(g, h).p, 2.0 / 252, 1e-12);
  // Thirty against thirty, fully separated: 2 / C(60, 30), far below what
  // 1 - P(D < d) could resolve in double precision.
  std::vector<double> lo, hi;
  for (int i = 0; i < 30; ++i) {
    lo.push_back(i);
    hi.push_back(100 + i);
  }
  EXPECT_NEAR(stats::ks_two_sample(lo, hi).p / (2.0 / 118264581564861424.0), 1, 1e-9);
  // The same sample: D = 0, p = 1.
  EXPECT_EQ(stats::ks_two_sample(g, g).statistic, 0);
  EXPECT_NEAR(stats::ks_two_sample(g, g).p, 1, 1e-12);
}

TEST(Stats, KolmogorovLimitingDistribution) {
  EXPECT_NEAR(stats::kolmogorov_sf(1.0), 0.26999967167735456, 1e-12);
  EXPECT_NEAR(stats::kolmogorov_sf(0.5), 0.9639452436648751, 1e-12);
  EXPECT_NEAR(stats::kolmogorov_sf(1.3581), 0.05, 1e-5);  // the textbook 5 % critical value
}

TEST(Stats, HolmStepDown) {
  // Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.06.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto h = stats::holm(p);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_NEAR(h[0], 0.03, 1e-15);
  EXPECT_NEAR(h[1], 0.06, 1e-15);
  EXPECT_NEAR(h[2], 0.06, 1e-15);
  EXPECT_NEAR(h[3], 0.02, 1e-15);
  const std::vector<double> big = {0.5, 0.6};
  EXPECT_EQ(stats::holm(big)[1], 1);  // capped at 1
}

TEST(Stats, MedianAndQuantile) {
  const std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(stats::median(v), 3);
  const std::vector<double> w = {4, 1, 3, 2};
  EXPECT_EQ(stats::median(w), 2.5);
  EXPECT_EQ(stats::quantile(w, 0), 1);
  EXPECT_EQ(stats::quantile(w, 1), 4);
  EXPECT_NEAR(stats::quantile(w, 0.25), 1.75, 1e-15);
}

TEST(Stats, BootstrapIsSeededAndCoversTheEstimate) {
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) {
    x.push_back(1.0 + 0.01 * ((i * 7) % 11));
    y.push_back(2.0 * (1.0 + 0.01 * ((i * 5) % 13)));
  }
  const auto a = stats::bootstrap_median_ratio(x, y, 2000, 0.95, 42);
  const auto b = stats::bootstrap_median_ratio(x, y, 2000, 0.95, 42);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_NEAR(a.estimate, stats::median(y) / stats::median(x), 1e-15);
  EXPECT_LE(a.low, a.estimate);
  EXPECT_GE(a.high, a.estimate);
  EXPECT_GT(a.low, 1.8);
  EXPECT_LT(a.high, 2.3);
  const std::vector<double> flat(20, 3.0);
  const auto c = stats::bootstrap_median_ratio(flat, flat);
  EXPECT_EQ(c.low, 1);
  EXPECT_EQ(c.high, 1);
}

// ---------------------------------------------------------------------------
// Records

CaseResult make_case(const std::string& contract, const std::string& impl, Verdict v,
                     std::vector<kc::Signature> sigs = {}) {
  CaseResult c;
  c.contract_id = contract;
  c.contract_hash = "h-" + contract;
  c.impl = impl;
  c.backend = "calibration";
  c.backend_version = "1.0";
  c.verdict = v;
  c.reason = "because";
  c.signatures = std::move(sigs);
  c.output_hash = "out-" + contract + impl;
  c.evidence.metric = "ratio";
  c.evidence.max = v == Verdict::kViolation ? 3.5 : 0.25;
  c.evidence.p99 = 0.2;
  c.evidence.p50 = 0.05;
  c.evidence.elements = 100;
  c.facts["accumulator"] = "FP32";
  return c;
}

report::RunRecord record_of(const std::vector<CaseResult>& cases) {
  CheckResult r;
  r.cases = cases;
  kc::engine::CheckRequest req;
  report::RunRecord rec = report::make_record(r, req);
  rec.created = "2026-01-01T00:00:00Z";
  rec.host = "test";
  return rec;
}

kc::Signature sig(const std::string& name, const std::string& arg) { return {name, {arg}}; }

TEST(Record, RoundTripsThroughItsFile) {
  CaseResult c = make_case("C-1", "calib.a", Verdict::kViolation, {sig("SATURATION", "65504")});
  c.evidence.max = std::numeric_limits<double>::infinity();
  c.timing = CaseResult::Timing{"dtype=FP32 n=4", 0, 2e-5, {1e-5, 1.5e-5, 1.25e-5}};
  report::RunRecord rec = record_of({c, make_case("C-2", "calib.b", Verdict::kConforming)});
  const std::string dir = temp_dir("rec");
  write_all(dir + "/record.json", report::render_record(rec));
  auto back = report::read_record(dir);  // a run directory reads its record.json
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->cases.size(), 2u);
  const report::RecordCase& r = back->cases[0];
  EXPECT_EQ(r.contract, "C-1");
  EXPECT_EQ(r.verdict, "violation");
  ASSERT_EQ(r.signatures.size(), 1u);
  EXPECT_EQ(r.signatures[0], "SATURATION(65504)");
  EXPECT_TRUE(std::isinf(r.max));
  EXPECT_EQ(r.p50, 0.05);
  EXPECT_EQ(r.output_hash, "out-C-1calib.a");
  EXPECT_EQ(r.facts.at("accumulator"), "FP32");
  ASSERT_TRUE(r.timing.has_value());
  EXPECT_EQ(r.timing->warm_s.size(), 3u);
  EXPECT_EQ(r.timing->warm_s[1], 1.5e-5);
  EXPECT_EQ(r.timing->cold_s, 2e-5);
  EXPECT_FALSE(back->cases[1].timing.has_value());
  EXPECT_EQ(back->run.seed, "0x6b63");
}

TEST(Record, BadInputNamesTheFileAndWhere) {
  const std::string dir = temp_dir("bad");
  auto missing = report::read_record(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no record.json"), std::string::npos);
  write_all(dir + "/r.json", "{\"format\": \"kc-run-record/1\",\n \"cases\": [ {\"contract\": ");
  auto broken = report::read_record(dir + "/r.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(dir + "/r.json:"), std::string::npos) << broken.status().message();
  write_all(dir + "/v.json", "{\"format\": \"kc-run-record/0\", \"cases\": []}");
  auto old = report::read_record(dir + "/v.json");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("v.json:1:"), std::string::npos) << old.status().message();
  write_all(dir + "/w.json",
            "{\"format\": \"kc-run-record/1\",\n\"cases\": [{\"contract\": \"C\", \"impl\": \"i\", \"verdict\": \"great\"}]}");
  auto verdict = report::read_record(dir + "/w.json");
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("w.json:2:"), std::string::npos) << verdict.status().message();
  EXPECT_NE(verdict.status().message().find("unknown verdict"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Diff

report::DiffOptions options(const std::string& fail_on = "") {
  report::DiffOptions o;
  auto f = report::parse_fail_on(fail_on);
  EXPECT_TRUE(f.ok());
  o.fail_on = *f;
  return o;
}

TEST(Diff, ARunAgainstItselfIsEmpty) {
  const auto rec = record_of({make_case("C-1", "a", Verdict::kConforming),
                              make_case("C-1", "b", Verdict::kViolation, {sig("NAN_SWALLOWED", "3")})});
  const auto d = report::diff_records(rec, rec, options("new-violation,signature-change,output-change,missing"));
  EXPECT_FALSE(d.regression());
  EXPECT_TRUE(d.not_compared.empty());
  EXPECT_TRUE(d.notes.empty());
  for (const auto& c : d.cases) EXPECT_EQ(c.change, "same") << c.impl;
  EXPECT_EQ(d.output_compared, 2u);
  EXPECT_EQ(d.output_changed, 0u);
}

TEST(Diff, ClassifiesVerdictAndSignatureChanges) {
  const auto old_run = record_of({make_case("C-1", "a", Verdict::kConforming),
                                  make_case("C-1", "b", Verdict::kViolation, {sig("NAN_SWALLOWED", "3")}),
                                  make_case("C-1", "c", Verdict::kViolation, {sig("SATURATION", "65504")}),
                                  make_case("C-2", "a", Verdict::kConforming)});
  auto b = make_case("C-1", "b", Verdict::kConforming);
  auto c = make_case("C-1", "c", Verdict::kViolation, {sig("ORDER_DEPENDENT", "")});
  auto a = make_case("C-1", "a", Verdict::kViolation, {sig("NAN_SWALLOWED", "1")});
  a.output_hash = "changed";
  const auto new_run = record_of({a, b, c, make_case("C-3", "a", Verdict::kConforming)});
  const auto d = report::diff_records(old_run, new_run, options("new-violation,signature-change,missing"));
  std::map<std::string, std::string> change;
  for (const auto& x : d.cases) change[x.contract + "|" + x.impl] = x.change;
  EXPECT_EQ(change["C-1|a"], "new_violation");
  EXPECT_EQ(change["C-1|b"], "fixed");
  EXPECT_EQ(change["C-1|c"], "signature_change");
  EXPECT_EQ(change["C-2|a"], "missing");
  EXPECT_EQ(change["C-3|a"], "added");
  EXPECT_EQ(d.output_changed, 1u);
  EXPECT_EQ(d.failures.size(), 3u);  // new-violation, signature-change, missing
  // What was not compared is said: C-2 only in OLD, C-3 only in NEW.
  const std::string text = report::render_diff_text(d);
  EXPECT_NE(text.find("C-2: 1 impl in OLD only"), std::string::npos) << text;
  EXPECT_NE(text.find("C-3: 1 impl in NEW only"), std::string::npos) << text;
  EXPECT_NE(text.find("REGRESSION"), std::string::npos);
  // The default rules: a signature change alone does not fail.
  const auto lenient = report::diff_records(old_run, new_run, options());
  ASSERT_EQ(lenient.failures.size(), 1u);
  EXPECT_EQ(lenient.failures[0].rfind("new-violation: C-1 × a", 0), 0u) << lenient.failures[0];
}

TEST(Diff, DifferentSeedsDoNotCompareOutputs) {
  auto old_run = record_of({make_case("C-1", "a", Verdict::kConforming)});
  auto new_run = old_run;
  new_run.run.seed = "0x1";
  new_run.cases[0].output_hash = "other";
  const auto d = report::diff_records(old_run, new_run, options("output-change"));
  EXPECT_EQ(d.output_compared, 0u);
  EXPECT_FALSE(d.regression());
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("seed"), std::string::npos);
}

TEST(Diff, RepeatedPairsAreSaid) {
  const auto once = record_of({make_case("C-1", "a", Verdict::kConforming)});
  const auto twice = record_of({make_case("C-1", "a", Verdict::kConforming), make_case("C-1", "a", Verdict::kViolation)});
  const auto d = report::diff_records(once, twice, options());
  ASSERT_EQ(d.not_compared.size(), 1u);
  EXPECT_NE(d.not_compared[0].find("0 repeated contract × impl pairs in OLD and 1 in NEW"), std::string::npos);
}

TEST(Diff, ChangedDeclaredFactsAreNoted) {
  auto old_run = record_of({make_case("C-1", "a", Verdict::kConforming), make_case("C-2", "a", Verdict::kConforming)});
  auto new_run = old_run;
  for (auto& c : new_run.cases) c.facts["coretype"] = "SKYLAKEX";
  const auto d = report::diff_records(old_run, new_run, options());
  ASSERT_EQ(d.notes.size(), 1u);  // once per impl
  EXPECT_EQ(d.notes[0], "impl a: declared coretype (none) -> SKYLAKEX");
}

TEST(Diff, LatencyIsJudgedWithHolmAndAMedianRatio) {
  auto times = [](double scale, int salt) {
    std::vector<double> v;
    for (int i = 0; i < 30; ++i) v.push_back(scale * (1e-4 + 1e-6 * ((i * salt) % 17)));
    return v;
  };
  auto slow = make_case("C-1", "a", Verdict::kConforming);
  auto same = make_case("C-1", "b", Verdict::kConforming);
  slow.timing = CaseResult::Timing{"n=4", 0, 3e-4, times(1.0, 7)};
  same.timing = CaseResult::Timing{"n=4", 0, 3e-4, times(1.0, 5)};
  const auto old_run = record_of({slow, same});
  slow.timing->warm_s = times(1.3, 3);
  same.timing->warm_s = times(1.0, 11);
  const auto new_run = record_of({slow, same});
  const auto d = report::diff_records(old_run, new_run, options("latency:1.10"));
  ASSERT_EQ(d.latency_compared, 2u);
  const auto& l = *d.cases[0].latency;
  EXPECT_EQ(l.judgement, "slower");
  EXPECT_GT(l.ratio, 1.2);
  EXPECT_GT(l.ratio_low, 1.1);
  EXPECT_LT(l.mwu_p_holm, 1e-6);
  EXPECT_GE(l.mwu_p_holm, l.mwu_p);  // Holm only raises p-values
  EXPECT_EQ(d.cases[1].latency->judgement, "unchanged");
  ASSERT_EQ(d.failures.size(), 1u);
  EXPECT_NE(d.failures[0].find("latency:1.1: C-1 × a"), std::string::npos) << d.failures[0];
  // A threshold above the change does not fail.
  EXPECT_FALSE(report::diff_records(old_run, new_run, options("latency:1.5")).regression());
  // Renderers carry it.
  EXPECT_NE(report::render_diff_json(d).find("\"judgement\": \"slower\""), std::string::npos);
  const std::string html = report::render_diff_html(d, old_run, new_run);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  const std::string junit = report::render_diff_junit(d);
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << junit;
}

TEST(Diff, FailOnRejectsUnknownRules) {
  EXPECT_FALSE(report::parse_fail_on("new-violations").ok());
  EXPECT_FALSE(report::parse_fail_on("latency:0.9").ok());
  EXPECT_FALSE(report::parse_fail_on("latency:x").ok());
  auto f = report::parse_fail_on("latency:1.10,ratio:2");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->latency, 1.10);
  EXPECT_EQ(*f->ratio, 2);
  EXPECT_FALSE(f->new_violation);
}

// ---------------------------------------------------------------------------
// Baselines

TEST(Baseline, ExcusesKnownViolationsOnlyWhileLive) {
  const std::string dir = temp_dir("base");
  write_all(dir + "/b.yaml",
            "format: kc-baseline/1\n"
            "violations:\n"
            "  - contract: C-1\n"
            "    impl: calib.*\n"
            "    signature: NAN_SWALLOWED\n"
            "    reason: fmaxf drops NaN; upstream bug filed\n"
            "    expires: 2099-12-31\n"
            "    link: https://example.org/bug/1\n"
            "  - contract: C-9\n"
            "    impl: '*'\n"
            "    signature: '*'\n"
            "    reason: old\n"
            "    expires: 2099-12-31\n");
  auto b = report::read_baseline(dir + "/b.yaml");
  ASSERT_TRUE(b.ok()) << b.status().message();
  CheckResult r;
  r.cases.push_back(make_case("C-1", "calib.x", Verdict::kViolation, {sig("NAN_SWALLOWED", "28")}));
  auto out = report::apply_baseline(*b, r, "2026-11-28");
  EXPECT_EQ(out.excused, 1u);
  EXPECT_EQ(out.exit_code, 0);
  ASSERT_EQ(out.warnings.size(), 1u);  // C-9 was not run
  EXPECT_NE(out.warnings[0].find("not exercised"), std::string::npos);
  // A second signature on the same case is new.
  r.cases[0].signatures.push_back(sig("NAN_INTRODUCED", "1"));
  out = report::apply_baseline(*b, r, "2026-11-28");
  EXPECT_EQ(out.exit_code, kc::exit_value(kc::ExitCode::kViolation));
  ASSERT_EQ(out.unexcused.size(), 1u);
  EXPECT_NE(out.unexcused[0].find("NAN_INTRODUCED(1)"), std::string::npos);
  // Expired: warns, and no longer excuses.
  r.cases[0].signatures.pop_back();
  out = report::apply_baseline(*b, r, "2100-01-01");
  EXPECT_EQ(out.exit_code, kc::exit_value(kc::ExitCode::kViolation));
  ASSERT_FALSE(out.warnings.empty());
  EXPECT_NE(out.warnings[0].find("expired on 2099-12-31"), std::string::npos) << out.warnings[0];
  // A skipped case (backend unavailable) exercises nothing: not "no longer occurs".
  r.cases[0] = make_case("C-1", "calib.x", Verdict::kSkipped);
  out = report::apply_baseline(*b, r, "2026-11-28");
  EXPECT_NE(out.warnings[0].find("not exercised"), std::string::npos) << out.warnings[0];
  // A fixed case: the entry no longer occurs.
  r.cases[0] = make_case("C-1", "calib.x", Verdict::kConforming);
  out = report::apply_baseline(*b, r, "2026-11-28");
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_NE(out.warnings[0].find("no longer occurs"), std::string::npos);
}

TEST(Baseline, BadFilesSayWhere) {
  const std::string dir = temp_dir("badbase");
  write_all(dir + "/b.yaml",
            "format: kc-baseline/1\nviolations:\n  - contract: C-1\n    impl: x\n    signature: S\n"
            "    reason: r\n    expires: next year\n");
  auto b = report::read_baseline(dir + "/b.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("b.yaml:7:"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("YYYY-MM-DD"), std::string::npos);
  write_all(dir + "/c.yaml", "format: kc-baseline/1\nviolations:\n  - contract: C-1\n    impls: x\n");
  auto c = report::read_baseline(dir + "/c.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown key 'impls'"), std::string::npos) << c.status().message();
}

// ---------------------------------------------------------------------------
// The kc binary: a real run, diffed against itself and against a seeded change.

int run_kc(const std::string& args, std::string* out, std::string* err) {
  const std::string dir = temp_dir("kc_io");
  const std::string cmd = std::string(KC_BINARY_DIR) + "/bin/kc " + args + " >'" + dir + "/out' 2>'" + dir + "/err'";
  const int rc = std::system(cmd.c_str());
  *out = read_all(dir + "/out");
  *err = read_all(dir + "/err");
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const std::string kContract = std::string("'") + KC_SOURCE_DIR + "/contracts/classes/C-EXC-01.kc' --contract C-EXC-01";

/// A check run of one impl writing its record into dir.
int check_into(const std::string& impl, const std::string& dir, const std::string& extra = "") {
  std::string out, err;
  return run_kc("check " + kContract + " --impl " + impl + " --no-color --out '" + dir + "' " + extra, &out, &err);
}

TEST(KcDiff, ARunAgainstItselfIsEmptyAndExitsZero) {
  const std::string a = temp_dir("self");
  ASSERT_EQ(check_into("calib.relu_propagating", a), 0);
  std::string out, err;
  EXPECT_EQ(run_kc("diff '" + a + "' '" + a + "/record.json' --fail-on new-violation,signature-change,output-change,missing",
                   &out, &err),
            0)
      << out << err;
  EXPECT_NE(out.find("1 cases in both records, 1 judged in both"), std::string::npos) << out;
  EXPECT_NE(out.find("0 of 1 cases changed bit for bit"), std::string::npos) << out;
  EXPECT_EQ(out.find("not compared"), std::string::npos) << out;
  EXPECT_NE(out.find("no regression"), std::string::npos) << out;
}

TEST(KcDiff, ASeededBadImplShowsAsANewViolationAndExitsOne) {
  const std::string good = temp_dir("good"), bad = temp_dir("bad");
  ASSERT_EQ(check_into("calib.relu_propagating", good), 0);
  ASSERT_EQ(check_into("calib.relu_fmaxf", bad), 1);
  // The seeded change: the bad kernel's record stands for a new version of the
  // good one (same impl name), as a library update would.
  std::string rec = read_all(bad + "/record.json");
  for (std::size_t at; (at = rec.find("\"calib.relu_fmaxf\"")) != std::string::npos;)
    rec.replace(at, 18, "\"calib.relu_propagating\"");
  write_all(bad + "/record.json", rec);
  std::string out, err;
  const std::string files = " --junit '" + bad + "/diff.xml' --html '" + bad + "/diff.html'";
  EXPECT_EQ(run_kc("diff '" + good + "' '" + bad + "'" + files, &out, &err), 1) << out << err;
  EXPECT_NE(out.find("new violations (1):"), std::string::npos) << out;
  EXPECT_NE(out.find("C-EXC-01 × calib.relu_propagating: conforming -> violation  [NAN_SWALLOWED("), std::string::npos)
      << out;
  EXPECT_NE(out.find("1 of 1 cases changed bit for bit"), std::string::npos) << out;
  EXPECT_NE(read_all(bad + "/diff.xml").find("<failure message=\"new-violation\""), std::string::npos);
  EXPECT_NE(read_all(bad + "/diff.html").find("new_violation"), std::string::npos);
  // The other way round it is a fix: no regression.
  EXPECT_EQ(run_kc("diff '" + bad + "' '" + good + "' --format json", &out, &err), 0) << out << err;
  EXPECT_NE(out.find("\"change\": \"fixed\""), std::string::npos) << out;
}

TEST(KcDiff, AnUnreadableRecordIsExitTwoNamingTheFile) {
  const std::string dir = temp_dir("unreadable");
  write_all(dir + "/record.json", "{ not json");
  std::string out, err;
  EXPECT_EQ(run_kc("diff '" + dir + "' '" + dir + "'", &out, &err), kc::exit_value(kc::ExitCode::kUsage));
  EXPECT_NE(err.find(dir + "/record.json:"), std::string::npos) << err;
  EXPECT_EQ(run_kc("diff '" + dir + "/none.json' '" + dir + "'", &out, &err), kc::exit_value(kc::ExitCode::kUsage));
  EXPECT_NE(err.find("none.json: cannot read"), std::string::npos) << err;
}

TEST(KcBaseline, KnownPassesNewFailsExpiredWarnsAndFails) {
  const std::string dir = temp_dir("baseline");
  ASSERT_EQ(check_into("calib.relu_fmaxf", dir), 1);
  std::string out, err;
  // kc baseline update writes the run's violation; with it, the run passes.
  ASSERT_EQ(run_kc("baseline update --out '" + dir + "/known.json' '" + dir + "'", &out, &err), 0) << err;
  const std::string known = read_all(dir + "/known.json");
  EXPECT_NE(known.find("\"signature\": \"NAN_SWALLOWED\""), std::string::npos) << known;
  EXPECT_EQ(check_into("calib.relu_fmaxf", dir + "/r1", "--baseline '" + dir + "/known.json'"), 0);
  // A new violation (another impl, NAN_INTRODUCED) is not excused.
  EXPECT_EQ(check_into("'calib.relu_*'", dir + "/r2", "--baseline '" + dir + "/known.json'"), 1);
  EXPECT_EQ(run_kc("check " + kContract + " --impl 'calib.relu_*' --no-color --baseline '" + dir + "/known.json'", &out,
                   &err),
            1);
  EXPECT_NE(err.find("not in the baseline: C-EXC-01 × calib.relu_leaky: NAN_INTRODUCED("), std::string::npos) << err;
  // Expired: a warning, and the violation counts again.
  write_all(dir + "/expired.yaml",
            "format: kc-baseline/1\nviolations:\n  - {contract: C-EXC-01, impl: calib.relu_fmaxf, signature: "
            "NAN_SWALLOWED, reason: known, expires: 2020-01-01}\n");
  EXPECT_EQ(run_kc("check " + kContract + " --impl calib.relu_fmaxf --no-color --baseline '" + dir + "/expired.yaml'",
                   &out, &err),
            1);
  EXPECT_NE(err.find("expired on 2020-01-01 and still occurs"), std::string::npos) << err;
  // Updating keeps a matching entry's reason.
  write_all(dir + "/kept.yaml",
            "format: kc-baseline/1\nviolations:\n  - {contract: C-EXC-01, impl: 'calib.*', signature: NAN_SWALLOWED, "
            "reason: fmaxf semantics are documented, expires: 2099-01-01, link: 'https://example.org/1'}\n");
  ASSERT_EQ(run_kc("baseline update --out '" + dir + "/kept.yaml' '" + dir + "'", &out, &err), 0) << err;
  EXPECT_NE(read_all(dir + "/kept.yaml").find("fmaxf semantics are documented"), std::string::npos);
  // A baseline that cannot be read stops the run before it starts.
  write_all(dir + "/broken.yaml", "format: kc-baseline/1\nviolations: [ {\n");
  EXPECT_EQ(run_kc("check " + kContract + " --impl calib.relu_fmaxf --baseline '" + dir + "/broken.yaml'", &out, &err),
            kc::exit_value(kc::ExitCode::kUsage));
  EXPECT_NE(err.find("broken.yaml:"), std::string::npos) << err;
}

TEST(KcBaseline, GradeWritesItsRecordAndTakesABaseline) {
  const std::string dir = temp_dir("grade");
  std::string out, err;
  const std::string grade = "grade " + kContract + " --impl calib.relu_fmaxf --no-color --out '" + dir + "'";
  ASSERT_EQ(run_kc(grade, &out, &err), 1) << err;
  EXPECT_NE(out.find("run record: " + dir + "/record.json"), std::string::npos) << out;
  auto rec = report::read_record(dir);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_EQ(rec->cases.size(), 1u);
  EXPECT_EQ(rec->cases[0].verdict, "violation");
  EXPECT_FALSE(rec->cases[0].output_hash.empty());
  ASSERT_EQ(run_kc("baseline update --out '" + dir + "/known.yaml' '" + dir + "'", &out, &err), 0) << err;
  EXPECT_EQ(run_kc(grade + " --baseline '" + dir + "/known.yaml'", &out, &err), 0) << err;
  EXPECT_NE(err.find("1 known violation excused, 0 not"), std::string::npos) << err;
}

TEST(KcDiff, TimingRecordsColdAndWarmCalls) {
  const std::string dir = temp_dir("timing");
  ASSERT_EQ(check_into("calib.relu_propagating", dir, "--timing 20"), 0);
  auto rec = report::read_record(dir);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_EQ(rec->cases.size(), 1u);
  ASSERT_TRUE(rec->cases[0].timing.has_value());
  EXPECT_EQ(rec->cases[0].timing->warm_s.size(), 20u);
  EXPECT_GT(rec->cases[0].timing->cold_s, 0);
  for (double t : rec->cases[0].timing->warm_s) EXPECT_GT(t, 0);
  EXPECT_EQ(rec->run.timing_calls, 20);
  std::string out, err;
  EXPECT_EQ(run_kc("check " + kContract + " --impl calib.relu_propagating --timing 5", &out, &err),
            kc::exit_value(kc::ExitCode::kUsage));
  // A record diffed against itself: latency compared, unchanged.
  EXPECT_EQ(run_kc("diff '" + dir + "' '" + dir + "' --fail-on latency:1.01", &out, &err), 0) << out << err;
  EXPECT_NE(out.find("unchanged"), std::string::npos) << out;
}

}  // namespace
