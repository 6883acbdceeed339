// Fact, not a violation: oneDNN 2.6's f32 matmul with output scale 0 (kc's
// alpha = 0; from oneDNN 3 on, a src scale of 0) and a NaN in src gives
// different results on its avx2 and avx512_core kernels (3.7 too). The Developer Guide defines dst = scale * (src x wei)
// + sum_scale * dst ("Primitive Attributes: Post-ops", "Matmul") and says
// nothing about NaN when scale = 0, so both results are within what it
// documents; the BLAS rule "alpha = 0: A and B are not read" is not oneDNN's.
//
// Usage: onednn_matmul_alpha_zero            (runs both ISA caps in children)
//        onednn_matmul_alpha_zero avx2|avx512_core
// Prints what each kernel returned; exits 0 when the two paths differ (the
// behaviour reproduces), 1 when they agree, 2 when an ISA is unavailable.
#include <dnnl.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

/// Runs one matmul under the given max ISA; returns the NaN count in dst, -1 if the cap did not take.
int run(dnnl_cpu_isa_t isa, const char* label) {
  if (dnnl_set_max_cpu_isa(isa) != dnnl_success) return -1;
  using namespace dnnl;
  if (get_effective_cpu_isa() != static_cast<cpu_isa>(isa)) return -1;
  const memory::dim m = 64, n = 64, k = 64;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const memory::desc a_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b_md({k, n}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc c_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  std::vector<float> a(m * k, 1.0f), b(k * n, 1.0f), c(m * n, 2.0f);
  a[5] = NAN;  // row 0 of src
  primitive_attr attr;
  post_ops po;
  po.append_sum(0.5f);  // beta = 0.5
  attr.set_post_ops(po);
  memory am(a_md, eng, a.data()), bm(b_md, eng, b.data()), cm(c_md, eng, c.data());
#if DNNL_VERSION_MAJOR >= 3
  // oneDNN 3 dropped output scales; the product's scale is the src scale times the weights
  // scale, given at execution time. A src scale of 0 is alpha = 0.
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  const matmul::primitive_desc pd(eng, a_md, b_md, c_md, attr);
  float zero = 0.0f;
  memory scale(memory::desc({1}, memory::data_type::f32, memory::format_tag::x), eng, &zero);
  matmul(pd).execute(s, {{DNNL_ARG_SRC, am},
                         {DNNL_ARG_WEIGHTS, bm},
                         {DNNL_ARG_DST, cm},
                         {DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scale}});
#else
  attr.set_output_scales(0, {0.0f});  // alpha = 0
  const matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), attr, eng);
  matmul(pd).execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
#endif
  s.wait();
  int nans = 0;
  for (float v : c) nans += std::isnan(v);
  std::printf("%-12s kernel %-18s dst[0][0] = %g, dst[1][0] = %g, NaN outputs: %d of %d\n", label,
              pd.impl_info_str(), c[0], c[n], nans, static_cast<int>(c.size()));
  return nans;
}

int child(dnnl_cpu_isa_t isa, const char* label) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    const int nans = run(isa, label);
    std::fflush(stdout);
    _exit(nans < 0 ? 255 : (nans > 0 ? 1 : 0));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) return run(std::strcmp(argv[1], "avx2") == 0 ? dnnl_cpu_isa_avx2 : dnnl_cpu_isa_avx512_core, argv[1]) < 0 ? 2 : 0;
  // One process per cap: oneDNN reads its max ISA once per process.
  const int avx2 = child(dnnl_cpu_isa_avx2, "avx2");
  const int avx512 = child(dnnl_cpu_isa_avx512_core, "avx512_core");
  if (avx2 == 255 || avx512 == 255) {
    std::printf("an ISA cap is not available on this CPU: nothing to compare\n");
    return 2;
  }
  const bool differ = avx2 != avx512;
  std::printf("alpha = 0, NaN in A: the avx2 and avx512_core kernels %s\n", differ ? "differ" : "agree");
  return differ ? 0 : 1;
}
