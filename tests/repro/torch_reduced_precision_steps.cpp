// libtorch 1.13 CPU on bf16 and Half tensors: where ATen computes a step in
// the storage format although ATen/OpMathType.h says reduced-precision ops
// "should perform internal math in FP32" (docs/backends/torch.md, "Below FP32").
//
//  1. layer_norm on bf16 keeps its moments in bf16 (RowwiseMomentsImpl<T>,
//     native/cpu/moments_utils.h): on rows of mean 30 and spread 0.5 it is far
//     further from the FP64 result than layer_norm in float rounded once.
//  2. log_softmax on bf16 sums exp in float but rounds the sum S to bf16
//     before its log: y0 = -log(bf16(S)), not -log(S) rounded once.
//  3. gelu(x, "tanh") on bf16 computes in bf16 steps: 1 + tanh cancels, -0 at
//     x = -4 where float gelu rounded once is -7.0e-5.
//  4. mean on Half rounds the float sum to Half before dividing.
//
// Calls ATen directly, prints what it saw, exits 0 when all four reproduce,
// 1 otherwise.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>

int main() {
  int reproduced = 0;

  // 1. layer_norm statistics.
  at::manual_seed(1);
  const at::Tensor x = (at::randn({4, 1000}) * 0.5 + 30).to(at::kBFloat16);
  const at::Tensor g = at::ones({1000}), b = at::zeros({1000});
  const at::Tensor xd = x.to(at::kDouble);
  const at::Tensor exact = (xd - xd.mean({1}, true)) / at::sqrt(xd.var({1}, false, true) + 1e-5);
  const double bf16_err =
      (at::layer_norm(x, {1000}, g.to(at::kBFloat16), b.to(at::kBFloat16), 1e-5).to(at::kDouble) - exact)
          .abs().max().item<double>();
  const double float_err =
      (at::layer_norm(x.to(at::kFloat), {1000}, g, b, 1e-5).to(at::kBFloat16).to(at::kDouble) - exact)
          .abs().max().item<double>();
  std::printf("1. layer_norm bf16, rows of mean 30 and spread 0.5: max error %.4g; in float then one bf16 rounding: %.4g\n",
              bf16_err, float_err);
  reproduced += bf16_err > 10 * float_err;

  // 2. log_softmax: the sum rounded to bf16 before the log.
  const at::Tensor row = at::tensor({0.0f, -3.7f, -4.5f, -5.0f, -6.0f, -7.0f, -8.0f}).reshape({1, 7}).to(at::kBFloat16);
  const float s = at::exp(row.to(at::kFloat)).sum().item<float>();
  const float s_bf16 = at::tensor({s}).to(at::kBFloat16).item<float>();
  const float y0 = at::log_softmax(row, -1)[0][0].item<float>();
  const float want_once = at::tensor({-std::log(s)}).to(at::kBFloat16).item<float>();
  const float want_twice = at::tensor({-std::log(s_bf16)}).to(at::kBFloat16).item<float>();
  std::printf("2. log_softmax bf16 of 7 values: y0 = %.6g; -log(S) rounded once %.6g; -log(bf16(S)) rounded %.6g\n", y0,
              want_once, want_twice);
  reproduced += y0 == want_twice && y0 != want_once;

  // 3. gelu tanh at x = -4.
  const at::Tensor xs = at::full({16}, -4.0f);
  const float gelu_bf16 = at::gelu(xs.to(at::kBFloat16), "tanh")[0].item<float>();
  const float gelu_once = at::gelu(xs, "tanh").to(at::kBFloat16)[0].item<float>();
  std::printf("3. gelu(-4, tanh) on bf16 = %g; in float then one bf16 rounding = %g\n", gelu_bf16, gelu_once);
  reproduced += gelu_bf16 == 0.0f && gelu_once != 0.0f;

  // 4. mean on Half: sum -> Half -> / n -> Half.
  at::manual_seed(3);
  int differ = 0, twice = 0;
  for (int t = 0; t < 2000; ++t) {
    const at::Tensor h = (at::randn({1, 7}) * 0.01 + 1).to(at::kHalf);
    const float m = at::mean(h, {1})[0].item<float>();
    const at::Tensor f = h.to(at::kFloat);
    const float once = (f.sum() / 7).to(at::kHalf).item<float>();
    const float via_half = (f.sum().to(at::kHalf).to(at::kFloat) / 7).to(at::kHalf).item<float>();
    differ += m != once;
    twice += m != once && m == via_half;
  }
  std::printf("4. mean of 7 Half values: %d of 2000 rows differ from the float mean rounded once; %d of them equal "
              "the float sum rounded to Half, divided, rounded\n",
              differ, twice);
  reproduced += differ > 0 && twice == differ;

  std::printf("%d of 4 reproduced\n", reproduced);
  return reproduced == 4 ? 0 : 1;
}
