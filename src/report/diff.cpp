// kc — `kc diff OLD NEW`: two run records compared contract x impl by
// contract x impl (kc/diff.h, docs/diff.md).
#include "kc/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "kc/json_writer.h"
#include "kc/report_common.h"
#include "report/stats.h"

namespace kc::report {

namespace {

bool judged(const std::string& v) { return v == "conforming" || v == "violation" || v == "error"; }

/// A signature's name: "SATURATION(65504)" -> "SATURATION".
std::string signature_name(const std::string& s) { return s.substr(0, s.find('(')); }

std::set<std::string> signature_names(const std::vector<std::string>& sigs) {
  std::set<std::string> out;
  for (const auto& s : sigs) out.insert(signature_name(s));
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string fmt(double v, const char* f = "%.4g") {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Seconds in a readable unit.
std::string time_text(double s) {
  if (!(s > 0)) return fmt(s);
  if (s < 1e-6) return fmt(s * 1e9, "%.3g") + " ns";
  if (s < 1e-3) return fmt(s * 1e6, "%.3g") + " us";
  if (s < 1) return fmt(s * 1e3, "%.3g") + " ms";
  return fmt(s, "%.3g") + " s";
}

/// Text for XML and HTML: & < > " ' as entities, control characters but tab
/// and newline as U+FFFD.
std::string escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') out += "\xEF\xBF\xBD";
        else out += ch;
    }
  }
  return out;
}

std::string case_name(const CaseDiff& c) { return c.contract + " × " + c.impl; }

/// Fills the run-level notes; returns whether outputs may be compared bit for bit.
bool compare_runs(const RunRecord& a, const RunRecord& b, DiffResult* d) {
  bool outputs = true;
  auto differs = [&](const char* what, const std::string& x, const std::string& y, bool breaks_outputs) {
    if (x == y) return;
    d->notes.push_back(std::string(what) + ": " + (x.empty() ? "(default)" : x) + " -> " + (y.empty() ? "(default)" : y) +
                       (breaks_outputs ? " (different inputs: output hashes are not compared)" : ""));
    if (breaks_outputs) outputs = false;
  };
  differs("seed", a.run.seed, b.run.seed, true);
  differs("--samples", a.run.samples, b.run.samples, true);
  differs("--config", a.run.config, b.run.config, true);
  differs("--sample", a.run.sample, b.run.sample, true);
  differs("--fast", a.run.fast ? "on" : "off", b.run.fast ? "on" : "off", false);
  differs("kc version", a.kc_version, b.kc_version, false);
  differs("host", a.host, b.host, false);
  std::map<std::string, const RecordBackend*> old_b;
  for (const auto& x : a.backends) old_b[x.name] = &x;
  for (const auto& y : b.backends) {
    auto it = old_b.find(y.name);
    if (it == old_b.end()) continue;
    const RecordBackend& x = *it->second;
    if (x.available != y.available)
      d->notes.push_back("backend " + y.name + ": " + (x.available ? "available" : "unavailable") + " -> " +
                         (y.available ? "available" : "unavailable (" + y.reason + ")"));
    else if (x.version != y.version)
      d->notes.push_back("backend " + y.name + ": " + x.version + " -> " + y.version);
  }
  return outputs;
}

void judge_latency(DiffResult* d, const DiffOptions& o) {
  std::vector<LatencyChange*> timed;
  for (auto& c : d->cases)
    if (c.latency) timed.push_back(&*c.latency);
  std::vector<double> pm, pk;
  for (auto* l : timed) {
    pm.push_back(l->mwu_p);
    pk.push_back(l->ks_p);
  }
  const std::vector<double> hm = stats::holm(pm), hk = stats::holm(pk);
  for (std::size_t k = 0; k < timed.size(); ++k) {
    LatencyChange& l = *timed[k];
    l.mwu_p_holm = hm[k];
    l.ks_p_holm = hk[k];
    if (l.mwu_p_holm < o.alpha) l.judgement = l.ratio > 1 ? "slower" : "faster";
    else if (l.ks_p_holm < o.alpha) l.judgement = "shape changed";
    else l.judgement = "unchanged";
  }
  d->latency_compared = timed.size();
}

void apply_fail_on(DiffResult* d, const FailOn& f) {
  for (auto& c : d->cases) {
    auto trip = [&](const std::string& rule, const std::string& why) {
      c.failed_on.push_back(rule);
      d->failures.push_back(rule + ": " + case_name(c) + ": " + why);
    };
    if (f.new_violation && c.change == "new_violation")
      trip("new-violation", join(c.new_signatures) + (c.old_verdict.empty() ? " (not in OLD)" : " (was " + c.old_verdict + ")"));
    if (f.new_error && c.change == "new_error")
      trip("new-error", c.old_verdict.empty() ? "not in OLD" : "was " + c.old_verdict);
    if (f.signature_change && c.change == "signature_change")
      trip("signature-change", join(c.old_signatures) + " -> " + join(c.new_signatures));
    if (f.output_change && c.output_changed) trip("output-change", "output hash changed");
    if (f.missing && c.new_verdict.empty() && judged(c.old_verdict))
      trip("missing", "judged (" + c.old_verdict + ") in OLD, absent from NEW");
    if (f.missing && judged(c.old_verdict) && !c.new_verdict.empty() && !judged(c.new_verdict))
      trip("missing", "judged (" + c.old_verdict + ") in OLD, " + c.new_verdict + " in NEW");
    if (f.ratio && c.compared_ratios && c.new_max > *f.ratio * c.old_max)
      trip("ratio:" + fmt(*f.ratio), c.metric + " max " + fmt(c.old_max) + " -> " + fmt(c.new_max));
    if (f.latency && c.latency && c.latency->judgement == "slower" && c.latency->ratio > *f.latency)
      trip("latency:" + fmt(*f.latency), "median " + time_text(c.latency->old_median) + " -> " +
                                             time_text(c.latency->new_median) + " (x" + fmt(c.latency->ratio, "%.3f") +
                                             ", 95% CI " + fmt(c.latency->ratio_low, "%.3f") + "-" +
                                             fmt(c.latency->ratio_high, "%.3f") + ")");
  }
}

}  // namespace

Result<FailOn> parse_fail_on(const std::string& text) {
  FailOn f;
  const std::string spec = text.empty() ? "new-violation,new-error" : text;
  std::stringstream ss(spec);
  std::string item;
  const std::string known =
      "new-violation, new-error, signature-change, output-change, missing, ratio:F, latency:R, none";
  while (std::getline(ss, item, ',')) {
    if (item == "new-violation") f.new_violation = true;
    else if (item == "new-error") f.new_error = true;
    else if (item == "signature-change") f.signature_change = true;
    else if (item == "output-change") f.output_change = true;
    else if (item == "missing") f.missing = true;
    else if (item == "none") continue;
    else if (item.rfind("ratio:", 0) == 0 || item.rfind("latency:", 0) == 0) {
      const std::string num = item.substr(item.find(':') + 1);
      char* end = nullptr;
      const double v = std::strtod(num.c_str(), &end);
      if (num.empty() || *end != '\0' || !(v >= 1) || !std::isfinite(v))
        return invalid_argument("--fail-on " + item + ": the factor must be a number >= 1 (e.g. latency:1.10)");
      (item[0] == 'r' ? f.ratio : f.latency) = v;
    } else {
      return invalid_argument("--fail-on: unknown rule '" + item + "' (" + known + ")");
    }
  }
  return f;
}

DiffResult diff_records(const RunRecord& a, const RunRecord& b, const DiffOptions& o) {
  DiffResult d;
  d.old_source = a.source;
  d.new_source = b.source;
  const bool outputs_comparable = compare_runs(a, b, &d);
  std::map<std::string, const RecordCase*> old_by, new_by;
  std::size_t old_dups = 0, new_dups = 0;
  for (const auto& c : a.cases) old_dups += old_by.emplace(c.key(), &c).second ? 0 : 1;
  for (const auto& c : b.cases) new_dups += new_by.emplace(c.key(), &c).second ? 0 : 1;
  if (old_dups + new_dups > 0)
    d.not_compared.push_back(std::to_string(old_dups) + " repeated contract × impl pairs in OLD and " +
                             std::to_string(new_dups) + " in NEW: only the first of each is compared");
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const auto& c : a.cases)
    if (seen.insert(c.key()).second) keys.push_back(c.key());
  for (const auto& c : b.cases)
    if (seen.insert(c.key()).second) keys.push_back(c.key());
  std::map<std::string, int> only_old, only_new;  // by contract
  std::size_t outputs_missing = 0;
  std::set<std::string> facts_noted;  // impls whose declared facts changed, noted once each
  for (const auto& key : keys) {
    const RecordCase* x = old_by.count(key) ? old_by[key] : nullptr;
    const RecordCase* y = new_by.count(key) ? new_by[key] : nullptr;
    CaseDiff c;
    const RecordCase& any = x ? *x : *y;
    c.contract = any.contract;
    c.impl = any.impl;
    c.backend = any.backend;
    if (x) {
      c.old_verdict = x->verdict;
      c.old_signatures = x->signatures;
    }
    if (y) {
      c.new_verdict = y->verdict;
      c.new_signatures = y->signatures;
    }
    if (!x || !y) {
      (x ? only_old : only_new)[c.contract]++;
      c.change = !x && c.new_verdict == "violation" ? "new_violation"
                 : !x && c.new_verdict == "error"   ? "new_error"
                 : x                                ? "missing"
                                                    : "added";
      d.cases.push_back(std::move(c));
      continue;
    }
    const std::string &ov = x->verdict, &nv = y->verdict;
    if (nv == "violation" && ov != "violation") c.change = "new_violation";
    else if (ov == "violation" && nv == "conforming") c.change = "fixed";
    else if (nv == "error" && ov != "error") c.change = "new_error";
    else if (ov == "error" && nv == "conforming") c.change = "error_gone";
    else if (ov != nv) c.change = "verdict_change";
    else if (ov == "violation" && signature_names(x->signatures) != signature_names(y->signatures))
      c.change = "signature_change";
    else c.change = "same";
    if (judged(ov) && !judged(nv))
      d.not_compared.push_back(case_name(c) + ": judged (" + ov + ") in OLD, " + nv + " in NEW: " + y->reason);
    else if (!judged(ov) && judged(nv))
      d.not_compared.push_back(case_name(c) + ": " + ov + " in OLD (" + x->reason + "), judged (" + nv + ") in NEW");
    if (x->facts != y->facts && facts_noted.insert(c.impl).second) {
      std::string changed;
      std::set<std::string> keys_of_both;
      for (const auto& [k, v] : x->facts) keys_of_both.insert(k);
      for (const auto& [k, v] : y->facts) keys_of_both.insert(k);
      for (const auto& k : keys_of_both) {
        const auto ox = x->facts.find(k), ny = y->facts.find(k);
        const std::string from = ox == x->facts.end() ? "(none)" : ox->second;
        const std::string to = ny == y->facts.end() ? "(none)" : ny->second;
        if (from != to) changed += (changed.empty() ? "" : ", ") + k + " " + from + " -> " + to;
      }
      d.notes.push_back("impl " + c.impl + ": declared " + changed);
    }
    c.contract_changed = !x->contract_hash.empty() && !y->contract_hash.empty() && x->contract_hash != y->contract_hash;
    if (c.contract_changed)
      d.notes.push_back(c.contract + ": the contract's text changed between the runs (hash " +
                        x->contract_hash.substr(0, 12) + " -> " + y->contract_hash.substr(0, 12) + ")");
    if (outputs_comparable && !x->output_hash.empty() && !y->output_hash.empty()) {
      c.compared_outputs = true;
      c.output_changed = x->output_hash != y->output_hash;
      ++d.output_compared;
      if (c.output_changed) ++d.output_changed;
    } else if (outputs_comparable && (x->output_hash.empty() != y->output_hash.empty())) {
      ++outputs_missing;
    }
    if (x->elements > 0 && y->elements > 0 && x->metric == y->metric) {
      c.compared_ratios = true;
      c.metric = x->metric;
      c.old_max = x->max;
      c.new_max = y->max;
      c.old_p50 = x->p50;
      c.new_p50 = y->p50;
    }
    if (x->timing && y->timing) {
      const auto &tx = *x->timing, &ty = *y->timing;
      if (tx.warm_s.size() >= 2 && ty.warm_s.size() >= 2 && tx.config == ty.config) {
        LatencyChange l;
        l.old_n = tx.warm_s.size();
        l.new_n = ty.warm_s.size();
        l.old_median = stats::median(tx.warm_s);
        l.new_median = stats::median(ty.warm_s);
        l.old_cold = tx.cold_s;
        l.new_cold = ty.cold_s;
        const auto m = stats::mann_whitney_u(tx.warm_s, ty.warm_s);
        const auto k = stats::ks_two_sample(tx.warm_s, ty.warm_s);
        l.mwu_u = m.statistic;
        l.mwu_p = m.p;
        l.ks_d = k.statistic;
        l.ks_p = k.p;
        const auto ci = stats::bootstrap_median_ratio(tx.warm_s, ty.warm_s, o.resamples, 0.95, o.seed);
        l.ratio = ci.estimate;
        l.ratio_low = ci.low;
        l.ratio_high = ci.high;
        c.latency = l;
      } else {
        d.not_compared.push_back(case_name(c) + ": latency not compared (" +
                                 (tx.config != ty.config ? "timed configs differ: " + tx.config + " vs " + ty.config
                                                         : std::string("fewer than 2 warm calls")) +
                                 ")");
      }
    } else if (x->timing || y->timing) {
      d.not_compared.push_back(case_name(c) + ": latency not compared (timed in " + (x->timing ? "OLD" : "NEW") +
                               " only; run both with --timing)");
    }
    d.cases.push_back(std::move(c));
  }
  for (const auto& [contract, n] : only_old)
    d.not_compared.push_back(contract + ": " + std::to_string(n) + (n == 1 ? " impl" : " impls") + " in OLD only");
  for (const auto& [contract, n] : only_new)
    d.not_compared.push_back(contract + ": " + std::to_string(n) + (n == 1 ? " impl" : " impls") + " in NEW only");
  if (outputs_missing > 0)
    d.not_compared.push_back(std::to_string(outputs_missing) +
                             " cases: an output hash in one record only (no call returned outputs in the other)");
  if (!outputs_comparable)
    d.not_compared.push_back("outputs: the runs' inputs differ (see the run differences); output hashes not compared");
  judge_latency(&d, o);
  apply_fail_on(&d, o.fail_on);
  return d;
}

// ---------------------------------------------------------------------------
// Rendering

namespace {

std::vector<const CaseDiff*> with_change(const DiffResult& d, const std::string& change) {
  std::vector<const CaseDiff*> out;
  for (const auto& c : d.cases)
    if (c.change == change) out.push_back(&c);
  return out;
}

/// Cases whose bound-ratio max or median moved by more than 1 % (or from 0).
std::vector<const CaseDiff*> ratio_shifts(const DiffResult& d) {
  std::vector<const CaseDiff*> out;
  auto moved = [](double a, double b) { return a != b && std::abs(b - a) > 0.01 * std::max(std::abs(a), std::abs(b)); };
  for (const auto& c : d.cases)
    if (c.compared_ratios && (moved(c.old_max, c.new_max) || moved(c.old_p50, c.new_p50))) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const CaseDiff* p, const CaseDiff* q) {
    auto shift = [](const CaseDiff* c) { return std::abs(std::log((c->new_max + 1e-300) / (c->old_max + 1e-300))); };
    return shift(p) > shift(q);
  });
  return out;
}

}  // namespace

std::string render_diff_text(const DiffResult& d) {
  std::ostringstream o;
  std::size_t both = 0, judged_both = 0;
  for (const auto& c : d.cases)
    if (!c.old_verdict.empty() && !c.new_verdict.empty()) {
      ++both;
      if (judged(c.old_verdict) && judged(c.new_verdict)) ++judged_both;
    }
  o << "kc diff " << d.old_source << " -> " << d.new_source << "\n";
  o << both << " cases in both records, " << judged_both << " judged in both\n";
  if (!d.notes.empty()) {
    o << "\nrun differences:\n";
    for (const auto& n : d.notes) o << "  " << n << "\n";
  }
  auto section = [&](const std::string& title, const std::string& change, bool show_old_sigs) {
    const auto v = with_change(d, change);
    if (v.empty()) return;
    o << "\n" << title << " (" << v.size() << "):\n";
    for (const CaseDiff* c : v) {
      o << "  " << case_name(*c) << ": " << (c->old_verdict.empty() ? "(absent)" : c->old_verdict) << " -> "
        << (c->new_verdict.empty() ? "(absent)" : c->new_verdict);
      if (show_old_sigs && !c->old_signatures.empty()) o << "  [" << join(c->old_signatures) << "]";
      if (!c->new_signatures.empty() && c->new_verdict == "violation")
        o << (show_old_sigs ? " -> [" : "  [") << join(c->new_signatures) << "]";
      o << "\n";
    }
  };
  section("new violations", "new_violation", false);
  section("fixed", "fixed", true);
  section("signature changes", "signature_change", true);
  section("new errors", "new_error", false);
  section("errors gone", "error_gone", false);
  section("other verdict changes", "verdict_change", true);
  section("in OLD only", "missing", false);
  section("in NEW only", "added", false);
  const auto shifts = ratio_shifts(d);
  if (!shifts.empty()) {
    o << "\nbound-ratio shifts (" << shifts.size() << " cases moved > 1%; max and p50, old -> new):\n";
    std::size_t shown = 0;
    for (const CaseDiff* c : shifts) {
      if (++shown > 30) {
        o << "  ... " << shifts.size() - 30 << " more (--format json lists every case)\n";
        break;
      }
      o << "  " << case_name(*c) << ": " << c->metric << " max " << fmt(c->old_max) << " -> " << fmt(c->new_max)
        << ", p50 " << fmt(c->old_p50) << " -> " << fmt(c->new_p50) << "\n";
    }
  }
  if (d.output_compared > 0) {
    o << "\noutputs: " << d.output_changed << " of " << d.output_compared << " cases changed bit for bit ("
      << fmt(100.0 * static_cast<double>(d.output_changed) / static_cast<double>(d.output_compared), "%.1f") << "%)\n";
    std::map<std::string, std::pair<int, int>> per_impl;
    for (const auto& c : d.cases)
      if (c.compared_outputs) {
        auto& p = per_impl[c.impl];
        ++p.second;
        if (c.output_changed) ++p.first;
      }
    for (const auto& [impl, p] : per_impl)
      if (p.first > 0) o << "  " << impl << ": " << p.first << " of " << p.second << "\n";
  }
  if (d.latency_compared > 0) {
    o << "\nlatency (" << d.latency_compared
      << " cases; Mann-Whitney U and Kolmogorov-Smirnov, Holm-adjusted over all of them; median new/old with "
         "bootstrap 95% CI;\n   the tests take each run's warm calls as independent samples: a difference in the machine's "
         "load between the runs\n   shows as a change too, so compare runs made on a quiet machine):\n";
    for (const auto& c : d.cases) {
      if (!c.latency) continue;
      const LatencyChange& l = *c.latency;
      o << "  " << case_name(c) << ": " << time_text(l.old_median) << " -> " << time_text(l.new_median) << "  x"
        << fmt(l.ratio, "%.3f") << " [" << fmt(l.ratio_low, "%.3f") << ", " << fmt(l.ratio_high, "%.3f")
        << "]  MWU p " << fmt(l.mwu_p_holm, "%.3g") << ", KS p " << fmt(l.ks_p_holm, "%.3g") << "  " << l.judgement
        << "  (cold " << time_text(l.old_cold) << " -> " << time_text(l.new_cold) << ")\n";
    }
  }
  if (!d.not_compared.empty()) {
    o << "\nnot compared (" << d.not_compared.size() << "):\n";
    for (const auto& n : d.not_compared) o << "  " << n << "\n";
  }
  o << "\n";
  if (d.failures.empty()) {
    o << "no regression beyond the --fail-on rules\n";
  } else {
    o << "REGRESSION (" << d.failures.size() << "):\n";
    for (const auto& f : d.failures) o << "  " << f << "\n";
  }
  return o.str();
}

std::string render_diff_json(const DiffResult& d) {
  JsonWriter w(2);
  w.begin_object();
  w.field("format", "kc-diff/1");
  w.field("old", d.old_source).field("new", d.new_source);
  w.field("regression", d.regression());
  w.key("failures").begin_array();
  for (const auto& f : d.failures) w.value(f);
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : d.notes) w.value(n);
  w.end_array();
  w.key("not_compared").begin_array();
  for (const auto& n : d.not_compared) w.value(n);
  w.end_array();
  w.key("outputs").begin_object();
  w.field("compared", d.output_compared).field("changed", d.output_changed);
  w.end_object();
  w.field("latency_compared", d.latency_compared);
  w.key("cases").begin_array();
  for (const auto& c : d.cases) {
    w.begin_object();
    w.field("contract", c.contract).field("impl", c.impl).field("backend", c.backend);
    w.field("change", c.change);
    w.field("old_verdict", c.old_verdict).field("new_verdict", c.new_verdict);
    w.key("old_signatures").begin_array();
    for (const auto& s : c.old_signatures) w.value(s);
    w.end_array();
    w.key("new_signatures").begin_array();
    for (const auto& s : c.new_signatures) w.value(s);
    w.end_array();
    w.field("contract_changed", c.contract_changed);
    w.key("output_changed");
    if (c.compared_outputs) w.value(c.output_changed);
    else w.null();
    w.key("bound_ratio");
    if (c.compared_ratios) {
      w.begin_object();
      w.field("metric", c.metric).field("old_max", c.old_max).field("new_max", c.new_max);
      w.field("old_p50", c.old_p50).field("new_p50", c.new_p50);
      w.end_object();
    } else {
      w.null();
    }
    w.key("latency");
    if (c.latency) {
      const LatencyChange& l = *c.latency;
      w.begin_object();
      w.field("old_n", l.old_n).field("new_n", l.new_n);
      w.field("old_median_s", l.old_median).field("new_median_s", l.new_median);
      w.field("old_cold_s", l.old_cold).field("new_cold_s", l.new_cold);
      w.field("median_ratio", l.ratio).field("ratio_ci95_low", l.ratio_low).field("ratio_ci95_high", l.ratio_high);
      w.field("mwu_u", l.mwu_u).field("mwu_p", l.mwu_p).field("mwu_p_holm", l.mwu_p_holm);
      w.field("ks_d", l.ks_d).field("ks_p", l.ks_p).field("ks_p_holm", l.ks_p_holm);
      w.field("judgement", l.judgement);
      w.end_object();
    } else {
      w.null();
    }
    w.key("failed_on").begin_array();
    for (const auto& f : c.failed_on) w.value(f);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

std::string render_diff_junit(const DiffResult& d) {
  int failures = 0, skipped = 0;
  for (const auto& c : d.cases) {
    if (!c.failed_on.empty()) ++failures;
    else if (c.old_verdict.empty() || c.new_verdict.empty()) ++skipped;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"kc diff\">\n  <testsuite name=\"kc diff\" tests=\"" + std::to_string(d.cases.size()) +
         "\" failures=\"" + std::to_string(failures) + "\" skipped=\"" + std::to_string(skipped) + "\">\n";
  for (const auto& c : d.cases) {
    out += "    <testcase classname=\"" + escape(c.contract) + "\" name=\"" + escape(c.impl) + "\">";
    const std::string detail = (c.old_verdict.empty() ? "(absent)" : c.old_verdict) + " -> " +
                               (c.new_verdict.empty() ? "(absent)" : c.new_verdict) +
                               (c.new_signatures.empty() ? "" : " [" + join(c.new_signatures) + "]");
    if (!c.failed_on.empty())
      out += "<failure message=\"" + escape(join(c.failed_on)) + "\">" + escape(c.change + ": " + detail) + "</failure>";
    else if (c.old_verdict.empty() || c.new_verdict.empty())
      out += "<skipped message=\"" + escape("not in both records: " + detail) + "\"/>";
    out += "</testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

namespace {

/// A log10 axis mapping [lo, hi] onto [a, b] pixels.
struct LogAxis {
  double lo, hi, a, b;
  double at(double v) const {
    const double l = std::log10(std::clamp(v, lo, hi));
    return a + (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (b - a);
  }
};

std::pair<double, double> log_range(const std::vector<double>& v) {
  double lo = 1e300, hi = 0;
  for (double x : v)
    if (x > 0 && std::isfinite(x)) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  if (hi <= 0) return {1e-3, 1};
  lo = std::pow(10, std::floor(std::log10(lo)));
  hi = std::pow(10, std::ceil(std::log10(hi)));
  if (hi <= lo) hi = lo * 10;
  return {lo, hi};
}

/// Old max bound ratio (x) against new (y), log-log, with the diagonal.
std::string ratio_scatter(const DiffResult& d) {
  std::vector<double> all;
  for (const auto& c : d.cases)
    if (c.compared_ratios) {
      all.push_back(c.old_max);
      all.push_back(c.new_max);
    }
  if (all.empty()) return "";
  const auto [lo, hi] = log_range(all);
  const LogAxis x{lo, hi, 50, 390}, y{lo, hi, 350, 10};
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"390\" role=\"img\">";
  s += "<rect x=\"50\" y=\"10\" width=\"340\" height=\"340\" fill=\"none\" stroke=\"#999\"/>";
  s += "<line x1=\"50\" y1=\"350\" x2=\"390\" y2=\"10\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>";
  if (lo < 1 && hi > 1)
    s += "<line x1=\"" + fmt(x.at(1)) + "\" y1=\"10\" x2=\"" + fmt(x.at(1)) + "\" y2=\"350\" stroke=\"#f99\"/>" +
         "<line x1=\"50\" y1=\"" + fmt(y.at(1)) + "\" x2=\"390\" y2=\"" + fmt(y.at(1)) + "\" stroke=\"#f99\"/>";
  for (const auto& c : d.cases) {
    if (!c.compared_ratios) continue;
    const bool bad = c.change == "new_violation" || !c.failed_on.empty();
    s += "<circle cx=\"" + fmt(x.at(c.old_max)) + "\" cy=\"" + fmt(y.at(c.new_max)) + "\" r=\"3\" fill=\"" +
         (bad ? "#dc2626" : "#2563eb") + "\" fill-opacity=\"0.6\"><title>" +
         escape(case_name(c) + ": " + fmt(c.old_max) + " -> " + fmt(c.new_max)) + "</title></circle>";
  }
  s += "<text x=\"50\" y=\"368\" font-size=\"11\">" + fmt(lo) + "</text><text x=\"370\" y=\"368\" font-size=\"11\">" +
       fmt(hi) + "</text><text x=\"150\" y=\"384\" font-size=\"12\">old max (metric / bound), log</text>";
  s += "<text x=\"12\" y=\"200\" font-size=\"12\" transform=\"rotate(-90 12 200)\">new max, log</text></svg>";
  return s;
}

/// Warm call times of one case: old (top row) and new (bottom row), log time axis, medians marked.
std::string latency_strip(const LatencyChange& l, const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  const auto [lo, hi] = log_range(all);
  const LogAxis x{lo, hi, 40, 560};
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"70\" role=\"img\">";
  auto row = [&](const std::vector<double>& v, double cy, double med, const char* color, const char* label) {
    s += std::string("<text x=\"2\" y=\"") + fmt(cy + 4) + "\" font-size=\"11\">" + label + "</text>";
    for (double t : v)
      s += "<circle cx=\"" + fmt(x.at(t)) + "\" cy=\"" + fmt(cy) + "\" r=\"2.5\" fill=\"" + color +
           "\" fill-opacity=\"0.5\"/>";
    s += "<line x1=\"" + fmt(x.at(med)) + "\" y1=\"" + fmt(cy - 8) + "\" x2=\"" + fmt(x.at(med)) + "\" y2=\"" +
         fmt(cy + 8) + "\" stroke=\"#111\" stroke-width=\"2\"/>";
  };
  row(a, 15, l.old_median, "#2563eb", "old");
  row(b, 40, l.new_median, "#dc2626", "new");
  s += "<text x=\"40\" y=\"66\" font-size=\"10\">" + escape(time_text(lo)) + "</text><text x=\"520\" y=\"66\" font-size=\"10\">" +
       escape(time_text(hi)) + "</text></svg>";
  return s;
}

}  // namespace

std::string render_diff_html(const DiffResult& d, const RunRecord& old_run, const RunRecord& new_run) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kc diff</title><style>"
                  "body{font-family:system-ui,sans-serif;margin:20px;max-width:1100px}"
                  "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;"
                  "font-size:13px;text-align:left}.bad{color:#b91c1c;font-weight:600}.good{color:#15803d}"
                  "</style></head><body>\n";
  h += "<h1>kc diff</h1><p>OLD <code>" + escape(d.old_source) + "</code> (" + escape(old_run.created) + ", " +
       escape(old_run.host) + ")<br>NEW <code>" + escape(d.new_source) + "</code> (" + escape(new_run.created) +
       ", " + escape(new_run.host) + ")</p>\n";
  h += d.failures.empty() ? "<p class=\"good\">No regression beyond the --fail-on rules.</p>\n"
                          : "<p class=\"bad\">Regression (" + std::to_string(d.failures.size()) + "):</p><ul>";
  for (const auto& f : d.failures) h += "<li>" + escape(f) + "</li>";
  if (!d.failures.empty()) h += "</ul>\n";
  if (!d.notes.empty()) {
    h += "<h2>Run differences</h2><ul>";
    for (const auto& n : d.notes) h += "<li>" + escape(n) + "</li>";
    h += "</ul>\n";
  }
  h += "<h2>Verdict changes</h2><table><tr><th>contract</th><th>impl</th><th>change</th><th>old</th><th>new</th></tr>";
  int changes = 0;
  for (const auto& c : d.cases) {
    if (c.change == "same") continue;
    ++changes;
    const bool bad = c.change == "new_violation" || c.change == "new_error" || !c.failed_on.empty();
    h += "<tr><td>" + escape(c.contract) + "</td><td>" + escape(c.impl) + "</td><td class=\"" +
         (bad ? "bad" : c.change == "fixed" ? "good" : "") + "\">" + escape(c.change) + "</td><td>" +
         escape(c.old_verdict + (c.old_signatures.empty() ? "" : " [" + join(c.old_signatures) + "]")) + "</td><td>" +
         escape(c.new_verdict + (c.new_signatures.empty() ? "" : " [" + join(c.new_signatures) + "]")) + "</td></tr>";
  }
  h += "</table>";
  if (changes == 0) h += "<p>None.</p>";
  h += "\n<h2>Bound ratio</h2><p>Worst judged metric over its bound per case, OLD against NEW (above the diagonal: "
       "worse; red lines: the bound).</p>" +
       ratio_scatter(d) + "\n";
  if (d.output_compared > 0)
    h += "<h2>Outputs</h2><p>" + std::to_string(d.output_changed) + " of " + std::to_string(d.output_compared) +
         " cases changed bit for bit.</p>\n";
  if (d.latency_compared > 0) {
    std::map<std::string, const RecordCase*> ob, nb;
    for (const auto& c : old_run.cases) ob.emplace(c.key(), &c);
    for (const auto& c : new_run.cases) nb.emplace(c.key(), &c);
    h += "<h2>Latency</h2><p>Warm calls; Mann&ndash;Whitney U and Kolmogorov&ndash;Smirnov p-values Holm-adjusted over " +
         std::to_string(d.latency_compared) + " cases; median ratio with a bootstrap 95% interval.</p>";
    for (const auto& c : d.cases) {
      if (!c.latency) continue;
      const LatencyChange& l = *c.latency;
      const std::string key = c.contract + "|" + c.impl;
      h += "<h3>" + escape(case_name(c)) + ": " + escape(l.judgement) + "</h3><p>median " +
           escape(time_text(l.old_median)) + " &rarr; " + escape(time_text(l.new_median)) + ", ratio " +
           fmt(l.ratio, "%.3f") + " [" + fmt(l.ratio_low, "%.3f") + ", " + fmt(l.ratio_high, "%.3f") + "], MWU p " +
           fmt(l.mwu_p_holm, "%.3g") + ", KS p " + fmt(l.ks_p_holm, "%.3g") + "</p>";
      h += latency_strip(l, ob[key]->timing->warm_s, nb[key]->timing->warm_s) + "\n";
    }
  }
  if (!d.not_compared.empty()) {
    h += "<h2>Not compared</h2><ul>";
    for (const auto& n : d.not_compared) h += "<li>" + escape(n) + "</li>";
    h += "</ul>\n";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace kc::report
