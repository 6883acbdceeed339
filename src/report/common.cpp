#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "kc/report_common.h"

namespace kc::report {

std::string seed_hex(std::uint64_t seed) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, seed);
  return buf;
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(epoch, &end, 10);
    if (end != nullptr && *end == '\0') t = static_cast<std::time_t>(v);
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

Status fsync_parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ok_status();
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL && err != EROFS) {
    return internal_error(path + ": fsync of directory " + dir + ": " + std::strerror(err));
  }
  return ok_status();
}

void write_timing(JsonWriter& w, const std::optional<engine::CaseResult::Timing>& timing) {
  w.key("timing");
  if (!timing) {
    w.null();
    return;
  }
  w.begin_object();
  w.field("config", timing->config).field("sample", timing->sample).field("cold_s", timing->cold_s);
  w.key("warm_s").begin_array();
  for (double t : timing->warm_s) w.value(t);
  w.end_array();
  w.end_object();
}

void write_case(JsonWriter& w, const engine::CaseResult& c) {
  // Field order is part of the format: identity and verdict first, so a line
  // can be skimmed (and grepped) before its nested evidence.
  w.begin_object();
  w.field("contract", c.contract_id);
  w.field("contract_hash", c.contract_hash);
  w.field("contract_file", c.contract_file);
  w.field("impl", c.impl);
  w.field("backend", c.backend);
  w.field("backend_version", c.backend_version);
  w.field("verdict", engine::verdict_name(c.verdict));
  w.field("reason", c.reason);
  w.key("signatures").begin_array();
  for (const auto& s : c.signatures) w.value(s.to_string());
  w.end_array();
  w.field("signature_expected", c.signature_expected);

  const engine::Evidence& e = c.evidence;
  w.key("evidence").begin_object();
  w.field("metric", e.metric);
  w.field("tolerance", e.tolerance);
  w.field("max", e.max);
  w.field("p99", e.p99);
  w.field("mean", e.mean);
  w.field("p50", e.p50);
  w.field("elements", e.elements);
  w.field("failures", e.failures);
  w.key("worst");
  if (e.worst) {
    const engine::WorstElement& x = *e.worst;
    w.begin_object();
    w.field("output", x.output);
    w.field("index", x.index);
    w.field("position", x.position);
    w.field("value", x.value);
    w.field("reference", x.reference);
    w.field("metric", x.metric);
    w.field("config", x.config);
    w.end_object();
  } else {
    w.null();
  }
  w.key("per_config").begin_array();
  for (const auto& pc : e.per_config) {
    w.begin_object();
    w.field("config", pc.config);
    w.field("max", pc.max);
    w.field("p99", pc.p99);
    w.field("mean", pc.mean);
    w.field("elements", pc.elements);
    w.field("failures", pc.failures);
    w.field("note", pc.note);
    w.end_object();
  }
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : e.notes) w.value(n);
  w.end_array();
  w.field("method", e.method);
  w.end_object();

  w.field("seed", seed_hex(c.seed));
  w.field("input_hash", c.input_hash);
  w.field("repro", c.repro);
  w.field("seconds", c.seconds);
  // What run records (record.json) carry besides the verdict, so a case read
  // back from the trace (--resume) gives the same reports and record.
  w.field("output_hash", c.output_hash);
  w.key("covers").begin_array();
  for (const auto& s : c.covers) w.value(s);
  w.end_array();
  w.key("facts").begin_object();
  for (const auto& [k, v] : c.facts) w.field(k, v);
  w.end_object();
  write_timing(w, c.timing);
  w.field("time", utc_timestamp());
  w.field("host", host_name());
  w.field("kc_version", kKcVersion);
  w.end_object();
}

std::string signatures_text(const engine::CaseResult& c, std::string_view sep) {
  std::string out;
  for (const auto& s : c.signatures) {
    if (!out.empty()) out += sep;
    out += s.to_string();
  }
  return out;
}

VerdictCounts count_verdicts(const engine::CheckResult& result) {
  VerdictCounts counts;
  for (const auto& c : result.cases) ++counts[c.verdict];
  return counts;
}

std::string summary_line(const VerdictCounts& k) {
  using engine::Verdict;
  std::string s = std::to_string(k[Verdict::kConforming]) + " conforming, " + std::to_string(k[Verdict::kViolation]) +
                  " violation, " + std::to_string(k[Verdict::kNotApplicable]) + " not_applicable, " +
                  std::to_string(k[Verdict::kSkipped]) + " skipped, " + std::to_string(k[Verdict::kError]) + " error";
  if (k[Verdict::kUnderSpecified] > 0) s += ", " + std::to_string(k[Verdict::kUnderSpecified]) + " under_specified";
  return s;
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  return n;
}

std::string truncate_to_width(std::string_view s, std::size_t width) {
  if (display_width(s) <= width) return std::string(s);
  if (width == 0) return {};
  // Keep width-1 code points, then the ellipsis.
  std::size_t cols = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cols == width - 1) break;
      ++cols;
    }
  }
  return std::string(s.substr(0, i)) + "…";
}

std::string pad_right(std::string_view s, std::size_t width) {
  std::string out(s);
  const std::size_t w = display_width(s);
  if (w < width) out.append(width - w, ' ');
  return out;
}

std::string_view verdict_color(engine::Verdict v) {
  switch (v) {
    case engine::Verdict::kConforming:
      return "\033[32m";
    case engine::Verdict::kViolation:
    case engine::Verdict::kError:
      return "\033[31m";
    case engine::Verdict::kUnderSpecified:
      return "\033[33m";
    case engine::Verdict::kNotApplicable:
    case engine::Verdict::kSkipped:
      return "\033[90m";
  }
  return "";
}

std::string colorize(std::string_view text, std::string_view ansi, bool color) {
  if (!color || ansi.empty()) return std::string(text);
  return std::string(ansi) + std::string(text) + "\033[0m";
}

std::string short_number(double v) {
  if (!std::isfinite(v)) return format_double(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace kc::report

namespace kc::report {

std::vector<std::string> case_details(const engine::CaseResult& c) {
  std::vector<std::string> out;
  const engine::Evidence& e = c.evidence;
  if (!e.metric.empty() || e.elements > 0) {
    std::string s = (e.metric.empty() ? std::string("metric") : e.metric) + ": max " + short_number(e.max) + ", p99 " +
                    short_number(e.p99) + ", mean " + short_number(e.mean) + "; " + std::to_string(e.failures) +
                    " of " + std::to_string(e.elements) + " failed";
    if (!e.tolerance.empty()) s += "; tolerance " + e.tolerance;
    out.push_back(std::move(s));
  }
  for (const auto& n : e.notes) out.push_back("- " + n);
  if (e.worst) {
    const engine::WorstElement& w = *e.worst;
    std::string s = "worst: " + (w.output.empty() ? std::string("output") : w.output);
    if (!w.position.empty()) {
      s += " " + w.position;
    } else if (w.index >= 0) {
      s += " [" + std::to_string(w.index) + "]";
    }
    // Full precision: the exact value (65504, a NaN) is often the finding.
    if (e.metric == "property_ratio")  // an algebraic property: its residual against its derived bound
      s += ": residual " + format_double(w.value) + ", allowed " + format_double(w.reference);
    else
      s += " = " + format_double(w.value) + " vs reference " + format_double(w.reference);
    s += " (" + (e.metric.empty() ? std::string("metric") : e.metric) + " " + short_number(w.metric) + ")";
    if (!w.config.empty()) s += " in " + w.config;
    out.push_back(std::move(s));
  }
  if (!c.input_hash.empty()) out.push_back("seed " + seed_hex(c.seed) + ", input " + c.input_hash);
  if (!c.repro.empty()) out.push_back("repro: " + c.repro);
  return out;
}

std::string reason_without_signature(const engine::CaseResult& c) {
  const std::string sig = signatures_text(c);
  for (const std::string& prefix :
       {sig + ": ", c.signatures.empty() ? std::string() : c.signatures.front().to_string() + ": "}) {
    if (!sig.empty() && !prefix.empty() && c.reason.rfind(prefix, 0) == 0) return c.reason.substr(prefix.size());
  }
  return c.reason;
}

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

int verdict_severity(engine::Verdict v) {
  switch (v) {
    case engine::Verdict::kViolation:
      return 5;
    case engine::Verdict::kError:
      return 4;
    case engine::Verdict::kUnderSpecified:
      return 3;
    case engine::Verdict::kSkipped:
      return 2;
    case engine::Verdict::kConforming:
      return 1;
    case engine::Verdict::kNotApplicable:
      return 0;
  }
  return 0;
}

std::string_view verdict_glyph(engine::Verdict v) {
  switch (v) {
    case engine::Verdict::kConforming:
      return "✓";
    case engine::Verdict::kViolation:
      return "✗";
    case engine::Verdict::kError:
      return "E";
    case engine::Verdict::kUnderSpecified:
      return "?";
    case engine::Verdict::kSkipped:
      return "s";
    case engine::Verdict::kNotApplicable:
      return "–";
  }
  return " ";
}

Grid build_grid(const engine::CheckResult& result) {
  Grid g;
  const auto index_of = [](std::vector<std::string>& names, const std::string& name, bool* added) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return i;
    names.push_back(name);
    *added = true;
    return names.size() - 1;
  };
  for (const auto& c : result.cases) {
    bool new_contract = false, new_impl = false;
    const std::size_t ci = index_of(g.contracts, c.contract_id, &new_contract);
    const std::size_t ii = index_of(g.impls, c.impl, &new_impl);
    if (new_contract) g.at.emplace_back();
    for (auto& row : g.at) row.resize(g.impls.size(), nullptr);
    const engine::CaseResult*& cell = g.at[ci][ii];
    if (cell == nullptr || verdict_severity(c.verdict) > verdict_severity(cell->verdict)) cell = &c;
  }
  return g;
}

}  // namespace kc::report
