// kc — two-sample statistics for `kc diff` (stats.h).
#include "report/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "kc/rng.h"

namespace kc::report::stats {

double median(std::span<const double> v) { return quantile(v, 0.5); }

double quantile(std::span<const double> v, double q) {
  if (v.empty()) return 0;
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  const double h = (static_cast<double>(s.size()) - 1) * std::clamp(q, 0.0, 1.0);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (h - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

TestResult mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  const std::size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return {};
  // Pool, sort, give tied values their mid-rank, and sum the first sample's ranks.
  std::vector<std::pair<double, int>> all;
  all.reserve(n);
  for (double v : x) all.emplace_back(v, 0);
  for (double v : y) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double r1 = 0, tie_sum = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // mid-rank of ranks i+1..j
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second == 0) r1 += rank;
    tie_sum += t * t * t - t;
    i = j;
  }
  const double a = static_cast<double>(n1), b = static_cast<double>(n2), nn = static_cast<double>(n);
  TestResult r;
  r.statistic = r1 - a * (a + 1) / 2;
  const double mu = a * b / 2;
  const double var = a * b / 12 * ((nn + 1) - (n > 1 ? tie_sum / (nn * (nn - 1)) : 0));
  if (!(var > 0)) return {r.statistic, 1};  // every value tied: no evidence either way
  const double z = (std::abs(r.statistic - mu) - 0.5) / std::sqrt(var);
  r.p = std::min(1.0, 2 * normal_sf(z));
  return r;
}

double kolmogorov_sf(double lambda) {
  if (lambda <= 0) return 1;
  if (lambda < 0.2) return 1;  // the series converges slowly here; Q is 1 to 1e-12
  double sum = 0;
  for (int k = 1; k <= 200; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    sum += (k % 2 == 1 ? term : -term);
    if (term < 1e-17) break;
  }
  return std::clamp(2 * sum, 0.0, 1.0);
}

TestResult ks_two_sample(std::span<const double> x, std::span<const double> y) {
  const auto n1 = static_cast<std::int64_t>(x.size()), n2 = static_cast<std::int64_t>(y.size());
  if (n1 == 0 || n2 == 0) return {};
  std::vector<double> a(x.begin(), x.end()), b(y.begin(), y.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  // D scaled by n1 n2, exactly: |i n2 - j n1| after every copy of a value is taken.
  std::int64_t i = 0, j = 0, dnum = 0;
  while (i < n1 || j < n2) {
    const double v = (j >= n2 || (i < n1 && a[static_cast<std::size_t>(i)] <= b[static_cast<std::size_t>(j)]))
                         ? a[static_cast<std::size_t>(i)]
                         : b[static_cast<std::size_t>(j)];
    while (i < n1 && a[static_cast<std::size_t>(i)] == v) ++i;
    while (j < n2 && b[static_cast<std::size_t>(j)] == v) ++j;
    dnum = std::max<std::int64_t>(dnum, std::llabs(i * n2 - j * n1));
  }
  TestResult r;
  r.statistic = static_cast<double>(dnum) / static_cast<double>(n1 * n2);
  if (dnum == 0) {
    r.p = 1;
  } else if (n1 * n2 <= 1000000) {
    // P(D >= d), exactly: every monotone lattice path from (0,0) to (n1,n2) is
    // equally likely; sum, over the points where a path first reaches
    // |i n2 - j n1| >= dnum, the share of paths that do so there. A cell holds
    // the paths reaching it without touching the boundary before, divided by
    // C(i+j, i) so it stays in [0, 1]; the share of all paths through it is
    // that times C(i+j, i) C(N-i-j, n1-i) / C(N, n1). Summing the small
    // probabilities directly keeps tiny p-values (2 / C(60, 30)) exact, where
    // 1 - P(D < d) would round to 0.
    auto lchoose = [](std::int64_t n, std::int64_t k) {
      return std::lgamma(static_cast<double>(n + 1)) - std::lgamma(static_cast<double>(k + 1)) -
             std::lgamma(static_cast<double>(n - k + 1));
    };
    const std::int64_t total = n1 + n2;
    const double lall = lchoose(total, n1);
    std::vector<double> row(static_cast<std::size_t>(n2 + 1), 0.0);
    double p = 0;
    for (std::int64_t ii = 0; ii <= n1; ++ii) {
      for (std::int64_t jj = 0; jj <= n2; ++jj) {
        double& cell = row[static_cast<std::size_t>(jj)];
        if (ii == 0 && jj == 0) {
          cell = 1;
          continue;
        }
        const double up = ii > 0 ? cell * static_cast<double>(ii) / static_cast<double>(ii + jj) : 0;
        const double left =
            jj > 0 ? row[static_cast<std::size_t>(jj - 1)] * static_cast<double>(jj) / static_cast<double>(ii + jj) : 0;
        cell = up + left;
        if (std::llabs(ii * n2 - jj * n1) >= dnum) {
          if (cell > 0) p += cell * std::exp(lchoose(ii + jj, ii) + lchoose(total - ii - jj, n1 - ii) - lall);
          cell = 0;  // absorbed: counted once, where it first reached the boundary
        }
      }
    }
    r.p = std::clamp(p, 0.0, 1.0);
  } else {
    const double en = std::sqrt(static_cast<double>(n1) * static_cast<double>(n2) / static_cast<double>(n1 + n2));
    r.p = kolmogorov_sf(en * r.statistic);
  }
  return r;
}

std::vector<double> holm(std::span<const double> p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> order(m);
  for (std::size_t k = 0; k < m; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 0;
  for (std::size_t k = 0; k < m; ++k) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - k) * p[order[k]]));
    out[order[k]] = running;
  }
  return out;
}

Interval bootstrap_median_ratio(std::span<const double> x, std::span<const double> y, int resamples, double level,
                                std::uint64_t seed) {
  Interval r;
  const double mx = median(x);
  if (x.empty() || y.empty() || !(mx > 0)) return r;
  r.estimate = r.low = r.high = median(y) / mx;
  if (resamples <= 0) return r;
  Rng rng(seed);
  std::vector<double> ratios, bx(x.size()), by(y.size());
  ratios.reserve(static_cast<std::size_t>(resamples));
  auto draw = [&](std::span<const double> from, std::vector<double>& into) {
    for (double& v : into) v = from[static_cast<std::size_t>(rng.next_u64() % from.size())];
  };
  for (int k = 0; k < resamples; ++k) {
    draw(x, bx);
    draw(y, by);
    const double m = median(bx);
    if (m > 0) ratios.push_back(median(by) / m);
  }
  const double tail = (1 - level) / 2;
  r.low = quantile(ratios, tail);
  r.high = quantile(ratios, 1 - tail);
  return r;
}

}  // namespace kc::report::stats
