// kc_bench_attention: what attention's sampled-row check costs against the
// kernel it checks (docs/verify.md "Attention").
//
// One attention call, FP32, normal(0, 1) inputs (the op's default fill),
// timed on this machine in one run:
//   kernel   ref.attention (direct FP32 attention per query row, one thread)
//   sampled  kc::verify::verify_attention, `--samples` query rows (default 64)
//   full     the full check's oracle work: AttentionOp::oracle and
//            AttentionOp::magnitude over every row (what `kc check` without
//            --fast computes for one sample)
//   bf16     the sampled check on the same kernel run on q, k, v rounded
//            to bf16: how many sampled rows see a systematic error
// kernel and sampled are the best of `--runs` runs; full runs once.
//
// usage: kc_bench_attention [--batch B] [--heads H] [--seq L] [--head-dim D]
//                           [--causal 0|1] [--samples S] [--runs R] [--no-full]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/bench_util.h"
#include "kc/backend.h"
#include "kc/op.h"
#include "kc/rng.h"
#include "kc/verify.h"

int main(int argc, char** argv) {
  std::string batch = "1", heads = "8", seq = "1024", head_dim = "64", causal = "0";
  std::int64_t samples = 64;
  int runs = 3;
  bool full = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch") batch = next();
    else if (a == "--heads") heads = next();
    else if (a == "--seq") seq = next();
    else if (a == "--head-dim") head_dim = next();
    else if (a == "--causal") causal = next();
    else if (a == "--samples") samples = std::atoll(next().c_str());
    else if (a == "--runs") runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--no-full") full = false;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  kc::BackendRegistry reg;
  if (!kc::register_builtin_backends(reg).ok()) return 1;
  auto impl = reg.find_impl("ref.attention");
  const kc::Op* op = kc::builtin_ops().find("attention");
  if (!impl || !op) {
    std::fprintf(stderr, "ref.attention or the attention op is missing\n");
    return 1;
  }
  kc::Config config;
  config.params = {{"batch", batch}, {"heads", heads}, {"kv_heads", heads},
                   {"seq", seq},     {"head_dim", head_dim}, {"causal", causal}};
  auto made = op->make_call(config);
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", made.status().to_string().c_str());
    return 1;
  }
  kc::Rng rng(1);
  op->fill(*made, kc::FillSpec{}, rng);
  const kc::Call inputs = *made;
  kc::Call call = inputs;

  using Clock = std::chrono::steady_clock;
  double kernel = 1e300, sampled = 1e300;
  for (int r = 0; r < runs; ++r) {
    call = inputs;
    const auto t0 = Clock::now();
    if (!impl->run(call).ok()) return 1;
    kernel = std::min(kernel, kc::bench::seconds_since(t0));
  }
  kc::verify::Options vo;
  vo.samples = samples;
  std::string detail;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    auto v = kc::verify::verify_attention(inputs, call, vo);
    sampled = std::min(sampled, kc::bench::seconds_since(t0));
    if (!v.ok()) {
      std::fprintf(stderr, "%s\n", v.status().to_string().c_str());
      return 1;
    }
    detail = v->detail;
  }
  std::printf("attention batch %s heads %s seq %s head_dim %s causal %s, FP32, best of %d\n", batch.c_str(),
              heads.c_str(), seq.c_str(), head_dim.c_str(), causal.c_str(), runs);
  std::printf("  kernel  (ref.attention)            %10.4f s\n", kernel);
  std::printf("  sampled (verify_attention, %4lld)   %10.4f s   %6.2f%% of the kernel   [%s]\n",
              static_cast<long long>(samples), sampled, 100 * sampled / kernel, detail.c_str());
  // Detection of a systematic error: q, k and v rounded to bf16 before the
  // same FP32 kernel. Every row carries it; how many sampled rows see it?
  kc::Call coerced = inputs;
  for (const char* name : {"q", "k", "v"}) {
    kc::Tensor& t = coerced.t(name);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, kc::round_to(t.at(i), kc::DType::kBF16));
  }
  if (!impl->run(coerced).ok()) return 1;
  auto bf16 = kc::verify::verify_attention(inputs, coerced, vo);
  if (!bf16.ok()) return 1;
  std::printf("  bf16 q, k, v: %lld of %lld sampled rows fail, %lld of %lld elements; worst ratio %.3g\n",
              static_cast<long long>(bf16->failing_rows), static_cast<long long>(std::min<std::int64_t>(
                                                              samples, coerced.t("q").numel() / coerced.t("q").dim(3))),
              static_cast<long long>(bf16->failing_samples), static_cast<long long>(bf16->samples), bf16->worst_ratio);
  if (full) {
    const auto t0 = Clock::now();
    auto o = op->oracle(inputs, kc::OracleOptions{});
    auto m = op->magnitude(inputs, "out");
    const double f = kc::bench::seconds_since(t0);
    if (!o.ok() || !m.ok()) return 1;
    std::printf("  full    (oracle + magnitude)       %10.4f s   %6.2fx the kernel\n", f, f / kernel);
  }
  return 0;
}
