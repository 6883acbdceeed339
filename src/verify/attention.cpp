// kc — attention checked by sampled query rows (include/kc/verify.h, docs/verify.md).
//
// Attention's out = P V with P = softmax(scale Q K^T) row by row. P is not an
// output, so a Freivalds probe of P V would need P recomputed: O(seq^2 head_dim)
// per (batch, head), the kernel's own cost. What is cheap and exact is a
// sample of query rows: each row (b, h, t) is the oracle's row evaluation
// (ops::attention_row, O(seq head_dim)) and every element of it is judged
// against the bound the full check would apply to that element, so a sampled
// row gets the full check's verdict and ratios, bit for bit.
#include "kc/ops/attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kc/bound.h"
#include "kc/rng.h"
#include "kc/verify.h"

namespace kc::verify {

namespace {

/// `count` distinct values of [0, n), ascending: all of them when count >= n,
/// otherwise Floyd's sampling (count draws, no table of n entries).
std::vector<std::int64_t> distinct_sample(std::int64_t n, std::int64_t count, Rng& rng) {
  std::vector<std::int64_t> out;
  if (count >= n) {
    out.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = i;
    return out;
  }
  std::set<std::int64_t> chosen;
  for (std::int64_t j = n - count; j < n; ++j) {
    const std::int64_t r = rng.uniform_int(0, j);
    chosen.insert(chosen.count(r) ? j : r);
  }
  out.assign(chosen.begin(), chosen.end());
  return out;
}

/// Elements [first, first + count) of a tensor in logical (flat) order, as doubles.
void read_flat(const Tensor& t, std::int64_t first, std::int64_t count, std::vector<double>* out) {
  out->resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) (*out)[static_cast<std::size_t>(i)] = t.at(first + i);
}

bool same_shape(const Tensor& t, std::initializer_list<std::int64_t> dims) {
  return t.shape() == std::vector<std::int64_t>(dims);
}

}  // namespace

kc::Result<Result> verify_attention(const Call& inputs, const Call& outputs, Options options) {
  const auto start = std::chrono::steady_clock::now();
  if (inputs.op != "attention" || !inputs.has("q") || !inputs.has("k") || !inputs.has("v") || !outputs.has("out"))
    return invalid_argument("verify_attention needs an attention call with tensors q, k, v and out");
  if (options.samples <= 0) return invalid_argument("verify_attention needs samples > 0: sampled rows are the check");
  const Tensor& q = inputs.t("q");
  const Tensor& k = inputs.t("k");
  const Tensor& v = inputs.t("v");
  const Tensor& out = outputs.t("out");
  for (const Tensor* t : {&q, &k, &v, &out})
    if (!dtype_info(t->dtype()).is_float) return unimplemented("attention tensors must be floating point");
  if (q.rank() != 4 || k.rank() != 4) return invalid_argument("attention tensors are {batch, heads, seq, head_dim}");
  const ops::AttentionShape s = ops::attention_shape(inputs);
  if (s.kv_heads <= 0 || s.heads % s.kv_heads != 0 || !same_shape(k, {s.batch, s.kv_heads, s.seq, s.head_dim}) ||
      !same_shape(v, {s.batch, s.kv_heads, s.seq, s.head_dim}) || out.shape() != q.shape())
    return invalid_argument("attention shapes disagree: q " + q.shape_string() + ", k " + k.shape_string() + ", v " +
                            v.shape_string() + ", out " + out.shape_string());

  // The allowance of the contract's `bound E * |out|`: E = options.gamma (the
  // engine passes E evaluated for the call), or the model's gamma(L, P) with
  // the op's accumulation length L; u and underflow as the full check adds them.
  const auto op = ops::make_attention_op();
  const double factor = options.gamma > 0 ? options.gamma
                                          : model_gamma(options.model, op->accumulation_length(inputs),
                                                        options.precision, options.lambda);
  const BoundAllowance bound = bound_allowance(*op, inputs, factor);

  Result res;
  res.method = Method::kSampled;
  res.gamma = factor;
  const std::int64_t rows = s.batch * s.heads * s.seq;
  Rng rng(options.seed);
  const std::vector<std::int64_t> sampled = distinct_sample(rows, options.samples, rng);

  std::vector<double> k_head, v_head, q_row, ref(static_cast<std::size_t>(s.head_dim)),
      mag(static_cast<std::size_t>(s.head_dim));
  std::int64_t loaded = -1;      // b * kv_heads + g of the kv head in k_head / v_head
  std::int64_t loaded_rows = 0;  // its first rows held there (a causal row t reads rows 0..t)
  double worst_got = 0, worst_ref = 0, worst_allowed = 0;
  for (const std::int64_t row : sampled) {
    // Sampled rows ascend, so consecutive rows mostly share their kv head.
    const std::int64_t t = row % s.seq, h = (row / s.seq) % s.heads, b = row / (s.seq * s.heads);
    const std::int64_t g = s.kv_head(h), needed = s.causal ? t + 1 : s.seq;
    if (b * s.kv_heads + g != loaded || needed > loaded_rows) {
      loaded = b * s.kv_heads + g;
      loaded_rows = needed;
      read_flat(k, s.at(b, s.kv_heads, g, 0), needed * s.head_dim, &k_head);
      read_flat(v, s.at(b, s.kv_heads, g, 0), needed * s.head_dim, &v_head);
    }
    const std::int64_t at = s.at(b, s.heads, h, t);
    read_flat(q, at, s.head_dim, &q_row);
    ops::attention_row(s, t, q_row.data(), k_head.data(), v_head.data(), ref.data(), mag.data());
    bool row_failed = false;
    for (std::int64_t j = 0; j < s.head_dim; ++j) {
      const double r = ref[static_cast<std::size_t>(j)], m = mag[static_cast<std::size_t>(j)];
      if (!std::isfinite(r) || !std::isfinite(m))
        return unimplemented("a sampled row's reference is not finite (non-finite inputs): use the full oracle");
      const double got = out.at(at + j);
      const double allowed = options.bound_scale * bound.allowed(m, r);
      // As the full check's element ratio for a finite reference: NaN or Inf fails.
      const double err = std::fabs(got - r);
      double ratio = err == 0 ? 0 : (allowed > 0 ? err / allowed : std::numeric_limits<double>::infinity());
      if (std::isnan(ratio)) ratio = std::numeric_limits<double>::infinity();
      ++res.samples;
      if (ratio > 1) {
        ++res.failing_samples;
        row_failed = true;
      }
      if (ratio > res.sample_ratio || res.sample_worst_row < 0) {
        res.sample_ratio = ratio;
        res.sample_worst_row = row;
        res.sample_worst_col = j;
        worst_got = got;
        worst_ref = r;
        worst_allowed = allowed;
      }
    }
    if (row_failed) {
      ++res.failing_rows;
      if (static_cast<std::int64_t>(res.rows.size()) < options.max_rows_reported) res.rows.push_back(row);
    }
  }
  res.worst_ratio = res.sample_ratio;
  res.pass = !(res.sample_ratio > 1);

  char buf[320];
  const std::int64_t wr = std::max<std::int64_t>(res.sample_worst_row, 0);
  if (!res.pass) {
    std::snprintf(buf, sizeof buf,
                  "sampled rows: out(b %lld, h %lld, t %lld, j %lld) = %.9g, reference %.9g, allowed %.3g (ratio "
                  "%.3g); %lld of %lld sampled rows fail",
                  static_cast<long long>(wr / (s.seq * s.heads)), static_cast<long long>((wr / s.seq) % s.heads),
                  static_cast<long long>(wr % s.seq), static_cast<long long>(res.sample_worst_col), worst_got,
                  worst_ref, worst_allowed, res.sample_ratio, static_cast<long long>(res.failing_rows),
                  static_cast<long long>(sampled.size()));
  } else {
    std::snprintf(buf, sizeof buf, "pass: %lld of %lld query rows sampled (%lld elements), max ratio %.3g",
                  static_cast<long long>(sampled.size()), static_cast<long long>(rows),
                  static_cast<long long>(res.samples), res.sample_ratio);
  }
  res.detail = buf;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace kc::verify
