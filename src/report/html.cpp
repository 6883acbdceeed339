// HTML report: one self-contained file (inline CSS, one inline script, inline
// SVG; a Content-Security-Policy that allows nothing else, so the page loads
// nothing from anywhere). What matters comes first: the summary, then every
// violation and error, then the near misses; then one matrix per op with only
// the contracts that apply to it, the bound-ratio plots, the evidence of each
// violation, the grades and the backends. Rows can be filtered (search box,
// backend, verdict; also from the URL: report.html#backend=B&verdict=V&q=T)
// and sorted (click a column header).
//
// Every piece of text that came from a contract, an impl or a kernel goes
// through html::escape: a name like `<script>` is text. The script reads
// names only from data attributes and writes only classes and textContent.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "kc/report.h"
#include "kc/report_common.h"
#include "report/html_assets.h"
#include "report/html_page.h"

namespace kc::report {

namespace html {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t':
      case '\n': out += ch; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) out += "\xEF\xBF\xBD";
        else out += ch;
    }
  }
  return out;
}

std::string css_word(std::string_view s) {
  std::string out;
  for (const char ch : s)
    if ((ch >= 'a' && ch <= 'z') || ch == '_') out += ch;
  return out;
}

bool is_ratio_metric(std::string_view metric) {
  // The metric names the engine's plans give a `bound`, `close`, relative,
  // absolute, ulp or elementwise tolerance, and an algebraic property's
  // residual over its derived bound: each is error / allowed error.
  for (std::string_view m : {"bound_ratio", "rel_error/tolerance", "abs_error/tolerance", "ulp/tolerance",
                             "err/(atol+rtol*|ref|)", "ratio", "property_ratio"})
    if (metric == m) return true;
  return false;
}

std::optional<double> worst_ratio(const engine::CaseResult& c) {
  if (c.verdict != engine::Verdict::kConforming && c.verdict != engine::Verdict::kViolation) return std::nullopt;
  if (!is_ratio_metric(c.evidence.metric) || c.evidence.elements <= 0) return std::nullopt;
  const double r = c.evidence.max;
  if (std::isnan(r)) return std::numeric_limits<double>::infinity();
  return std::max(r, 0.0);
}

}  // namespace html

namespace {

using engine::CaseResult;
using engine::Verdict;
using html::escape;

// A conforming case whose worst bound ratio is at least this is a near miss:
// within a factor of two of breaking its bound.
constexpr double kNearMiss = 0.5;
// The near-miss table lists at most this many (the worst first).
constexpr std::size_t kMaxNearMisses = 200;
// Evidence sections start open when there are at most this many.
constexpr std::size_t kOpenEvidence = 12;
// Matrices of ops with a violation start open when there are at most this many such ops.
constexpr std::size_t kOpenOps = 4;

constexpr Verdict kVerdictOrder[] = {Verdict::kViolation, Verdict::kError, Verdict::kUnderSpecified,
                                     Verdict::kSkipped, Verdict::kConforming, Verdict::kNotApplicable};

std::string verdict_word(Verdict v) { return html::css_word(engine::verdict_name(v)); }
std::string verdict_class(Verdict v) { return "v-" + verdict_word(v); }

std::string td(std::string_view text) { return "<td>" + escape(text) + "</td>"; }
std::string td_num(std::string_view text, std::string_view key) {
  return "<td class=\"num\" data-k=\"" + escape(key) + "\">" + escape(text) + "</td>";
}

std::string lower(std::string_view s) {
  std::string out;
  for (char ch : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// The attributes that make an element a filter target: its backend, the
/// verdicts it shows, and the lower-case text the search box matches.
std::string filter_attrs(std::string_view backend, std::string_view verdicts, std::string_view text) {
  return " data-b=\"" + escape(backend) + "\" data-v=\"" + escape(verdicts) + "\" data-s=\"" + escape(lower(text)) +
         "\"";
}

/// A URL component: bytes other than letters, digits and -_.~ percent-encoded
/// (what the page's script decodes with decodeURIComponent).
std::string url_component(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) != 0 || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string case_anchor(std::size_t i) { return "case-" + std::to_string(i); }
bool has_details(const CaseResult& c) { return c.verdict == Verdict::kViolation || c.verdict == Verdict::kError; }

std::string ratio_text(double r) { return std::isinf(r) ? std::string("inf") : short_number(r); }
/// A sort key for a ratio: +inf sorts above every finite one.
std::string ratio_key(double r) { return std::isinf(r) ? std::string("1e308") : format_double(r); }

/// Index of a case in result.cases.
std::size_t index_of(const engine::CheckResult& result, const CaseResult& c) {
  return static_cast<std::size_t>(&c - result.cases.data());
}

std::string search_text(const CaseResult& c) {
  return c.contract_id + " " + c.impl + " " + c.backend + " " + std::string(engine::verdict_name(c.verdict)) + " " +
         signatures_text(c) + " " + c.reason;
}

/// The Content-Security-Policy of the page: nothing but its own inline style
/// and its one script (by hash), so no request can leave it and no injected
/// script could run even if escaping failed.
std::string content_security_policy() {
  const std::string hex = sha256_hex(std::string(html::kScript));
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0u) |
                       (i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0u);
    b64 += kB64[(n >> 18) & 63];
    b64 += kB64[(n >> 12) & 63];
    b64 += i + 1 < bytes.size() ? kB64[(n >> 6) & 63] : '=';
    b64 += i + 2 < bytes.size() ? kB64[n & 63] : '=';
  }
  return "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" + b64 + "'";
}

struct Page {
  const engine::CheckResult& result;
  std::vector<ImplGrade> grades;
  std::map<std::string, const ImplGrade*> grade_of;
  std::vector<std::string> backends;  ///< every backend with a case, first-seen order
  std::string out;

  explicit Page(const engine::CheckResult& r) : result(r), grades(grade(r)) {
    for (const auto& g : grades) grade_of[g.impl] = &g;
    for (const auto& c : r.cases)
      if (std::find(backends.begin(), backends.end(), c.backend) == backends.end()) backends.push_back(c.backend);
  }

  void head();
  void controls();
  void summary();
  void violations();
  void near_misses();
  void matrices();
  std::map<std::string, std::string> groups_without_op() const;
  void plots();
  void evidence();
  void grades_section();
  void backends_section();
  std::string render_case(const CaseResult& c, std::size_t index, bool open) const;
};

void Page::head() {
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
         content_security_policy() + "\">\n<title>kc conformance report</title>\n<style>";
  out += html::kStyle;
  out += "</style>\n</head>\n<body>\n<header>\n<h1>kc conformance report</h1>\n";
  out += "<p><strong>" + escape(summary_line(count_verdicts(result))) + "</strong></p>\n";
  out += "<p class=\"meta\">kc " + escape(kKcVersion) + " · " + escape(utc_timestamp()) + " · host " +
         escape(host_name()) + "</p>\n";
  out += "<nav class=\"toc\"><a href=\"#summary\">Summary</a> <a href=\"#violations\">Violations</a> "
         "<a href=\"#near\">Near misses</a> <a href=\"#ops\">Matrices per op</a> <a href=\"#plots\">Plots</a> "
         "<a href=\"#evidence\">Evidence</a> <a href=\"#grades\">Grades</a> <a href=\"#backends\">Backends</a></nav>\n"
         "</header>\n";
}

void Page::controls() {
  out += "<div class=\"controls\" id=\"controls\">\n<input id=\"q\" type=\"search\" placeholder=\"Filter: contract, impl, "
         "signature, reason\" aria-label=\"filter\">\n<select id=\"fb\" aria-label=\"backend\"><option value=\"\">all "
         "backends</option>";
  for (const auto& b : backends) out += "<option value=\"" + escape(b) + "\">" + escape(b) + "</option>";
  out += "</select>\n<select id=\"fv\" aria-label=\"verdict\"><option value=\"\">all verdicts</option>";
  for (const Verdict v : kVerdictOrder)
    out += "<option value=\"" + verdict_word(v) + "\">" + escape(engine::verdict_name(v)) + "</option>";
  out += "</select>\n<button id=\"clear\" type=\"button\">clear</button> <a id=\"share\" href=\"#\">link to this "
         "view</a>\n</div>\n";
}

void Page::summary() {
  const VerdictCounts total = count_verdicts(result);
  out += "<section id=\"summary\">\n<h2>Summary</h2>\n<p class=\"chips\">";
  for (const Verdict v : kVerdictOrder)
    out += "<a class=\"" + verdict_class(v) + "\" href=\"#verdict=" + verdict_word(v) + "\">" +
           escape(verdict_glyph(v)) + " " + std::to_string(total[v]) + " " + escape(engine::verdict_name(v)) + "</a>";
  out += "</p>\n";
  if (backends.empty()) {
    out += "<p>No case ran.</p>\n</section>\n";
    return;
  }
  std::map<std::string, VerdictCounts> per;
  std::map<std::string, int> impls;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& c : result.cases) {
    ++per[c.backend][c.verdict];
    if (seen.insert({c.backend, c.impl}).second) ++impls[c.backend];
  }
  std::map<std::string, std::string> level;
  for (const auto& b : grade_backends(grades)) level[b.backend] = b.level;
  out += "<p>Per backend. A count links to those cases, filtered.</p>\n<div class=\"scroll\"><table class=\"sortable\" "
         "id=\"per-backend\">\n<thead><tr><th>backend</th><th>level</th><th>impls</th>";
  for (const Verdict v : kVerdictOrder) out += "<th>" + escape(engine::verdict_name(v)) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& b : backends) {
    out += "<tr><th><a href=\"#backend=" + escape(url_component(b)) + "\">" + escape(b) + "</a></th><td class=\"l-" +
           html::css_word(level[b]) + "\">" + escape(level[b]) + "</td>" +
           td_num(std::to_string(impls[b]), std::to_string(impls[b]));
    for (const Verdict v : kVerdictOrder) {
      const int n = per[b][v];
      const std::string k = std::to_string(n);
      if (n == 0 || v == Verdict::kNotApplicable) {
        out += td_num(k, k);
        continue;
      }
      out += "<td class=\"num\" data-k=\"" + k + "\"><a href=\"#backend=" + escape(url_component(b)) + "&amp;verdict=" +
             verdict_word(v) + "\">" + k + "</a></td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n</section>\n";
}

void Page::violations() {
  std::vector<const CaseResult*> rows;
  for (const auto& c : result.cases)
    if (has_details(c)) rows.push_back(&c);
  out += "<section id=\"violations\">\n<h2>Violations and errors (<span data-count=\"violation-rows\">" +
         std::to_string(rows.size()) + "</span>)</h2>\n";
  if (rows.empty()) {
    out += "<p>No violation and no error.</p>\n<table id=\"violation-rows\"><tbody></tbody></table>\n</section>\n";
    return;
  }
  out += "<p>Each row links to its evidence; the repro line runs the case again. Worst ratio: the largest measured "
         "error over the allowed error (above 1 breaks the bound).</p>\n<div class=\"scroll\"><table class=\"sortable "
         "list\">\n<thead><tr><th>verdict</th><th>contract</th><th>impl</th><th>backend</th><th>signature</th>"
         "<th>worst ratio</th><th>metric</th><th>repro</th></tr></thead>\n<tbody id=\"violation-rows\">\n";
  for (const CaseResult* c : rows) {
    const std::size_t i = index_of(result, *c);
    const auto r = html::worst_ratio(*c);
    std::string what = signatures_text(*c);
    if (c->verdict == Verdict::kError || what.empty()) what = c->reason;
    out += "<tr class=\"f " + verdict_class(c->verdict) + "\"" +
           filter_attrs(c->backend, verdict_word(c->verdict), search_text(*c)) + ">";
    out += "<td class=\"verdict " + verdict_class(c->verdict) + "\" data-k=\"" +
           std::to_string(verdict_severity(c->verdict)) + "\">" + escape(verdict_glyph(c->verdict)) + " " +
           escape(engine::verdict_name(c->verdict)) + "</td>";
    out += "<td class=\"id\"><a href=\"#" + case_anchor(i) + "\">" + escape(c->contract_id) + "</a></td>" + td(c->impl) +
           td(c->backend) + td(truncate_to_width(what, 160));
    out += r ? td_num(ratio_text(*r), ratio_key(*r)) : std::string("<td class=\"num\" data-k=\"\"></td>");
    out += td(c->evidence.metric);
    out += c->repro.empty() ? std::string("<td></td>") : "<td class=\"repro\"><code>" + escape(c->repro) + "</code></td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n</section>\n";
}

void Page::near_misses() {
  std::vector<std::pair<double, const CaseResult*>> near;
  for (const auto& c : result.cases)
    if (c.verdict == Verdict::kConforming)
      if (const auto r = html::worst_ratio(c); r && *r >= kNearMiss) near.emplace_back(*r, &c);
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  out += "<section id=\"near\">\n<h2>Near misses (<span data-count=\"near-rows\">" +
         std::to_string(std::min(near.size(), kMaxNearMisses)) + "</span>)</h2>\n<p>Conforming cases whose worst bound "
         "ratio is at least " + short_number(kNearMiss) +
         ": within a factor of two of breaking the bound. A change of compiler, library or hardware is most likely to "
         "turn these.</p>\n";
  if (near.empty()) {
    out += "<p>None.</p>\n<table id=\"near-rows\"><tbody></tbody></table>\n</section>\n";
    return;
  }
  if (near.size() > kMaxNearMisses)
    out += "<p>The " + std::to_string(kMaxNearMisses) + " closest of " + std::to_string(near.size()) + ".</p>\n";
  near.resize(std::min(near.size(), kMaxNearMisses));
  out += "<div class=\"scroll\"><table class=\"sortable list\">\n<thead><tr><th>contract</th><th>impl</th>"
         "<th>backend</th><th>worst ratio</th><th>metric</th><th>tolerance</th></tr></thead>\n<tbody id=\"near-rows\">\n";
  for (const auto& [r, c] : near) {
    out += "<tr class=\"f\"" + filter_attrs(c->backend, "conforming near", search_text(*c)) + "><td class=\"id\">" +
           escape(c->contract_id) + "</td>" +
           td(c->impl) + td(c->backend) + td_num(ratio_text(r), ratio_key(r)) + td(c->evidence.metric) +
           td(c->evidence.tolerance) + "</tr>\n";
  }
  out += "</tbody></table></div>\n</section>\n";
}

std::map<std::string, std::string> Page::groups_without_op() const {
  std::map<std::string, std::string> parent;  // union-find over "i:impl" and "c:contract"
  const auto find = [&](std::string x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<std::string> order;  // contracts in first-seen order
  for (const auto& c : result.cases) {
    if (result.impl_ops.count(c.impl) && !result.impl_ops.at(c.impl).empty()) continue;
    if (c.verdict == Verdict::kNotApplicable) continue;
    const std::string i = "i:" + c.impl, k = "c:" + c.contract_id;
    if (!parent.count(i)) parent[i] = i;
    if (!parent.count(k)) {
      parent[k] = k;
      order.push_back(c.contract_id);
    }
    parent[find(i)] = find(k);
  }
  std::map<std::string, std::vector<std::string>> members;  // root -> contracts
  for (const auto& k : order) members[find("c:" + k)].push_back(k);
  std::map<std::string, std::string> out;
  for (const auto& [node, up] : parent) {
    if (node.rfind("i:", 0) != 0) continue;
    const auto& ks = members[find(node)];
    std::string label = "(op not recorded) " + ks.front();
    if (ks.size() > 1) label += " and " + std::to_string(ks.size() - 1) + " more";
    out[node.substr(2)] = label;
  }
  return out;
}

void Page::matrices() {
  // Group impls by their op (a result put together from run records, kc
  // merge, does not know the ops: see groups_without_op).
  std::vector<std::string> ops;
  std::map<std::string, std::vector<std::string>> impls_of;
  std::map<std::string, std::vector<std::string>> contracts_of;   // applicable ones, first-seen order
  std::map<std::pair<std::string, std::string>, const CaseResult*> cell;  // (contract, impl), most severe
  std::map<std::string, std::string> op_of_impl;
  // Without recorded ops, impls are grouped by the contracts they share:
  // the connected parts of the impl-contract graph of applicable cases.
  const std::map<std::string, std::string> unrecorded = groups_without_op();
  const auto op_of = [&](const std::string& impl) {
    const auto it = result.impl_ops.find(impl);
    if (it != result.impl_ops.end() && !it->second.empty()) return it->second;
    const auto g = unrecorded.find(impl);
    return g == unrecorded.end() ? std::string("(op not recorded)") : g->second;
  };
  for (const auto& c : result.cases) {
    const std::string op = op_of(c.impl);
    if (!impls_of.count(op)) ops.push_back(op);
    auto& impls = impls_of[op];
    if (std::find(impls.begin(), impls.end(), c.impl) == impls.end()) impls.push_back(c.impl);
    const CaseResult*& x = cell[{c.contract_id, c.impl}];
    if (x == nullptr || verdict_severity(c.verdict) > verdict_severity(x->verdict)) x = &c;
    if (c.verdict != Verdict::kNotApplicable) {
      auto& cs = contracts_of[op];
      if (std::find(cs.begin(), cs.end(), c.contract_id) == cs.end()) cs.push_back(c.contract_id);
    }
  }
  out += "<section id=\"ops\">\n<h2>Matrices per op</h2>\n<p>One matrix per op: its impls down the side, across the "
         "top only the contracts that apply to at least one of them; an empty cell is not applicable. A cell links to "
         "its evidence; click a column header to sort.</p>\n";
  // Ops with a violation or error start open, unless there are so many that
  // the page would grow long: then the violations table above is the way in.
  std::size_t failing_ops = 0;
  for (const auto& op : ops) {
    bool failing = false;
    for (const auto& impl : impls_of[op])
      for (const auto& k : contracts_of[op])
        if (const auto it = cell.find({k, impl}); it != cell.end() && it->second != nullptr && has_details(*it->second))
          failing = true;
    failing_ops += failing ? 1 : 0;
  }
  const bool open_failing = failing_ops <= kOpenOps;
  std::vector<std::string> idle;
  std::set<std::string> ids;
  for (const auto& op : ops) {
    const auto& impls = impls_of[op];
    const auto& cs = contracts_of[op];
    if (cs.empty()) {
      idle.push_back(op + " (" + std::to_string(impls.size()) + (impls.size() == 1 ? " impl)" : " impls)"));
      continue;
    }
    // Only impls some contract of the op applies to get a row; the others are named below it.
    std::vector<std::string> rows, bare;
    for (const auto& impl : impls) {
      bool any = false;
      for (const auto& k : cs)
        if (const CaseResult* x = cell[{k, impl}]; x != nullptr && x->verdict != Verdict::kNotApplicable) any = true;
      (any ? rows : bare).push_back(impl);
    }
    int bad = 0;
    for (const auto& impl : rows)
      for (const auto& k : cs)
        if (const CaseResult* x = cell[{k, impl}]; x != nullptr && has_details(*x)) ++bad;
    std::string id = "op-" + html::css_word(lower(op));
    for (int n = 2; !ids.insert(id).second; ++n) id = "op-" + html::css_word(lower(op)) + "-" + std::to_string(n);
    out += "<details class=\"op fc\" id=\"" + id + "\"" + (bad > 0 && open_failing ? " open" : "") + "><summary><h3>" + escape(op) +
           "</h3> <span class=\"meta\">" + std::to_string(rows.size()) + " impls × " + std::to_string(cs.size()) +
           " contracts" + (bad > 0 ? " · " + std::to_string(bad) + " violations or errors" : "") +
           "</span></summary>\n<div class=\"scroll\"><table class=\"matrix sortable\">\n<thead><tr><th>impl</th>"
           "<th>backend</th><th>level</th>";
    for (const auto& k : cs) out += "<th class=\"col\" title=\"" + escape(k) + "\">" + escape(k) + "</th>";
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& impl : rows) {
      std::string backend, verdicts, text = impl;
      std::string row;
      for (const auto& k : cs) {
        const CaseResult* x = cell[{k, impl}];
        if (x == nullptr || x->verdict == Verdict::kNotApplicable) {
          row += "<td class=\"c\" data-k=\"\"></td>";
          continue;
        }
        backend = x->backend;
        const std::string w = verdict_word(x->verdict);
        if ((" " + verdicts + " ").find(" " + w + " ") == std::string::npos) verdicts += (verdicts.empty() ? "" : " ") + w;
        text += " " + k + " " + signatures_text(*x);
        const auto r = html::worst_ratio(*x);
        // Sort key: how bad, then how close to the bound.
        const double key = verdict_severity(x->verdict) * 1000.0 + (r ? std::min(*r, 999.0) : 0.0);
        std::string inner = escape(verdict_glyph(x->verdict));
        if (has_details(*x)) inner = "<a href=\"#" + case_anchor(index_of(result, *x)) + "\">" + inner + "</a>";
        std::string title = k + ": " + std::string(engine::verdict_name(x->verdict));
        if (const std::string sig = signatures_text(*x); !sig.empty()) title += " " + sig;
        if (r) title += ", worst ratio " + ratio_text(*r);
        if (!x->reason.empty()) title += " — " + x->reason;
        row += "<td class=\"c " + verdict_class(x->verdict) + "\" data-k=\"" + format_double(key) + "\" title=\"" +
               escape(truncate_to_width(title, 300)) + "\">" + inner + "</td>";
      }
      if (backend.empty())
        for (const auto& c : result.cases)
          if (c.impl == impl) backend = c.backend;
      const auto g = grade_of.find(impl);
      const std::string level = g == grade_of.end() ? "" : g->second->level;
      out += "<tr class=\"f\"" + filter_attrs(backend, verdicts, text + " " + backend) + "><th>" + escape(impl) +
             "</th>" + td(backend) + "<td class=\"l-" + html::css_word(level) + "\">" + escape(level) + "</td>" + row +
             "</tr>\n";
    }
    out += "</tbody></table></div>\n";
    if (!bare.empty()) {
      out += "<p class=\"meta\">No contract here applies to " + std::to_string(bare.size()) + " more impl" +
             (bare.size() == 1 ? "" : "s") + ": ";
      for (std::size_t i = 0; i < bare.size(); ++i) out += (i ? ", " : "") + escape(bare[i]);
      out += ".</p>\n";
    }
    out += "</details>\n";
  }
  if (!idle.empty()) {
    out += "<p>Ops no selected contract applies to: ";
    for (std::size_t i = 0; i < idle.size(); ++i) out += (i ? ", " : "") + escape(idle[i]);
    out += ".</p>\n";
  }
  out += "</section>\n";
}

void Page::plots() {
  struct ContractPlot {
    std::string contract, metric;
    std::vector<html::PlotPoint> points;
    double worst = 0;
  };
  std::vector<ContractPlot> plots;
  std::map<std::string, std::size_t> at;
  for (const auto& c : result.cases) {
    const auto r = html::worst_ratio(c);
    if (!r) continue;
    auto [it, added] = at.emplace(c.contract_id, plots.size());
    if (added) plots.push_back({c.contract_id, c.evidence.metric, {}, 0});
    ContractPlot& p = plots[it->second];
    p.points.push_back({*r, c.impl, std::string(engine::verdict_name(c.verdict)), c.backend});
    p.worst = std::max(p.worst, *r);
  }
  std::stable_sort(plots.begin(), plots.end(), [](const auto& a, const auto& b) { return a.worst > b.worst; });
  out += "<section id=\"plots\">\n<h2>Bound ratios per contract</h2>\n<p>Each impl's worst bound ratio (measured error "
         "over allowed error) on a log axis; the dashed red line is the threshold 1, a point right of it a violation. "
         "Hover a point for its impl. Worst contract first; the filters apply to the points.</p>\n";
  if (plots.empty()) out += "<p>No case was judged against a bound.</p>\n";
  out += "<div class=\"plots\">\n";
  for (const auto& p : plots) {
    out += "<figure class=\"fc\"><figcaption><strong>" + escape(p.contract) + "</strong> <span class=\"meta\">" +
           escape(p.metric) + " · " + std::to_string(p.points.size()) + " impls · worst " + ratio_text(p.worst) +
           "</span></figcaption>" + html::ratio_strip_svg(p.points) + "</figure>\n";
  }
  out += "</div>\n</section>\n";
}

std::string Page::render_case(const CaseResult& c, std::size_t index, bool open) const {
  std::string s = "<details class=\"case f " + verdict_class(c.verdict) + "\" id=\"" + case_anchor(index) +
                  "\"" + filter_attrs(c.backend, verdict_word(c.verdict), search_text(c)) + (open ? " open" : "") +
                  ">\n<summary><h3>" + escape(c.contract_id) + " × " + escape(c.impl) + " — " +
                  escape(engine::verdict_name(c.verdict)) + "</h3></summary>\n<ul>\n";
  if (const std::string sig = signatures_text(c); !sig.empty())
    s += "<li>signature: <code>" + escape(sig) + "</code>" + (c.signature_expected ? " (listed by the contract)" : "") +
         "</li>\n";
  s += "<li>backend: " + escape(c.backend) + (c.backend_version.empty() ? "" : " " + escape(c.backend_version)) +
       "</li>\n";
  if (!c.reason.empty()) s += "<li>reason: " + escape(reason_without_signature(c)) + "</li>\n";
  // The evidence lines every other renderer prints (statistics, notes, worst
  // element, seed and input hash), from the one shared helper.
  for (const auto& d : case_details(c)) {
    if (d.rfind("repro: ", 0) == 0) continue;
    s += "<li>" + escape(d.rfind("- ", 0) == 0 ? d.substr(2) : d) + "</li>\n";
  }
  if (!c.evidence.method.empty()) s += "<li>method: " + escape(c.evidence.method) + "</li>\n";
  s += "</ul>\n";
  if (!c.evidence.per_config.empty()) {
    if (html::is_ratio_metric(c.evidence.metric)) {
      std::vector<html::PlotPoint> points;
      for (const auto& pc : c.evidence.per_config) {
        if (!pc.note.empty() && pc.elements == 0) continue;  // a skipped config has no ratio
        const bool broke = pc.failures > 0;
        points.push_back({std::isnan(pc.max) ? std::numeric_limits<double>::infinity() : std::max(pc.max, 0.0),
                          pc.config, broke ? "violation" : "conforming", c.backend});
      }
      if (!points.empty())
        s += "<p>" + escape(c.evidence.metric) + " across configs (threshold 1):</p>\n" + html::ratio_series_svg(points) +
             "\n";
    }
    s += "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr><th>config</th><th>max</th><th>p99</th>"
         "<th>mean</th><th>failed</th><th>note</th></tr></thead>\n<tbody>\n";
    for (const auto& pc : c.evidence.per_config)
      s += "<tr>" + td(pc.config) + td_num(short_number(pc.max), format_double(pc.max)) +
           td_num(short_number(pc.p99), format_double(pc.p99)) + td_num(short_number(pc.mean), format_double(pc.mean)) +
           td(std::to_string(pc.failures) + " of " + std::to_string(pc.elements)) + td(pc.note) + "</tr>\n";
    s += "</tbody></table></div>\n";
  }
  if (!c.repro.empty()) s += "<p>repro:</p>\n<pre><code>" + escape(c.repro) + "</code></pre>\n";
  s += "</details>\n";
  return s;
}

void Page::evidence() {
  std::size_t n = 0;
  for (const auto& c : result.cases) n += has_details(c) ? 1 : 0;
  out += "<section id=\"evidence\">\n<h2>Evidence</h2>\n";
  if (n == 0) {
    out += "<p>No violation and no error.</p>\n</section>\n";
    return;
  }
  out += "<p>Per violation or error: its signature, statistics, worst element, the bound ratio across configs, and "
         "the repro line.</p>\n";
  for (std::size_t i = 0; i < result.cases.size(); ++i)
    if (has_details(result.cases[i])) out += render_case(result.cases[i], i, n <= kOpenEvidence);
  out += "</section>\n";
}

void Page::grades_section() {
  if (grades.empty()) return;
  out += "<section id=\"grades\">\n<h2>Grades</h2>\n<p>Levels and tiers are defined in docs/grading.md.</p>\n";
  out += "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr><th>impl</th><th>backend</th><th>level</th>"
         "<th>tier</th><th>conforming</th><th>violation</th><th>error</th><th>not_applicable</th><th>other</th>"
         "<th>summary</th></tr></thead>\n<tbody>\n";
  for (const auto& x : grades) {
    std::string verdicts;
    for (const auto& [v, n] : {std::pair{Verdict::kConforming, x.conforming}, std::pair{Verdict::kViolation, x.violations},
                               std::pair{Verdict::kError, x.errors}, std::pair{Verdict::kNotApplicable, x.not_applicable}})
      if (n > 0) verdicts += (verdicts.empty() ? "" : " ") + verdict_word(v);
    out += "<tr class=\"f\"" + filter_attrs(x.backend, verdicts, x.impl + " " + x.backend + " " + x.summary) + ">" +
           td(x.impl) + td(x.backend) + "<td class=\"l-" + html::css_word(x.level) + "\">" + escape(x.level) + "</td>" +
           td(x.tier) + td_num(std::to_string(x.conforming), std::to_string(x.conforming)) +
           td_num(std::to_string(x.violations), std::to_string(x.violations)) +
           td_num(std::to_string(x.errors), std::to_string(x.errors)) +
           td_num(std::to_string(x.not_applicable), std::to_string(x.not_applicable)) +
           td_num(std::to_string(x.other), std::to_string(x.other)) + td(x.summary) + "</tr>\n";
  }
  out += "</tbody></table></div>\n<table>\n<thead><tr><th>backend</th><th>level</th><th>impls</th></tr></thead>\n"
         "<tbody>\n";
  for (const auto& b : grade_backends(grades))
    out += "<tr>" + td(b.backend) + "<td class=\"l-" + html::css_word(b.level) + "\">" + escape(b.level) + "</td>" +
           td(b.summary) + "</tr>\n";
  out += "</tbody></table>\n</section>\n";
}

void Page::backends_section() {
  if (result.backends.empty()) return;
  out += "<section id=\"backends\">\n<h2>Backends</h2>\n<div class=\"scroll\"><table>\n<thead><tr><th>backend</th>"
         "<th>available</th><th>version</th><th>where / why not</th></tr></thead>\n<tbody>\n";
  for (const auto& b : result.backends)
    out += "<tr>" + td(b.name) + "<td class=\"" + std::string(b.available ? "v-conforming" : "v-skipped") + "\">" +
           (b.available ? "yes" : "no") + "</td>" + td(b.version) + td(b.reason) + "</tr>\n";
  out += "</tbody></table></div>\n</section>\n";
}

}  // namespace

std::string render_html(const engine::CheckResult& result) {
  Page p(result);
  p.head();
  p.controls();
  if (!result.diagnostics.empty()) {
    p.out += "<section id=\"diagnostics\">\n<h2>Diagnostics</h2>\n<pre>";
    for (const auto& d : result.diagnostics) {
      std::string r = d.render();
      if (r.empty() || r.back() != '\n') r += '\n';
      p.out += escape(r);
    }
    p.out += "</pre>\n</section>\n";
  }
  p.summary();
  p.violations();
  p.near_misses();
  p.matrices();
  p.plots();
  p.evidence();
  p.grades_section();
  p.backends_section();
  p.out += "<script>";
  p.out += html::kScript;
  p.out += "</script>\n</body>\n</html>\n";
  return std::move(p.out);
}

}  // namespace kc::report
