// Tests of the report module: hashing, JSON, the trace chain, the renderers, grades.
#include "kc/report.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kc/engine.h"
#include "kc/exit_code.h"

namespace {

using kc::engine::CaseResult;
using kc::engine::CheckResult;
using kc::engine::Verdict;
namespace report = kc::report;

std::string temp_path(const std::string& name) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kc_report_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / name).string();
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

CaseResult make_case(const std::string& contract, const std::string& impl, Verdict v,
                     const std::string& backend = "calib") {
  CaseResult c;
  c.contract_id = contract;
  c.contract_hash = "abc123";
  c.contract_file = "contracts/classes/" + contract + ".kc";
  c.impl = impl;
  c.backend = backend;
  c.backend_version = "1.0";
  c.verdict = v;
  c.reason = std::string(kc::engine::verdict_name(v)) + " because";
  c.seed = 0x6b63;
  c.seconds = 0.25;
  if (v == Verdict::kViolation) {
    kc::Signature s;
    s.name = "SATURATION";
    s.args = {"65504"};
    c.signatures.push_back(s);
    c.signature_expected = true;
    c.evidence.metric = "ratio";
    c.evidence.tolerance = "bound 1 * gamma(K, FP32) * |A||B| = 2.4e-4";
    c.evidence.max = 3.2e4;
    c.evidence.p99 = 12;
    c.evidence.mean = 0.5;
    c.evidence.elements = 4096;
    c.evidence.failures = 12;
    c.evidence.notes = {"12 of 4096 outputs capped at 65504"};
    kc::engine::WorstElement w;
    w.output = "C";
    w.index = 53;
    w.position = "(row 3, col 17)";
    w.value = 65504;
    w.reference = 70000.25;
    w.metric = 3.2e4;
    w.config = "K=4096 M=16 dtype=FP32";
    c.evidence.worst = w;
    c.input_hash = "deadbeef";
    c.repro = "kc check " + c.contract_file + " --impl " + impl + " --config 'K=4096 M=16'";
  }
  return c;
}

// ---------------------------------------------------------------------------

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(report::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(report::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(report::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(report::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // 55, 56 and 64 bytes straddle the one-block / two-block padding boundary.
  EXPECT_EQ(report::sha256_hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(report::sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(report::sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

// ---------------------------------------------------------------------------

TEST(CaseJson, HasEveryFieldInOrder) {
  const std::string j = report::case_json(make_case("C-PRC-01", "calib.matmul_fp16acc", Verdict::kViolation));
  EXPECT_EQ(j.front(), '{');
  EXPECT_EQ(j.back(), '}');
  EXPECT_EQ(j.find('\n'), std::string::npos);
  std::size_t last = 0;
  for (const char* k : {"\"contract\":",      "\"contract_hash\":",
                        "\"contract_file\":", "\"impl\":",
                        "\"backend\":",       "\"backend_version\":",
                        "\"verdict\":",       "\"reason\":",
                        "\"signatures\":",    "\"signature_expected\":",
                        "\"evidence\":",      "\"metric\":",
                        "\"tolerance\":",     "\"max\":",
                        "\"p99\":",           "\"mean\":",
                        "\"elements\":",      "\"failures\":",
                        "\"worst\":",         "\"output\":",
                        "\"index\":",         "\"position\":",
                        "\"value\":",         "\"reference\":",
                        "\"config\":",        "\"per_config\":",
                        "\"notes\":",         "\"seed\":",
                        "\"input_hash\":",    "\"repro\":",
                        "\"seconds\":",       "\"time\":",
                        "\"host\":",          "\"kc_version\":"}) {
    const std::size_t at = j.find(k, last);
    ASSERT_NE(at, std::string::npos) << k << " in " << j;
    last = at;
  }
  EXPECT_NE(j.find("\"signatures\":[\"SATURATION(65504)\"]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"seed\":\"0x6b63\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"verdict\":\"violation\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"value\":65504,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"reference\":70000.25,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"kc_version\":\"0.1.0\""), std::string::npos) << j;
}

TEST(CaseJson, WorstIsNullWhenAbsent) {
  const std::string j = report::case_json(make_case("C-PRC-01", "ref.matmul", Verdict::kConforming));
  EXPECT_NE(j.find("\"worst\":null"), std::string::npos) << j;
}

TEST(CaseJson, EscapesQuotesBackslashesAndControlCharacters) {
  CaseResult c = make_case("C-X", "impl", Verdict::kError);
  c.reason = std::string("say \"hi\"\\ \n\t\r\b\f") + '\x01' + '\x1f';
  const std::string j = report::case_json(c);
  EXPECT_NE(j.find(R"("reason":"say \"hi\"\\ \n\t\r\b\f\u0001\u001f")"), std::string::npos) << j;
}

TEST(CaseJson, PassesUnicodeThroughAndReplacesInvalidUtf8) {
  CaseResult c = make_case("C-X", "impl", Verdict::kError);
  c.reason = "résumé × 2⁻¹⁴⁰ — 😀";
  EXPECT_NE(report::case_json(c).find("\"reason\":\"résumé × 2⁻¹⁴⁰ — 😀\""), std::string::npos);
  c.reason = std::string("bad ") + '\xff' + '\xc3';  // a lone 0xff, a truncated 2-byte sequence
  EXPECT_NE(report::case_json(c).find(R"("reason":"bad \ufffd\ufffd")"), std::string::npos);
}

TEST(CaseJson, NonFiniteNumbersAreStrings) {
  CaseResult c = make_case("C-X", "impl", Verdict::kViolation);
  c.evidence.max = std::numeric_limits<double>::infinity();
  c.evidence.p99 = -std::numeric_limits<double>::infinity();
  c.evidence.mean = std::numeric_limits<double>::quiet_NaN();
  const std::string j = report::case_json(c);
  EXPECT_NE(j.find("\"max\":\"inf\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"p99\":\"-inf\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"mean\":\"nan\""), std::string::npos) << j;
  EXPECT_EQ(j.find("NaN"), std::string::npos);
}

TEST(RenderJson, HasCasesBackendsSummaryDiagnostics) {
  CheckResult r;
  r.cases = {make_case("C-PRC-01", "a", Verdict::kConforming), make_case("C-PRC-01", "b", Verdict::kViolation)};
  kc::BackendInfo b;
  b.name = "cuda";
  b.available = false;
  b.reason = "no \"GPU\"";
  r.backends.push_back(b);
  const std::string j = report::render_json(r);
  for (const char* k : {"\"kc_version\"", "\"cases\"", "\"backends\"", "\"summary\"", "\"diagnostics\"",
                        "\"available\": false", "no \\\"GPU\\\"", "\"violation\": 1", "\"conforming\": 1"})
    EXPECT_NE(j.find(k), std::string::npos) << k << "\n" << j;
  // The CLI test's pattern: impl and verdict of one case with no '}' between them.
  EXPECT_NE(j.find("\"impl\": \"a\",\n"), std::string::npos);
}

// ---------------------------------------------------------------------------

std::string write_trace(const std::string& path, int n) {
  auto w = report::TraceWriter::open(path);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  for (int i = 0; i < n; ++i) {
    Verdict v = i % 2 == 0 ? Verdict::kConforming : Verdict::kViolation;
    EXPECT_TRUE(w->append(make_case("C-PRC-01", "impl" + std::to_string(i), v)).ok());
  }
  return w->last_hash();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

TEST(Trace, AppendThenVerify) {
  const std::string path = temp_path("sub/dir/trace.jsonl");  // parent dirs are created
  const std::string last = write_trace(path, 5);
  auto n = report::verify_trace(path);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 5u);
  const auto lines = lines_of(read_all(path));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("{\"prev\":\"" + std::string(64, '0') + "\",\"contract\":", 0), 0u) << lines[0];
  EXPECT_NE(lines[4].find("\"hash\":\"" + last + "\"}"), std::string::npos);
}

TEST(Trace, HashIsSha256OfPrevPlusBody) {
  // The documented rule (docs/trace.md), recomputed from the raw line text.
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 2);
  std::string prev(64, '0');
  for (const std::string& line : lines_of(read_all(path))) {
    ASSERT_EQ(line.substr(0, 9), "{\"prev\":\"");
    EXPECT_EQ(line.substr(9, 64), prev);
    const std::string hash = line.substr(line.size() - 66, 64);
    const std::string body = "{" + line.substr(75, line.size() - 150) + "}";
    EXPECT_EQ(report::sha256_hex(prev + body), hash);
    prev = hash;
  }
}

TEST(Trace, EmptyFileVerifiesAsZeroRecords) {
  const std::string path = temp_path("trace.jsonl");
  auto w = report::TraceWriter::open(path);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->last_hash(), std::string(64, '0'));
  auto n = report::verify_trace(path);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST(Trace, ReopenContinuesTheChain) {
  const std::string path = temp_path("trace.jsonl");
  const std::string first = write_trace(path, 3);
  auto w = report::TraceWriter::open(path);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->last_hash(), first);
  const std::string before = read_all(path);
  ASSERT_TRUE(w->append(make_case("C-EXC-01", "later", Verdict::kConforming)).ok());
  const std::string after = read_all(path);
  EXPECT_EQ(after.substr(0, before.size()), before);  // existing lines untouched
  auto n = report::verify_trace(path);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 4u);
  EXPECT_NE(lines_of(after)[3].find("\"prev\":\"" + first + "\""), std::string::npos);
}

TEST(Trace, TwoWritersOnOneFileKeepOneChain) {
  const std::string path = temp_path("trace.jsonl");
  auto a = report::TraceWriter::open(path);
  auto b = report::TraceWriter::open(path);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->append(make_case("C-1", "x", Verdict::kConforming)).ok());
  ASSERT_TRUE(b->append(make_case("C-1", "y", Verdict::kConforming)).ok());
  ASSERT_TRUE(a->append(make_case("C-1", "z", Verdict::kConforming)).ok());
  auto n = report::verify_trace(path);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 3u);
}

TEST(Trace, DetectsAnEditedByte) {
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 4);
  std::string text = read_all(path);
  const std::size_t at = text.find("impl1");
  ASSERT_NE(at, std::string::npos);
  text[at + 4] = '7';  // impl1 -> impl7 on line 2
  write_all(path, text);
  auto n = report::verify_trace(path);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(":2:"), std::string::npos) << n.status().message();
  EXPECT_NE(n.status().message().find("edited"), std::string::npos) << n.status().message();
}

TEST(Trace, DetectsAnEditWithRecomputedHash) {
  // Someone who edits a line and fixes its own hash still breaks the next line's prev.
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 3);
  auto lines = lines_of(read_all(path));
  std::string& l = lines[0];
  const std::size_t at = l.find("impl0");
  l[at + 4] = '9';
  const std::string body = "{" + l.substr(75, l.size() - 150) + "}";
  l.replace(l.size() - 66, 64, report::sha256_hex(l.substr(9, 64) + body));
  write_all(path, lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n");
  auto n = report::verify_trace(path);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(":2: chain broken"), std::string::npos) << n.status().message();
}

TEST(Trace, DetectsADeletedLine) {
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 4);
  const auto lines = lines_of(read_all(path));
  write_all(path, lines[0] + "\n" + lines[2] + "\n" + lines[3] + "\n");
  auto n = report::verify_trace(path);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(":2: chain broken"), std::string::npos) << n.status().message();
  // Dropping the first line is caught too: line 1 must start from 64 zeros.
  write_all(path, lines[1] + "\n" + lines[2] + "\n");
  EXPECT_FALSE(report::verify_trace(path).ok());
}

TEST(Trace, TruncatedLastLineIsAnErrorAndNothingIsRewritten) {
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 2);
  std::string text = read_all(path);
  text += text.substr(0, 40);  // a partial third line, no newline
  write_all(path, text);
  auto w = report::TraceWriter::open(path);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("truncated"), std::string::npos) << w.status().message();
  EXPECT_EQ(read_all(path), text);
  auto n = report::verify_trace(path);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(":3: truncated"), std::string::npos) << n.status().message();
}

TEST(Trace, LongRecordsReopenAcrossReadBlocks) {
  const std::string path = temp_path("trace.jsonl");
  auto w = report::TraceWriter::open(path);
  ASSERT_TRUE(w.ok());
  CaseResult c = make_case("C-PRC-01", "big", Verdict::kViolation);
  c.evidence.notes.assign(400, "a long note that makes this record span several 4 KiB blocks");
  ASSERT_TRUE(w->append(c).ok());
  ASSERT_TRUE(w->append(c).ok());
  auto again = report::TraceWriter::open(path);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->last_hash(), w->last_hash());
}

TEST(Trace, MissingFileDoesNotVerify) { EXPECT_FALSE(report::verify_trace(temp_path("nope.jsonl")).ok()); }

TEST(Trace, ABrokenChainIsRefusedAndNothingIsAppended) {
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 4);
  const auto lines = lines_of(read_all(path));
  // A middle record deleted: every line still has a valid hash of its own,
  // and the last line is intact, but the chain is broken at line 2.
  const std::string spliced = lines[0] + "\n" + lines[2] + "\n" + lines[3] + "\n";
  write_all(path, spliced);
  auto w = report::TraceWriter::open(path);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), kc::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find(path + ":2: chain broken"), std::string::npos) << w.status().message();
  EXPECT_NE(w.status().message().find("appends only to a trace whose chain is intact"), std::string::npos);
  EXPECT_EQ(read_all(path), spliced);
  // An edited first record (its own hash recomputed) is refused the same way.
  const std::string other = temp_path("other.jsonl");
  auto o = report::TraceWriter::open(other);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(o->append_body("{\"contract\":\"edited\"}").ok());
  write_all(path, lines_of(read_all(other))[0] + "\n" + lines[1] + "\n");
  EXPECT_FALSE(report::TraceWriter::open(path).ok());
}

TEST(Trace, ALaterOpenVerifiesWhatWasAppendedSince) {
  // The first open in a process walks the whole chain; a later one walks
  // from where the verified part ended. An edit there is still refused.
  const std::string path = temp_path("trace.jsonl");
  write_trace(path, 2);
  auto w = report::TraceWriter::open(path);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE(w->append(make_case("C-EXC-01", "third", Verdict::kConforming)).ok());
  ASSERT_TRUE(w->append(make_case("C-EXC-01", "fourth", Verdict::kConforming)).ok());
  std::string text = read_all(path);
  const std::size_t at = text.find("third");
  ASSERT_NE(at, std::string::npos);
  text[at] = 'T';  // same length, its own hash no longer matches
  write_all(path, text);
  auto again = report::TraceWriter::open(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find(path + ":3:"), std::string::npos) << again.status().message();
}

TEST(Trace, AWriteThatFailsIsAnInternalErrorNamingTheFile) {
  // /dev/full: every write fails with ENOSPC, like a full disk.
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto w = report::TraceWriter::open("/dev/full");
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  const kc::Status s = w->append(make_case("C-1", "x", Verdict::kConforming));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), kc::StatusCode::kInternal);
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos) << s.message();
  EXPECT_EQ(w->last_hash(), std::string(64, '0')) << "a record that was not written moved the chain";
}

TEST(Trace, AnUnopenableTraceIsAnInternalError) {
  // A directory where the file should be: the open fails as a read-only or
  // full file system would, whoever runs the test (root included).
  const std::string dir = temp_path("a_directory.jsonl");
  std::filesystem::create_directories(dir);
  auto w = report::TraceWriter::open(dir);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), kc::StatusCode::kInternal);
  EXPECT_NE(w.status().message().find(dir), std::string::npos) << w.status().message();
}

/// Runs the kc binary of this build with `args`; returns its exit code, and its stderr in *err.
int run_kc(const std::string& args, std::string* err) {
  const std::string err_path = temp_path("kc.stderr");
  const std::string cmd = std::string(KC_BINARY_DIR) + "/bin/kc " + args + " >/dev/null 2>'" + err_path + "'";
  const int rc = std::system(cmd.c_str());
  *err = read_all(err_path);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const std::string kOneCase =
    std::string("check '") + KC_SOURCE_DIR + "/contracts' --impl ref.relu --contract C-EXC-01 --no-color";

TEST(KcWrites, ATraceWriteThatFailsExitsInternalNamingTheFile) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  std::string err;
  EXPECT_EQ(run_kc(kOneCase + " --trace /dev/full", &err), kc::exit_value(kc::ExitCode::kInternal)) << err;
  EXPECT_NE(err.find("cannot write /dev/full"), std::string::npos) << err;
}

TEST(KcWrites, AReportThatCannotBeWrittenExitsInternal) {
  // report.json is a directory: the rename over it fails, whoever runs the test.
  const std::string out = temp_path("out");
  std::filesystem::create_directories(out + "/report.json");
  std::string err;
  const std::string grade = std::string("grade '") + KC_SOURCE_DIR +
                            "/contracts' --impl ref.relu --contract C-EXC-01 --no-color --out '" + out + "'";
  EXPECT_EQ(run_kc(grade, &err), kc::exit_value(kc::ExitCode::kInternal)) << err;
  EXPECT_NE(err.find("cannot write " + out + "/report.json"), std::string::npos) << err;
  // The trace was written, and its last hash printed.
  EXPECT_NE(err.find("kc: trace " + out + "/trace.jsonl last hash "), std::string::npos) << err;
}

TEST(KcWrites, ARunPrintsTheLastHashAndRefusesABrokenChain) {
  const std::string trace = temp_path("trace.jsonl");
  std::string err;
  ASSERT_EQ(run_kc(kOneCase + " --trace '" + trace + "'", &err), 0) << err;
  auto w = report::TraceWriter::open(trace);
  ASSERT_TRUE(w.ok());
  EXPECT_NE(err.find("last hash " + w->last_hash()), std::string::npos) << err;
  ASSERT_EQ(run_kc(kOneCase + " --trace '" + trace + "'", &err), 0) << err;
  // Delete the first record: the second no longer chains; kc refuses to append.
  auto lines = lines_of(read_all(trace));
  ASSERT_EQ(lines.size(), 2u);
  write_all(trace, lines[1] + "\n");
  const std::string before = read_all(trace);
  EXPECT_EQ(run_kc(kOneCase + " --trace '" + trace + "'", &err), kc::exit_value(kc::ExitCode::kUsage)) << err;
  EXPECT_NE(err.find("chain broken"), std::string::npos) << err;
  EXPECT_EQ(read_all(trace), before) << "kc appended to a broken trace";
}

TEST(RenderJson, RecordsTheTracesLastHashAndWriteErrors) {
  CheckResult r;
  r.cases.push_back(make_case("C-1", "x", Verdict::kConforming));
  r.trace_path = "out/trace.jsonl";
  r.trace_last_hash = std::string(64, 'a');
  r.write_errors.push_back("out/report.md: write: No space left on device");
  const std::string j = report::render_json(r);
  EXPECT_NE(j.find("\"last_hash\": \"" + std::string(64, 'a') + "\""), std::string::npos) << j;
  EXPECT_NE(j.find("No space left on device"), std::string::npos);
  EXPECT_EQ(r.exit_code(), kc::exit_value(kc::ExitCode::kInternal));
}

// ---------------------------------------------------------------------------

CheckResult sample_result() {
  CheckResult r;
  r.cases = {
      make_case("C-PRC-01", "calib.matmul_fp16acc", Verdict::kViolation),
      make_case("C-PRC-01", "calib.matmul_fp32", Verdict::kConforming),
      make_case("C-PRC-01", "cuda.cublas_sgemm_with_a_long_name", Verdict::kSkipped, "cuda"),
      make_case("C-EXC-01", "calib.matmul_fp16acc", Verdict::kNotApplicable),
      make_case("C-EXC-01", "calib.matmul_fp32", Verdict::kNotApplicable),
      make_case("C-EXC-01", "cuda.cublas_sgemm_with_a_long_name", Verdict::kNotApplicable, "cuda"),
  };
  return r;
}

TEST(RenderTable, RowsEvidenceReproAndSummary) {
  const std::string t = report::render_table(sample_result(), false);
  EXPECT_EQ(t.find("\033["), std::string::npos) << "no colour when color=false";
  EXPECT_NE(t.find("SATURATION(65504)"), std::string::npos) << t;
  EXPECT_NE(t.find("12 of 4096 outputs capped at 65504"), std::string::npos) << t;
  EXPECT_NE(t.find("(row 3, col 17) = 65504 vs reference 70000.25"), std::string::npos) << t;
  EXPECT_NE(t.find("K=4096 M=16 dtype=FP32"), std::string::npos) << t;
  EXPECT_NE(t.find("repro: kc check contracts/classes/C-PRC-01.kc --impl calib.matmul_fp16acc"), std::string::npos)
      << t;
  EXPECT_NE(t.find("1 conforming, 1 violation, 3 not_applicable, 1 skipped, 0 error"), std::string::npos) << t;
  // impl and verdict on one line (the CLI tests rely on it).
  bool found = false;
  for (const auto& l : lines_of(t))
    if (l.find("calib.matmul_fp32") != std::string::npos && l.find("conforming") != std::string::npos) found = true;
  EXPECT_TRUE(found) << t;
  for (const auto& l : lines_of(t)) {
    std::size_t cols = 0;
    for (char ch : l) cols += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    if (l.rfind("  repro:", 0) != 0 && l.rfind("  worst:", 0) != 0 && l.rfind("  ", 0) != 0) {
      EXPECT_LE(cols, 100u) << l;
    }
  }
}

TEST(RenderTable, ColoursVerdictsOnlyWhenAsked) {
  const std::string t = report::render_table(sample_result(), true);
  EXPECT_NE(t.find("\033[32mconforming"), std::string::npos);
  EXPECT_NE(t.find("\033[31mviolation"), std::string::npos);
  EXPECT_NE(t.find("\033[90mskipped"), std::string::npos);
}

TEST(RenderJunit, WellFormedAndEscaped) {
  CheckResult r = sample_result();
  r.cases[0].reason = "a < b && c > \"d\" 'e'";
  r.cases[1].impl = "impl<&>\"";
  const std::string x = report::render_junit(r, {.include_not_applicable = true});
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0), 0u);
  EXPECT_NE(x.find("message=\"SATURATION(65504): a &lt; b &amp;&amp; c &gt; &quot;d&quot; &apos;e&apos;\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("name=\"impl&lt;&amp;&gt;&quot;\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testsuite name=\"C-PRC-01\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<testcase classname=\"C-PRC-01\" name=\"calib.matmul_fp16acc\""), std::string::npos);
  EXPECT_NE(x.find("repro: kc check"), std::string::npos);
  EXPECT_NE(x.find("<skipped message=\"not_applicable"), std::string::npos);
  // Well-formed: every '&' starts an entity, no raw '<' inside attribute values,
  // and open/close tags balance.
  for (std::size_t i = x.find('&'); i != std::string::npos; i = x.find('&', i + 1)) {
    const std::string rest = x.substr(i, 6);
    EXPECT_TRUE(rest.rfind("&amp;", 0) == 0 || rest.rfind("&lt;", 0) == 0 || rest.rfind("&gt;", 0) == 0 ||
                rest.rfind("&quot;", 0) == 0 || rest.rfind("&apos;", 0) == 0 || rest.rfind("&#", 0) == 0)
        << rest;
  }
  const auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (std::size_t i = x.find(s); i != std::string::npos; i = x.find(s, i + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<testsuite "), count("</testsuite>"));
  EXPECT_EQ(count("<failure "), count("</failure>"));
  EXPECT_EQ(count("<testsuites "), 1u);
  EXPECT_EQ(count("</testsuites>"), 1u);
  EXPECT_EQ(x.find('\x01'), std::string::npos);
}

TEST(RenderJunit, LeavesNotApplicableOutByDefaultAndSaysHowMany) {
  const CheckResult r = sample_result();
  const std::string x = report::render_junit(r);
  EXPECT_EQ(x.find("<skipped message=\"not_applicable"), std::string::npos) << x;
  // The skipped (not not_applicable) cuda case stays.
  EXPECT_NE(x.find("<testsuites name=\"kc\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<testsuite name=\"C-EXC-01\" tests=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("<property name=\"kc.not_applicable\" value=\"3\"/>"), std::string::npos) << x;
  const std::string all = report::render_junit(r, {.include_not_applicable = true});
  EXPECT_NE(all.find("<testsuites name=\"kc\" tests=\"6\""), std::string::npos) << all;
  EXPECT_EQ(all.find("kc.not_applicable"), std::string::npos) << all;
}

TEST(RenderJunit, PropertiesCarrySeedVersionCommitAndLibraries) {
  CheckResult r = sample_result();
  for (auto& c : r.cases) c.seed = 0x2a;
  kc::BackendInfo calib, cuda;
  calib.name = "calib";
  calib.available = true;
  calib.version = "1.2";
  cuda.name = "cuda";
  cuda.reason = "no device";
  r.backends = {calib, cuda};
  const auto props = report::junit_properties(r);
  ASSERT_GE(props.size(), 5u);
  EXPECT_EQ(props[0], (std::pair<std::string, std::string>{"kc.seed", "0x2a"}));
  EXPECT_EQ(props[1].first, "kc.version");
  EXPECT_EQ(props[2].first, "kc.commit");
  EXPECT_FALSE(props[2].second.empty());
  EXPECT_EQ(props[3], (std::pair<std::string, std::string>{"kc.library.calib", "1.2"}));
  EXPECT_EQ(props[4], (std::pair<std::string, std::string>{"kc.library.cuda", "unavailable: no device"}));
  const std::string x = report::render_junit(r);
  // One <properties> block per suite, before its testcases.
  const std::size_t suite = x.find("<testsuite name=\"C-PRC-01\"");
  ASSERT_NE(suite, std::string::npos) << x;
  EXPECT_LT(x.find("<property name=\"kc.seed\" value=\"0x2a\"/>", suite), x.find("<testcase ", suite)) << x;
}

TEST(RenderJunit, ControlCharactersCannotBreakTheDocument) {
  CheckResult r;
  r.cases = {make_case("C-X", "i", Verdict::kError)};
  r.cases[0].reason = std::string("bell") + '\x07' + "nul-ish" + '\x01' + "]]>";
  const std::string x = report::render_junit(r);
  EXPECT_EQ(x.find('\x07'), std::string::npos);
  EXPECT_EQ(x.find("]]>"), std::string::npos);
  EXPECT_NE(x.find("<error type=\"error\""), std::string::npos) << x;
}

TEST(RenderMarkdown, SummaryMatrixAndDetails) {
  const std::string m = report::render_markdown(sample_result());
  EXPECT_NE(m.find("1 conforming, 1 violation, 3 not_applicable, 1 skipped, 0 error"), std::string::npos);
  EXPECT_NE(m.find("## Matrix"), std::string::npos);
  EXPECT_NE(m.find("✗ SATURATION(65504)"), std::string::npos) << m;
  EXPECT_NE(m.find("### C-PRC-01 × calib.matmul_fp16acc"), std::string::npos) << m;
  EXPECT_NE(m.find("kc check contracts/classes/C-PRC-01.kc"), std::string::npos);
}

// ---------------------------------------------------------------------------

const report::ImplGrade* find_grade(const std::vector<report::ImplGrade>& gs, const std::string& impl) {
  for (const auto& g : gs)
    if (g.impl == impl) return &g;
  return nullptr;
}

TEST(Grade, Levels) {
  CheckResult r;
  r.cases = {
      make_case("A", "good", Verdict::kConforming),        make_case("B", "good", Verdict::kConforming),
      make_case("C", "good", Verdict::kNotApplicable),     make_case("A", "bad", Verdict::kConforming),
      make_case("B", "bad", Verdict::kViolation),          make_case("C", "bad", Verdict::kError),
      make_case("A", "crashy", Verdict::kError),           make_case("B", "crashy", Verdict::kConforming),
      make_case("A", "offscope", Verdict::kNotApplicable), make_case("B", "offscope", Verdict::kNotApplicable),
      make_case("A", "partial", Verdict::kConforming),     make_case("B", "partial", Verdict::kUnderSpecified),
      make_case("A", "nogpu", Verdict::kSkipped, "cuda"),  make_case("B", "nogpu", Verdict::kNotApplicable, "cuda"),
  };
  const auto gs = report::grade(r);
  ASSERT_EQ(gs.size(), 6u);
  EXPECT_EQ(gs[0].impl, "good");  // first-seen order
  EXPECT_EQ(find_grade(gs, "good")->level, "conforming");
  EXPECT_EQ(find_grade(gs, "good")->conforming, 2);
  EXPECT_EQ(find_grade(gs, "good")->not_applicable, 1);
  EXPECT_EQ(find_grade(gs, "bad")->level, "violating");
  EXPECT_EQ(find_grade(gs, "bad")->violations, 1);
  EXPECT_EQ(find_grade(gs, "bad")->errors, 1);
  EXPECT_NE(find_grade(gs, "bad")->summary.find("B [SATURATION(65504)]"), std::string::npos);
  EXPECT_EQ(find_grade(gs, "crashy")->level, "error");
  EXPECT_EQ(find_grade(gs, "offscope")->level, "untested");
  EXPECT_EQ(find_grade(gs, "partial")->level, "incomplete");
  EXPECT_EQ(find_grade(gs, "partial")->other, 1);
  EXPECT_EQ(find_grade(gs, "nogpu")->level, "untested");

  const auto bs = report::grade_backends(gs);
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(bs[0].backend, "calib");
  EXPECT_EQ(bs[0].level, "violating");  // the worst of its impls
  EXPECT_EQ(bs[0].impls, 5);
  EXPECT_EQ(bs[1].backend, "cuda");
  EXPECT_EQ(bs[1].level, "untested");
}

// Tiers: numeric needs a conforming contract and no violation or error;
// robust also needs, with every applicable contract measured, a conforming
// exceptional-value contract and a conforming held-out-shape contract.
TEST(Grade, TiersSayWhatWasShown) {
  auto covered = [](const std::string& contract, const std::string& impl, Verdict v, std::vector<std::string> tags) {
    CaseResult c = make_case(contract, impl, v);
    c.covers = std::move(tags);
    return c;
  };
  CheckResult r;
  r.cases = {
      covered("N", "robust", Verdict::kConforming, {"numeric"}),
      covered("E", "robust", Verdict::kConforming, {"exceptional"}),
      covered("S", "robust", Verdict::kConforming, {"held_out_shapes"}),
      covered("N", "numeric_only", Verdict::kConforming, {"numeric"}),
      covered("E", "numeric_only", Verdict::kNotApplicable, {"exceptional"}),
      covered("S", "numeric_only", Verdict::kConforming, {"held_out_shapes"}),
      covered("N", "unmeasured", Verdict::kConforming, {"numeric"}),
      covered("E", "unmeasured", Verdict::kConforming, {"exceptional"}),
      covered("S", "unmeasured", Verdict::kConforming, {"held_out_shapes"}),
      covered("X", "unmeasured", Verdict::kSkipped, {"numeric"}),
      covered("N", "broken", Verdict::kConforming, {"numeric"}),
      covered("E", "broken", Verdict::kViolation, {"exceptional"}),
      covered("N", "offscope", Verdict::kNotApplicable, {"numeric"}),
  };
  const auto gs = report::grade(r);
  EXPECT_EQ(find_grade(gs, "robust")->tier, "robust");
  EXPECT_EQ(find_grade(gs, "numeric_only")->tier, "numeric");
  EXPECT_EQ(find_grade(gs, "unmeasured")->level, "incomplete");
  EXPECT_EQ(find_grade(gs, "unmeasured")->tier, "numeric");
  EXPECT_EQ(find_grade(gs, "broken")->tier, "declared");
  EXPECT_EQ(find_grade(gs, "offscope")->tier, "declared");
}

TEST(Grade, UntestedDoesNotMaskAConformingSibling) {
  CheckResult r;
  r.cases = {make_case("A", "x", Verdict::kConforming), make_case("A", "y", Verdict::kNotApplicable)};
  const auto bs = report::grade_backends(report::grade(r));
  ASSERT_EQ(bs.size(), 1u);
  EXPECT_EQ(bs[0].level, "conforming");
}

TEST(RenderMatrix, NamesEveryImplAndSignature) {
  const CheckResult r = sample_result();
  const std::string m = report::render_matrix(r, false);
  for (const auto& c : r.cases) {
    EXPECT_NE(m.find(c.impl), std::string::npos) << c.impl << "\n" << m;
    EXPECT_NE(m.find(c.contract_id), std::string::npos) << c.contract_id;
  }
  EXPECT_NE(m.find("SATURATION(65504)"), std::string::npos) << m;
  EXPECT_NE(m.find("violating"), std::string::npos) << m;
  EXPECT_NE(m.find("grade per backend"), std::string::npos) << m;
  EXPECT_EQ(m.find("\033["), std::string::npos);
  for (const auto& l : lines_of(m)) {
    std::size_t cols = 0;
    for (char ch : l) cols += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    if (l.find(" × ") == std::string::npos) {
      EXPECT_LE(cols, 100u) << l;
    }
  }
}

TEST(RenderMatrix, ManyImplsStayWithin100Columns) {
  CheckResult r;
  for (int i = 0; i < 60; ++i)
    for (const char* c : {"C-PRC-01", "C-EXC-01", "C-ORD-02"})
      r.cases.push_back(
          make_case(c, "backend" + std::to_string(i % 4) + ".a_rather_long_impl_name_" + std::to_string(i),
                    i % 7 == 0 ? Verdict::kConforming : Verdict::kNotApplicable, "b" + std::to_string(i % 4)));
  for (int i = 0; i < 30; ++i) r.cases.push_back(make_case("C-X-" + std::to_string(i), "one", Verdict::kConforming));
  const std::string m = report::render_matrix(r, false);
  for (const auto& l : lines_of(m)) {
    std::size_t cols = 0;
    for (char ch : l) cols += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    EXPECT_LE(cols, 100u) << l;
  }
}

// ---------------------------------------------------------------------------

TEST(WriteFile, CreatesParentsAndReplacesAtomically) {
  const std::string path = temp_path("a/b/c/report.json");
  ASSERT_TRUE(report::write_file(path, "first").ok());
  EXPECT_EQ(read_all(path), "first");
  ASSERT_TRUE(report::write_file(path, "second").ok());
  EXPECT_EQ(read_all(path), "second");
  // No temporary left beside it.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(WriteFile, FailsCleanlyOnAnUnwritablePath) {
  const std::string dir = temp_path("f");
  write_all(dir, "i am a file");
  EXPECT_FALSE(report::write_file(dir + "/x/report.json", "x").ok());
}


// --resume reads a trace's records back: every field case_json writes survives.
TEST(CaseFromJson, ARecordReadBackWritesTheSameBody) {
  CaseResult c = make_case("C-PRC-01", "calib.matmul_fp16acc", Verdict::kViolation);
  kc::Signature two;
  two.name = "GUARD_OVERWRITTEN";
  two.args = {"C", "after"};
  c.signatures.push_back(two);
  c.evidence.p50 = 0.125;
  c.evidence.max = std::numeric_limits<double>::infinity();
  c.evidence.method = "full_oracle";
  c.evidence.per_config.push_back({"K=4096 M=16 dtype=FP32", 3.2e4, 12, 0.5, 4096, 12, ""});
  c.evidence.per_config.push_back({"K=7", 0, 0, 0, 0, 0, "skipped: \"quoted\"\tnote\x01"});
  c.output_hash = std::string(64, 'e');
  c.covers = {"numeric", "exceptional"};
  c.facts = {{"accumulator", "FP16"}, {"isa", "avx2"}};
  c.timing = CaseResult::Timing{"K=7", 2, 1.5e-3, {1e-4, 2e-4}};
  c.reason = "naïve: 12 of 4096 \\ elements";
  const std::string body = report::case_json(c);
  auto back = report::case_from_json(body, "t.jsonl:1");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(report::case_json(*back), body);
  ASSERT_EQ(back->signatures.size(), 2u);
  EXPECT_EQ(back->signatures[1].args, (std::vector<std::string>{"C", "after"}));
  EXPECT_EQ(back->seed, 0x6b63u);
  EXPECT_FALSE(report::case_from_json("{\"contract\":\"C\"}", "t.jsonl:9").ok());
}

TEST(Trace, ReadForResumeCutsATruncatedLastLineAndSaysSo) {
  const std::string path = temp_path("resume.jsonl");
  auto w = report::TraceWriter::open(path);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(make_case("C-1", "a", Verdict::kConforming)).ok());
  ASSERT_TRUE(w->append(make_case("C-2", "a", Verdict::kViolation)).ok());
  const std::string whole = read_all(path);
  write_all(path, whole + "{\"prev\":\"00");
  std::string note;
  EXPECT_FALSE(report::read_trace_records(path, nullptr).ok()) << "without cut_note a cut line is an error";
  auto recs = report::read_trace_records(path, &note);
  ASSERT_TRUE(recs.ok()) << recs.status().message();
  EXPECT_EQ(recs->size(), 2u);
  EXPECT_NE(note.find(":3: cut off a truncated last line (11 bytes"), std::string::npos) << note;
  EXPECT_EQ(read_all(path), whole);
  EXPECT_EQ((*recs)[1].hash, w->last_hash());
  EXPECT_TRUE(report::TraceWriter::open(path).ok());
}

}  // namespace
