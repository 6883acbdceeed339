// kc — the two-sample statistics `kc diff` judges latency with: Mann–Whitney U
// (normal approximation with tie and continuity correction), the two-sample
// Kolmogorov–Smirnov test (exact for small samples, asymptotic beyond), Holm's
// step-down correction, and a seeded bootstrap interval for a ratio of medians.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kc::report::stats {

/// Median (mean of the two middle values for an even count); 0 for no values.
double median(std::span<const double> v);
/// Quantile q in [0, 1] by linear interpolation between order statistics
/// (the "type 7" rule of R and numpy's default); 0 for no values.
double quantile(std::span<const double> v, double q);

/// Upper tail of the standard normal distribution, P(Z > z).
double normal_sf(double z);

struct TestResult {
  double statistic = 0;  ///< U of the first sample (MWU), D (KS)
  double p = 1;          ///< two-sided p-value
};

/// Mann–Whitney U, two-sided: U1 = R1 - n1(n1+1)/2 with mid-ranks for ties,
/// z = (|U1 - n1 n2/2| - 1/2) / sigma, sigma^2 = n1 n2/12 ((n+1) - sum(t^3-t)/(n(n-1))).
/// p = 1 when either sample is empty or every value is tied.
TestResult mann_whitney_u(std::span<const double> x, std::span<const double> y);

/// Two-sample Kolmogorov–Smirnov, two-sided: D = sup |F_x - F_y|. The p-value
/// P(D >= d) is exact (lattice paths, Hodges 1958) when n1 * n2 <= 10^6, else
/// the asymptotic Kolmogorov distribution at sqrt(n1 n2 / (n1 + n2)) d.
TestResult ks_two_sample(std::span<const double> x, std::span<const double> y);

/// Kolmogorov's limiting distribution's upper tail, Q(l) = 2 sum (-1)^(k-1) e^(-2 k^2 l^2).
double kolmogorov_sf(double lambda);

/// Holm's step-down adjusted p-values, in the input's order: sorted ascending,
/// p'(i) = max over j <= i of min(1, (m - j + 1) p(j)).
std::vector<double> holm(std::span<const double> p);

struct Interval {
  double estimate = 0, low = 0, high = 0;
};
/// median(y) / median(x) with a percentile bootstrap interval at `level`
/// (0.95): `resamples` draws of both samples with replacement, from a
/// generator seeded with `seed`, so the interval is the same on every run.
Interval bootstrap_median_ratio(std::span<const double> x, std::span<const double> y, int resamples = 2000,
                                double level = 0.95, std::uint64_t seed = 0x6b63);

}  // namespace kc::report::stats
