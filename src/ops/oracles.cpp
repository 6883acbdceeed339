// kc — the named-oracle table (kc/oracles.h): every `reference
// stable_algorithm NAME` and `reference spec NAME` kc can execute, one row
// per (name, op). The functions live with their ops (ops/named_oracles.h).
#include "kc/oracles.h"

#include <algorithm>
#include <cctype>

#include "ops/named_oracles.h"

namespace kc {
namespace {

using K = Reference::Kind;

constexpr const char* kMaxSub = "max-subtracted: m = max x, exp(x - m) summed left to right, FP64";

const std::vector<NamedOracle>& table() {
  static const std::vector<NamedOracle> rows = {
      // Stable algorithms (FP64, operation by operation).
      {K::kStableAlgorithm, "kahan_sum", "sum", "Kahan compensated summation in index order, FP64", ops::sum_kahan},
      {K::kStableAlgorithm, "max_subtraction", "log_softmax", kMaxSub, ops::log_softmax_max_subtraction},
      {K::kStableAlgorithm, "max_subtraction", "log_sum_exp", kMaxSub, ops::log_sum_exp_shifted},
      {K::kStableAlgorithm, "max_subtraction", "softmax", kMaxSub, ops::softmax_max_subtraction},
      {K::kStableAlgorithm, "pairwise_sum", "sum", "pairwise (recursive halving) summation, FP64", ops::sum_pairwise},
      {K::kStableAlgorithm, "shifted_logsumexp", "log_sum_exp", "m + log(sum exp(x - m)), m = max x, FP64",
       ops::log_sum_exp_shifted},
      {K::kStableAlgorithm, "two_pass_variance", "variance", "mean first, then the mean squared deviation, FP64",
       ops::variance_two_pass},
      {K::kStableAlgorithm, "welford_variance", "variance", "Welford's one-pass running mean and M2, FP64",
       ops::variance_welford},
      // Specs.
      {K::kSpec, "IEEE754-2019", "exp", "correctly rounded (MPFR), IEEE 754-2019 §9.2 special values exact",
       ops::exp_correctly_rounded, true},
      {K::kSpec, "IEEE754-2019", "log", "correctly rounded (MPFR), IEEE 754-2019 §9.2 special values exact",
       ops::log_correctly_rounded, true},
      {K::kSpec, "IEEE754-2019", "tanh", "correctly rounded (MPFR), IEEE 754-2019 §9.2 special values exact",
       ops::tanh_correctly_rounded, true},
      {K::kSpec, "byte_identity", "bpe_roundtrip", "decode(encode(x)) = x byte for byte (the op's oracle)"},
      {K::kSpec, "correctly_rounded", "erf", "correctly rounded (MPFR), erf(+-0) = +-0, erf(+-inf) = +-1 exact",
       ops::erf_correctly_rounded, true},
      {K::kSpec, "correctly_rounded", "exp", "correctly rounded (MPFR), special values exact",
       ops::exp_correctly_rounded, true},
      {K::kSpec, "correctly_rounded", "log", "correctly rounded (MPFR), special values exact",
       ops::log_correctly_rounded, true},
      {K::kSpec, "correctly_rounded", "tanh", "correctly rounded (MPFR), special values exact",
       ops::tanh_correctly_rounded, true},
      {K::kSpec, "declared_oob_policy", "embedding", "the impl's declared out-of-bounds policy (the op's oracle)"},
      {K::kSpec, "declared_oob_policy", "gather", "the impl's declared out-of-bounds policy (the op's oracle)"},
      {K::kSpec, "declared_oob_policy", "index_select", "the impl's declared out-of-bounds policy (the op's oracle)"},
      {K::kSpec, "declared_oob_policy", "scatter_add", "the impl's declared out-of-bounds policy (the op's oracle)"},
      {K::kSpec, "ranking_by_score", "prune_magnitude", "the lowest-scoring entries of each row zeroed (the op's oracle)"},
      {K::kSpec, "ranking_by_score", "prune_wanda", "the lowest-scoring entries of each row zeroed (the op's oracle)"},
  };
  return rows;
}

/// Lower case, with '-', '_' and blanks dropped: "Kahan-Sum" and "kahan sum"
/// are kahan_sum, "ieee754_2019" is IEEE754-2019.
std::string key(std::string_view s) {
  std::string k;
  for (char ch : s)
    if (ch != '-' && ch != '_' && !std::isspace(static_cast<unsigned char>(ch)))
      k += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return k;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

const char* kind_word(K kind) { return kind == K::kSpec ? "spec" : "stable_algorithm"; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::span<const NamedOracle> named_oracles() { return table(); }

std::vector<std::string> named_oracle_names(Reference::Kind kind) {
  std::vector<std::string> names;
  for (const NamedOracle& r : table())
    if (r.kind == kind && std::find(names.begin(), names.end(), r.name) == names.end()) names.emplace_back(r.name);
  return names;
}

const NamedOracle* find_named_oracle(Reference::Kind kind, std::string_view name, std::string_view op) {
  const std::string k = key(name);
  for (const NamedOracle& r : table())
    if (r.kind == kind && r.op == op && key(r.name) == k) return &r;
  return nullptr;
}

std::string named_oracle_error(Reference::Kind kind, std::string_view name, std::string_view op) {
  if (find_named_oracle(kind, name, op)) return {};
  const std::string k = key(name);
  std::vector<std::string> ops_of_name, names_for_op;
  std::string canonical;
  for (const NamedOracle& r : table()) {
    if (r.kind != kind) continue;
    if (key(r.name) == k) {
      canonical = r.name;
      ops_of_name.emplace_back(r.op);
    }
    if (r.op == op && std::find(names_for_op.begin(), names_for_op.end(), r.name) == names_for_op.end())
      names_for_op.emplace_back(r.name);
  }
  const std::string what = std::string(kind_word(kind)) + " ";
  const std::string for_op =
      names_for_op.empty() ? " (kc has no " + what + "oracle for " + std::string(op) + ")"
                           : " (for " + std::string(op) + ": " + join(names_for_op) + ")";
  if (!canonical.empty()) return what + canonical + " applies to " + join(ops_of_name) + ", not " + std::string(op) + for_op;
  // Unknown name: the nearest one of the op's names, else of every name.
  std::string best;
  std::size_t best_d = 0;
  auto consider = [&](const std::vector<std::string>& names) {
    for (const auto& n : names) {
      const std::size_t d = edit_distance(k, key(n));
      // Close: a few edits, or one name is the other's prefix ("kahan" for kahan_sum).
      const bool prefix = key(n).rfind(k, 0) == 0 || k.rfind(key(n), 0) == 0;
      if ((d <= std::max<std::size_t>(2, k.size() / 3) || (prefix && k.size() >= 4)) && (best.empty() || d < best_d)) {
        best = n;
        best_d = d;
      }
    }
  };
  consider(names_for_op);
  if (best.empty()) consider(named_oracle_names(kind));
  return "no " + what + "'" + std::string(name) + "'" + (best.empty() ? std::string() : " (did you mean " + best + "?)") +
         for_op;
}

bool is_policy_spec(std::string_view name) { return key(name) == key("IEEE754-2019"); }

bool built_with_mpfr() { return ops::have_mpfr(); }

}  // namespace kc
