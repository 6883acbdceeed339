// kc — calibration trio for the bf16 GEMM contract (KC-GEMM-BF16-01): bf16
// operands and result, the accumulator declared FP32.
//   baseline  multiplies by B transposed: wrong on any test;
//   bad       sums blocks of 64 products in FP32 and adds the block partials
//             in bf16 (8 significant bits): one block, so right, at the visible
//             test's K = 64; beyond FP32 accumulation plus one rounding to bf16
//             at K = 256;
//   good      one FP32 accumulator over K, rounded to bf16 once.
// KC-GEMM-BF16-02 (the accumulator_bits probe) has its own bad impl: a K > 64
// path that keeps the running sum in bf16, declared FP32.
//
// And the trios of the low-precision attention contracts (contracts/lowprec/
// KC-ATTN-LP.kc): bf16, FP16, FP8 E4M3 and FP8 E5M2 q, k, v and out (the
// contracts choose which), the accumulator declared
// FP32, every kernel an online softmax over blocks of 16 keys (FlashAttention's
// inner loop) unless it says otherwise:
//   baseline  drops the 1/sqrt(head_dim) score scale: wrong on any test;
//   bad (NUM) keeps the output accumulator in the storage format between key
//             blocks (bf16 registers): within 1e-2 at the visible test, beyond
//             the FP32 bound on most samples;
//   bad (NUM, FP16) keeps the output accumulator in bf16 between key blocks
//             whatever the storage format: an FP16 kernel's accumulator
//             rounded to FP16 stays inside the FP32 bound on most samples
//             (the bound's attention term exceeds one FP16 rounding), one
//             rounded to bf16 does not;
//   bad (SHAPE) a 16-wide score loop without its remainder: exact at head_dim
//             64, wrong at 63, 65, 127, ...;
//   bad (DET) splits the keys into 4 chunks and merges the chunks' partial
//             results in an order that changes from call to call;
//   good      FP32 scores, softmax and accumulator, one rounding of out.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "calibration/calibration_backend.h"
#include "kc/ops/attention.h"

namespace kc::calibration {
namespace {

enum class Bf16Gemm { kTransposedB, kBf16BlockPartials, kLongKBf16Acc, kFp32 };

constexpr std::int64_t kBlock = 64;  // one block at the default K = 64: exact there

Status bf16_gemm(Call& call, Bf16Gemm variant) {
  if (call.get("trans_a", "N") != "N" || call.get("trans_b", "N") != "N")
    return unimplemented("calibration GEMMs take untransposed operands only");
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  if (a.dtype() != DType::kBF16) return unimplemented("this calibration GEMM is bf16 only");
  const std::int64_t m = call.get_int("M", 64), n = call.get_int("N", 64), k = call.get_int("K", 64);
  const std::int64_t lda = a.strides()[0], ldb = b.strides()[0], ldc = c.strides()[0];
  const auto alpha = static_cast<float>(call.get_double("alpha", 1));
  const auto beta = static_cast<float>(call.get_double("beta", 0));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      auto a_at = [&](std::int64_t p) { return static_cast<float>(a.at(i * lda + p)); };
      auto b_at = [&](std::int64_t p) {
        return static_cast<float>(variant == Bf16Gemm::kTransposedB && p < n && j < k ? b.at(j * ldb + p)
                                                                                        : b.at(p * ldb + j));
      };
      float acc = 0;
      if (variant == Bf16Gemm::kBf16BlockPartials) {
        for (std::int64_t p0 = 0; p0 < k; p0 += kBlock) {
          float block = 0;
          for (std::int64_t p = p0; p < std::min(k, p0 + kBlock); ++p) block += a_at(p) * b_at(p);
          acc = static_cast<float>(round_to(acc + block, DType::kBF16));
        }
      } else if (variant == Bf16Gemm::kLongKBf16Acc && k > kBlock) {
        // The long-K path keeps its running sum in bf16 registers.
        for (std::int64_t p = 0; p < k; ++p) acc = static_cast<float>(round_to(acc + a_at(p) * b_at(p), DType::kBF16));
      } else {
        for (std::int64_t p = 0; p < k; ++p) acc += a_at(p) * b_at(p);
      }
      const std::int64_t at = i * ldc + j;
      const float out = beta == 0 ? alpha * acc : alpha * acc + beta * static_cast<float>(c.at(at));
      c.set(at, out);  // rounds to bf16 once
    }
  return ok_status();
}

Declaration bf16_decl(const char* name, const char* description) {
  Declaration d = calib_decl(name, "matmul", description);
  d.dtypes = {DType::kBF16};
  d.accumulator = DType::kF32;
  return d;
}

enum class LpAttention { kUnscaled, kStorageAccumulator, kBf16Accumulator, kNoRemainder, kUnorderedMerge, kFp32 };

constexpr std::int64_t kKeyBlock = 16;
constexpr std::int64_t kChunks = 4;  // kUnorderedMerge: key chunks merged in a per-call order

/// One query row's online softmax over keys [u0, u1): running max m, sum l and
/// unnormalised accumulator acc (FP32, or rounded to `storage` after each
/// block when it is set).
struct RowState {
  float m = -INFINITY, l = 0.0f;
  std::vector<float> acc;
};

void online_rows(const std::vector<float>& scores, const std::vector<double>& v, std::int64_t v_at,
                 std::int64_t head_dim, std::int64_t u0, std::int64_t u1, const DType* storage, RowState* st) {
  for (std::int64_t b0 = u0; b0 < u1; b0 += kKeyBlock) {
    const std::int64_t b1 = std::min(u1, b0 + kKeyBlock);
    float bm = -INFINITY;
    for (std::int64_t u = b0; u < b1; ++u) bm = std::max(bm, scores[static_cast<std::size_t>(u)]);
    const float m_new = std::max(st->m, bm);
    const float c = std::exp(st->m - m_new);  // 0 on the first block
    st->l *= c;
    for (auto& a : st->acc) a *= c;
    for (std::int64_t u = b0; u < b1; ++u) {
      const float e = std::exp(scores[static_cast<std::size_t>(u)] - m_new);
      st->l += e;
      for (std::int64_t j = 0; j < head_dim; ++j)
        st->acc[static_cast<std::size_t>(j)] += e * static_cast<float>(v[static_cast<std::size_t>(v_at + u * head_dim + j)]);
    }
    if (storage)
      for (auto& a : st->acc) a = static_cast<float>(round_to(a, *storage));
    st->m = m_new;
  }
}

Status lowprec_attention(Call& call, LpAttention variant) {
  const ops::AttentionShape s = ops::attention_shape(call);
  const DType storage = call.t("q").dtype();
  if (storage != DType::kBF16 && storage != DType::kF16 && storage != DType::kFP8E4M3 && storage != DType::kFP8E5M2)
    return unimplemented("this calibration attention is bf16, FP16, FP8 E4M3 and FP8 E5M2 only");
  const std::vector<double> q = call.t("q").to_doubles(), k = call.t("k").to_doubles(), v = call.t("v").to_doubles();
  Tensor& out = call.t("out");
  const float scale = variant == LpAttention::kUnscaled ? 1.0f : static_cast<float>(s.scale);
  // The defect of kNoRemainder: a 16-wide loop over the head dimension, no tail.
  const std::int64_t score_dim = variant == LpAttention::kNoRemainder ? s.head_dim / 16 * 16 : s.head_dim;
  static std::atomic<std::uint64_t> calls{0};
  const std::uint64_t rotation = variant == LpAttention::kUnorderedMerge ? calls.fetch_add(1) % kChunks : 0;
  std::vector<float> scores(static_cast<std::size_t>(s.seq));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = s.kv_head(h);
      const std::int64_t kv_at = s.at(b, s.kv_heads, g, 0);
      for (std::int64_t t = 0; t < s.seq; ++t) {
        const std::int64_t q_at = s.at(b, s.heads, h, t);
        const std::int64_t n = s.causal ? t + 1 : s.seq;
        for (std::int64_t u = 0; u < n; ++u) {
          float dot = 0.0f;
          for (std::int64_t i = 0; i < score_dim; ++i)
            dot += static_cast<float>(q[static_cast<std::size_t>(q_at + i)]) *
                   static_cast<float>(k[static_cast<std::size_t>(kv_at + u * s.head_dim + i)]);
          scores[static_cast<std::size_t>(u)] = dot * scale;
        }
        RowState row;
        row.acc.assign(static_cast<std::size_t>(s.head_dim), 0.0f);
        if (variant == LpAttention::kUnorderedMerge) {
          // Each chunk's own online softmax, then the chunks merged starting
          // at chunk `rotation`: the merge order, and so the rounding, varies.
          std::vector<RowState> parts(kChunks);
          const std::int64_t step = (n + kChunks - 1) / kChunks;
          for (std::int64_t c = 0; c < kChunks; ++c) {
            parts[static_cast<std::size_t>(c)].acc.assign(static_cast<std::size_t>(s.head_dim), 0.0f);
            online_rows(scores, v, kv_at, s.head_dim, std::min(n, c * step), std::min(n, (c + 1) * step), nullptr,
                        &parts[static_cast<std::size_t>(c)]);
          }
          for (std::int64_t i = 0; i < kChunks; ++i) {
            const RowState& p = parts[static_cast<std::size_t>((static_cast<std::uint64_t>(i) + rotation) % kChunks)];
            if (p.l == 0.0f) continue;
            const float m_new = std::max(row.m, p.m);
            const float c_old = std::exp(row.m - m_new), c_new = std::exp(p.m - m_new);
            row.l = row.l * c_old + p.l * c_new;
            for (std::size_t j = 0; j < row.acc.size(); ++j) row.acc[j] = row.acc[j] * c_old + p.acc[j] * c_new;
            row.m = m_new;
          }
        } else {
          static constexpr DType kBf16 = DType::kBF16;
          const DType* acc_format = variant == LpAttention::kStorageAccumulator ? &storage
                                    : variant == LpAttention::kBf16Accumulator ? &kBf16
                                                                               : nullptr;
          online_rows(scores, v, kv_at, s.head_dim, 0, n, acc_format, &row);
        }
        for (std::int64_t j = 0; j < s.head_dim; ++j)
          out.set(q_at + j, row.acc[static_cast<std::size_t>(j)] / row.l);  // one rounding into the storage format
      }
    }
  return ok_status();
}

Declaration lowprec_attention_decl(const char* name, const char* description) {
  Declaration d = calib_decl(name, "attention", description);
  // bf16 first: the visible test's precision.
  d.dtypes = {DType::kBF16, DType::kFP8E4M3, DType::kF16, DType::kFP8E5M2};
  d.accumulator = DType::kF32;
  d.determinism = Determinism::kBitwise;
  return d;
}

}  // namespace

void add_lowprec_impls(ImplList& out) {
  struct Entry {
    const char* name;
    LpAttention variant;
    const char* description;
  };
  static const Entry kAttention[] = {
      {"calib.attention_lp_unscaled", LpAttention::kUnscaled,
       "KC-ATTN-LP baseline: bf16/fp16/FP8 attention without the 1/sqrt(head_dim) score scale"},
      {"calib.attention_lp_storage_acc", LpAttention::kStorageAccumulator,
       "KC-ATTN-LP-01 bad: bf16/fp16/FP8 online-softmax attention keeping its output accumulator in the storage format "
       "between 16-key blocks; declares accumulator = FP32"},
      {"calib.attention_lp_bf16_acc", LpAttention::kBf16Accumulator,
       "KC-ATTN-LP-04 bad: online-softmax attention keeping its output accumulator in bf16 between 16-key blocks "
       "whatever the storage format (an FP16 kernel with a bf16 register type); declares accumulator = FP32"},
      {"calib.attention_lp_no_remainder", LpAttention::kNoRemainder,
       "KC-ATTN-LP-02 bad: bf16/fp16/FP8 attention whose score loop is 16 wide without a remainder (head_dim 63 reads "
       "48 dimensions)"},
      {"calib.attention_lp_unordered_merge", LpAttention::kUnorderedMerge,
       "KC-ATTN-LP-03 bad: bf16/fp16/FP8 split-KV attention merging its 4 key chunks in an order that changes per call; "
       "declares BITWISE"},
      {"calib.attention_lp_fp32", LpAttention::kFp32,
       "KC-ATTN-LP good: bf16/fp16/FP8 online-softmax attention with FP32 scores, softmax and accumulator, out rounded "
       "once"},
  };
  for (const Entry& e : kAttention)
    add(out, lowprec_attention_decl(e.name, e.description),
        [variant = e.variant](Call& call) { return lowprec_attention(call, variant); });
  add(out, bf16_decl("calib.matmul_bf16_transposed_b", "KC-GEMM-BF16-01 baseline: bf16 GEMM that multiplies by B^T"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kTransposedB); });
  add(out,
      bf16_decl("calib.matmul_bf16_blockpartials",
                "KC-GEMM-BF16-01 bad: bf16 GEMM summing 64-product blocks in FP32 and the block partials in bf16; "
                "declares accumulator = FP32"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kBf16BlockPartials); });
  add(out,
      bf16_decl("calib.matmul_bf16_longk_bf16acc",
                "KC-GEMM-BF16-02 bad: bf16 GEMM whose K > 64 path keeps its running sum in bf16 (the K <= 64 path, "
                "the visible test's, sums in FP32); declares accumulator = FP32"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kLongKBf16Acc); });
  add(out,
      bf16_decl("calib.matmul_bf16_fp32acc",
                "KC-GEMM-BF16-01 good: bf16 GEMM with one FP32 accumulator over K, rounded to bf16 once"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kFp32); });
}

}  // namespace kc::calibration
