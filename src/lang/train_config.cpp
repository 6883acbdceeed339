// kc — training-configuration algebra (see kc/train_config.h).
#include "kc/train_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace kc::train {
namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Where a value lives, for diagnostics.
struct Where {
  int line = 0, column = 0;  // 1-based; 0 unknown
};

class Checker {
 public:
  Checker(std::string_view text, std::string_view file) : text_(text), file_(file), lines_(lines_of(text)) {}

  ConfigCheck run() {
    out_.file = std::string(file_);
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text_));
    } catch (const YAML::Exception& e) {
      error(mark(e.mark), "malformed YAML: " + e.msg);
      return std::move(out_);
    }
    if (!root || !root.IsMap()) {
      error(root ? mark(root.Mark()) : Where{1, 1}, "a training config is a map",
            "keys model, data, training, schedule, optimizer, checks");
      return std::move(out_);
    }
    read(root);
    out_.parsed = out_.diagnostics.empty();
    if (out_.parsed) judge();
    return std::move(out_);
  }

 private:
  // ---- diagnostics
  Where mark(const YAML::Mark& m) const { return {m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0}; }

  lang::Diagnostic diag(Where w, std::string message, std::string expected = {}, std::string suggestion = {}) const {
    lang::Diagnostic d;
    d.loc.file = std::string(file_);
    d.loc.line = w.line;
    d.loc.column = w.column;
    d.message = std::move(message);
    d.expected = std::move(expected);
    d.suggestion = std::move(suggestion);
    if (w.line >= 1 && w.line <= static_cast<int>(lines_.size())) d.line_text = lines_[w.line - 1];
    return d;
  }
  void error(Where w, std::string message, std::string expected = {}, std::string suggestion = {}) {
    out_.diagnostics.push_back(diag(w, std::move(message), std::move(expected), std::move(suggestion)));
  }
  void finding(const std::string& name, const std::string& key, std::string message) {
    auto it = where_.find(key);
    ConfigFinding f;
    f.name = name;
    f.diagnostic = diag(it == where_.end() ? Where{1, 1} : it->second, "[" + name + "] " + std::move(message));
    out_.findings.push_back(std::move(f));
  }

  // ---- reading
  struct Field {
    const char* key;
    bool required;
    bool integer;  // else a real number (or, for decay, a word)
  };

  void read(const YAML::Node& root) {
    static const std::map<std::string, std::vector<Field>> kSections = {
        {"model", {{"parameters", true, true}}},
        {"data", {{"sequences", true, true}, {"sequence_length", true, true}}},
        {"training",
         {{"batch_size", true, true},
          {"gradient_accumulation", false, true},
          {"epochs", true, true},
          {"max_steps", true, true},
          {"steps_per_epoch", false, true}}},
        {"schedule",
         {{"peak_lr", true, false},
          {"warmup_steps", false, true},
          {"warmup_fraction", false, false},
          {"decay", false, false},
          {"decay_steps", false, true},
          {"min_lr", false, false}}},
        {"optimizer",
         {{"name", false, false},
          {"lr", false, false},
          {"beta1", false, false},
          {"beta2", false, false},
          {"eps", false, false},
          {"weight_decay", false, false}}},
        {"checks", {{"min_tokens_per_parameter", false, false}}},
    };
    std::vector<std::string> section_names;
    for (const auto& [k, unused] : kSections) section_names.push_back(k);
    std::map<std::string, YAML::Node> sections;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      if (!kSections.count(key)) {
        error(mark(it->first.Mark()), "unknown section '" + key + "'", "one of: " + join(section_names),
              lang::nearest_word(key, section_names));
        continue;
      }
      if (!it->second.IsMap()) {
        error(mark(it->second.Mark()), "section '" + key + "' must be a map of keys to values");
        continue;
      }
      sections[key] = it->second;
      where_[key] = mark(it->first.Mark());
    }
    for (const auto& [name, fields] : kSections) {
      std::vector<std::string> names;
      for (const auto& f : fields) names.emplace_back(f.key);
      auto s = sections.find(name);
      if (s == sections.end()) {
        bool needed = false;
        for (const auto& f : fields) needed = needed || f.required;
        if (needed) error(Where{1, 1}, "missing section '" + name + "'", "keys " + join(names));
        continue;
      }
      for (auto it = s->second.begin(); it != s->second.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
        const Field* field = nullptr;
        for (const auto& f : fields)
          if (key == f.key) field = &f;
        if (!field) {
          error(mark(it->first.Mark()), "unknown key '" + key + "' in section '" + name + "'",
                "one of: " + join(names), lang::nearest_word(key, names));
          continue;
        }
        const std::string path = name + "." + key;
        where_[path] = mark(it->second.Mark());
        if (!it->second.IsScalar()) {
          error(mark(it->second.Mark()), path + " must be a single value");
          continue;
        }
        values_[path] = it->second.Scalar();
      }
      for (const auto& f : fields) {
        const std::string path = name + "." + f.key;
        if (f.required && !values_.count(path))
          error(where_[name], "section '" + name + "' has no '" + f.key + "'", "keys " + join(names));
      }
    }
    ConfigQuantities& q = out_.quantities;
    q.parameters = integer("model.parameters", 0, 1);
    q.sequences = integer("data.sequences", 0, 1);
    q.sequence_length = integer("data.sequence_length", 0, 1);
    q.batch_size = integer("training.batch_size", 0, 1);
    q.accumulation = integer("training.gradient_accumulation", 1, 1);
    q.epochs = integer("training.epochs", 0, 0);
    q.max_steps = integer("training.max_steps", 0, 1);
    q.warmup_steps = integer("schedule.warmup_steps", 0, 0);
    q.decay_steps = integer("schedule.decay_steps", q.max_steps, 0);
    q.peak_lr = real("schedule.peak_lr", 0);
    q.min_lr = real("schedule.min_lr", 0);
    q.min_tokens_per_parameter = real("checks.min_tokens_per_parameter", 10);
    if (auto it = values_.find("schedule.decay"); it != values_.end()) {
      const std::vector<std::string> kinds = {"cosine", "linear", "constant"};
      if (std::find(kinds.begin(), kinds.end(), it->second) == kinds.end())
        error(where_["schedule.decay"], "unknown decay '" + it->second + "'", "one of: cosine, linear, constant",
              lang::nearest_word(it->second, kinds));
      else
        q.decay = it->second;
    }
    q.warmup_fraction = real("schedule.warmup_fraction", -1);
    q.optimizer = sections.count("optimizer") > 0;
    q.beta1 = real("optimizer.beta1", 0.9);
    q.beta2 = real("optimizer.beta2", 0.999);
    q.eps = real("optimizer.eps", 1e-8);
    q.weight_decay = real("optimizer.weight_decay", 0.01);
    if (auto it = values_.find("optimizer.name"); it != values_.end()) {
      const std::vector<std::string> kinds = {"adamw"};
      if (std::find(kinds.begin(), kinds.end(), it->second) == kinds.end())
        error(where_["optimizer.name"], "unknown optimizer '" + it->second + "'", "one of: adamw",
              lang::nearest_word(it->second, kinds));
    }
    if (q.peak_lr <= 0 && values_.count("schedule.peak_lr"))
      error(where_["schedule.peak_lr"], "schedule.peak_lr must be > 0");
    if (q.min_lr < 0) error(where_["schedule.min_lr"], "schedule.min_lr must be >= 0");
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }

  /// An integer value >= lo, or `fallback` when absent (an error when malformed).
  std::int64_t integer(const std::string& path, std::int64_t fallback, std::int64_t lo) {
    auto it = values_.find(path);
    if (it == values_.end()) return fallback;
    const std::string& s = it->second;
    std::int64_t v = 0;
    std::size_t used = 0;
    bool ok = !s.empty();
    try {
      v = std::stoll(s, &used, 10);
      ok = ok && used == s.size();
    } catch (...) {
      ok = false;
    }
    if (!ok) {
      // 2e6 and 2_000_000 are common spellings; an integral real is accepted.
      std::string t;
      for (char c : s)
        if (c != '_') t += c;
      char* end = nullptr;
      const double d = std::strtod(t.c_str(), &end);
      if (!t.empty() && end == t.c_str() + t.size() && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) {
        v = static_cast<std::int64_t>(d);
        ok = true;
      }
    }
    if (!ok) {
      error(where_[path], path + " must be an integer, got '" + s + "'");
      return fallback;
    }
    if (v < lo) {
      error(where_[path], path + " must be >= " + std::to_string(lo) + ", got " + std::to_string(v));
      return fallback;
    }
    return v;
  }

  double real(const std::string& path, double fallback) {
    auto it = values_.find(path);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    const double d = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || end != it->second.c_str() + it->second.size() || !std::isfinite(d)) {
      error(where_[path], path + " must be a number, got '" + it->second + "'");
      return fallback;
    }
    return d;
  }

  // ---- the algebra
  void judge() {
    ConfigQuantities& q = out_.quantities;
    judge_warmup_fraction();
    // floor(floor(s / b) / a) = floor(s / (b a)) for positive integers.
    q.steps_per_epoch = q.sequences / q.batch_size / q.accumulation;
    q.steps_run = std::min<std::int64_t>(q.max_steps, q.epochs * q.steps_per_epoch);
    q.tokens = static_cast<double>(q.steps_run) * static_cast<double>(q.batch_size) *
               static_cast<double>(q.accumulation) * static_cast<double>(q.sequence_length);
    q.max_lr_reached = 0;
    if (q.steps_run > 0) {
      // The schedule rises through warmup and never rises after it: its
      // maximum over the run is at the last warmup step run (or step 0).
      const std::int64_t t = std::min<std::int64_t>(q.steps_run, std::max<std::int64_t>(q.warmup_steps, 1)) - 1;
      q.max_lr_reached = std::max(scheduled_lr(q, t), scheduled_lr(q, 0));
    }

    if (values_.count("training.steps_per_epoch")) {
      const std::int64_t stated = integer("training.steps_per_epoch", 0, 0);
      if (stated != q.steps_per_epoch)
        finding("STEPS_PER_EPOCH_MISMATCH", "training.steps_per_epoch",
                "steps_per_epoch is stated as " + std::to_string(stated) + " but floor(sequences / batch_size / "
                "gradient_accumulation) = floor(" + std::to_string(q.sequences) + " / " + std::to_string(q.batch_size) +
                    " / " + std::to_string(q.accumulation) + ") = " + std::to_string(q.steps_per_epoch));
    }
    if (q.steps_per_epoch == 0) {
      finding("EMPTY_EPOCH", "training.batch_size",
              "an epoch of " + std::to_string(q.sequences) + " sequences holds no optimizer step of batch_size x "
              "gradient_accumulation = " + std::to_string(q.batch_size * q.accumulation) + " sequences");
    } else if (q.epochs * q.steps_per_epoch < q.max_steps) {
      const std::int64_t need = (q.max_steps + q.steps_per_epoch - 1) / q.steps_per_epoch;
      finding("TOO_FEW_EPOCHS", "training.epochs",
              "epochs = " + std::to_string(q.epochs) + " gives " + std::to_string(q.epochs) + " x " +
                  std::to_string(q.steps_per_epoch) + " = " + std::to_string(q.epochs * q.steps_per_epoch) +
                  " optimizer steps, fewer than max_steps = " + std::to_string(q.max_steps) +
                  "; the data runs out first (needs epochs >= " + std::to_string(need) + ")");
    }
    if (q.warmup_steps > q.max_steps) {
      finding("WARMUP_INCOMPLETE", "schedule.warmup_steps",
              "warmup_steps = " + std::to_string(q.warmup_steps) + " does not complete within max_steps = " +
                  std::to_string(q.max_steps));
    }
    if (q.max_lr_reached < q.peak_lr * (1 - 1e-12) || q.peak_lr <= q.min_lr) {
      const std::string why =
          q.peak_lr <= q.min_lr
              ? "peak_lr = " + fmt_g(q.peak_lr) + " is not above min_lr = " + fmt_g(q.min_lr)
              : "the schedule tops out at " + fmt_g(q.max_lr_reached) + " after the " + std::to_string(q.steps_run) +
                    " steps run, below peak_lr = " + fmt_g(q.peak_lr) + " (warmup_steps = " +
                    std::to_string(q.warmup_steps) + ")";
      finding("PEAK_LR_NOT_REACHED", q.peak_lr <= q.min_lr ? "schedule.peak_lr" : "schedule.warmup_steps", why);
    }
    judge_optimizer();
    const double need_tokens = q.min_tokens_per_parameter * static_cast<double>(q.parameters);
    if (q.tokens < need_tokens) {
      finding("TOO_FEW_TOKENS", "model.parameters",
              "the run sees " + fmt_g(q.tokens) + " tokens (" + std::to_string(q.steps_run) + " steps x " +
                  std::to_string(q.batch_size * q.accumulation) + " sequences x " + std::to_string(q.sequence_length) +
                  " tokens), fewer than " + fmt_g(q.min_tokens_per_parameter) + " x " + std::to_string(q.parameters) +
                  " parameters = " + fmt_g(need_tokens));
    }
  }

  // The warmup fraction f (transformers' warmup_ratio): warmup lasts
  // ceil(f max_steps) steps. f >= 1 never leaves warmup within the run (the
  // peak lr is reached at the last step at best); f < 0 is no fraction. Alone,
  // f sets warmup_steps for the rules below; with warmup_steps, one of the two
  // is not what the trainer uses, so they must agree.
  void judge_warmup_fraction() {
    ConfigQuantities& q = out_.quantities;
    if (!values_.count("schedule.warmup_fraction")) return;
    const double f = q.warmup_fraction;
    if (!(f >= 0 && f < 1)) {
      finding("WARMUP_FRACTION_OUT_OF_RANGE", "schedule.warmup_fraction",
              "warmup_fraction = " + fmt_g(f) + " is not in [0, 1): " +
                  (f >= 1 ? "warmup never ends within max_steps" : "a negative fraction of the run"));
      return;
    }
    const auto steps = static_cast<std::int64_t>(std::ceil(f * static_cast<double>(q.max_steps)));
    if (values_.count("schedule.warmup_steps")) {
      if (steps != q.warmup_steps)
        finding("WARMUP_FRACTION_MISMATCH", "schedule.warmup_fraction",
                "warmup_fraction = " + fmt_g(f) + " gives ceil(" + fmt_g(f) + " x " + std::to_string(q.max_steps) +
                    ") = " + std::to_string(steps) + " warmup steps, but warmup_steps = " +
                    std::to_string(q.warmup_steps) + "; state one of them");
      return;
    }
    q.warmup_steps = steps;
    where_["schedule.warmup_steps"] = where_["schedule.warmup_fraction"];
  }

  // What reaches AdamW: the schedule's lr (an optimizer.lr beside it is
  // overridden by the scheduler and never used), betas in [0, 1) (beta = 1
  // freezes the moment at its initial zero and makes the bias correction
  // 1 - beta^t zero, a division by 0; beta > 1 grows without bound), eps > 0
  // (a parameter whose gradient is 0 gets 0 / (0 + eps); eps = 0 makes it
  // 0 / 0 = NaN), and the decoupled decay factor 1 - lr wd in (0, 1] (wd < 0
  // grows every weight; lr wd >= 1 zeroes or flips every weight each step).
  void judge_optimizer() {
    ConfigQuantities& q = out_.quantities;
    if (!q.optimizer) return;
    if (values_.count("optimizer.lr")) {
      const double lr = real("optimizer.lr", q.peak_lr);
      if (std::fabs(lr - q.peak_lr) > 1e-12 * std::max(std::fabs(lr), std::fabs(q.peak_lr)))
        finding("OPTIMIZER_LR_MISMATCH", "optimizer.lr",
                "optimizer.lr = " + fmt_g(lr) + " differs from schedule.peak_lr = " + fmt_g(q.peak_lr) +
                    ": the schedule sets the optimizer's lr every step, so this value never reaches it");
    }
    for (const char* k : {"beta1", "beta2"}) {
      const double b = std::string(k) == "beta1" ? q.beta1 : q.beta2;
      if (b >= 0 && b < 1) continue;
      finding("BETA_OUT_OF_RANGE", std::string("optimizer.") + k,
              std::string(k) + " = " + fmt_g(b) + " is not in [0, 1): " +
                  (b >= 1 ? "the bias correction 1 - " + std::string(k) + "^t is " + (b == 1 ? "0" : "negative") +
                                " and the moment never forgets"
                          : "a negative decay alternates the moment's sign"));
    }
    if (!(q.eps > 0))
      finding("EPS_NOT_POSITIVE", "optimizer.eps",
              "eps = " + fmt_g(q.eps) + ": a parameter whose gradient is 0 gets the update 0 / (0 + eps), NaN at eps = 0");
    const double factor = 1 - q.peak_lr * q.weight_decay;
    if (q.weight_decay < 0)
      finding("DECAY_FACTOR_OUT_OF_RANGE", "optimizer.weight_decay",
              "weight_decay = " + fmt_g(q.weight_decay) + " < 0: every step multiplies each weight by 1 - lr wd = " +
                  fmt_g(factor) + " > 1");
    else if (!(factor > 0))
      finding("DECAY_FACTOR_OUT_OF_RANGE", "optimizer.weight_decay",
              "peak_lr x weight_decay = " + fmt_g(q.peak_lr) + " x " + fmt_g(q.weight_decay) + " = " +
                  fmt_g(q.peak_lr * q.weight_decay) + " >= 1: the decay factor 1 - lr wd = " + fmt_g(factor) +
                  " zeroes or flips every weight each step");
  }

  std::string_view text_;
  std::string_view file_;
  std::vector<std::string> lines_;
  ConfigCheck out_;
  std::map<std::string, Where> where_;        // section or section.key -> position of the value
  std::map<std::string, std::string> values_;  // section.key -> scalar text
};

}  // namespace

double scheduled_lr(const ConfigQuantities& q, std::int64_t t) {
  if (t < q.warmup_steps)
    return q.peak_lr * static_cast<double>(t + 1) / static_cast<double>(q.warmup_steps);
  if (q.decay == "constant") return q.peak_lr;
  const double span = static_cast<double>(q.decay_steps - q.warmup_steps);
  const double p = span <= 0 ? 1.0 : std::clamp(static_cast<double>(t - q.warmup_steps) / span, 0.0, 1.0);
  if (q.decay == "linear") return q.peak_lr - (q.peak_lr - q.min_lr) * p;
  return q.min_lr + (q.peak_lr - q.min_lr) * 0.5 * (1 + std::cos(M_PI * p));
}

int ConfigCheck::exit_code() const {
  if (!parsed) return 2;
  return findings.empty() ? 0 : 1;
}

std::string ConfigCheck::render() const {
  std::ostringstream out;
  for (const auto& d : diagnostics) out << d.render() << "\n";
  if (!parsed) return out.str();
  for (const auto& f : findings) out << f.diagnostic.render() << "\n";
  const ConfigQuantities& q = quantities;
  out << file << ": steps/epoch " << q.steps_per_epoch << " = floor(" << q.sequences << " / " << q.batch_size << " / "
      << q.accumulation << "); steps run " << q.steps_run << " of max_steps " << q.max_steps << "; tokens "
      << fmt_g(q.tokens) << " = " << fmt_g(q.parameters > 0 ? q.tokens / static_cast<double>(q.parameters) : 0)
      << " x parameters; peak lr " << fmt_g(q.max_lr_reached) << " of " << fmt_g(q.peak_lr) << "\n";
  if (q.optimizer)
    out << file << ": AdamW lr " << fmt_g(q.peak_lr) << " (the schedule's), betas (" << fmt_g(q.beta1) << ", "
        << fmt_g(q.beta2) << "), eps " << fmt_g(q.eps) << ", weight_decay " << fmt_g(q.weight_decay)
        << ", decay factor " << fmt_g(1 - q.peak_lr * q.weight_decay) << "; warmup " << q.warmup_steps << " steps\n";
  out << (findings.empty() ? "config ok: every obligation holds\n"
                           : std::to_string(findings.size()) + " obligation(s) fail\n");
  return out.str();
}

ConfigCheck check_train_config(std::string_view text, std::string_view file_name) {
  return Checker(text, file_name).run();
}

ConfigCheck check_train_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigCheck c;
    c.file = path;
    lang::Diagnostic d;
    d.loc.file = path;
    d.message = "cannot read training config '" + path + "'";
    c.diagnostics.push_back(d);
    return c;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return check_train_config(ss.str(), path);
}

}  // namespace kc::train
