// Fact behind KC-CAP-PATH-01 × onednn.matmul_fpmath_bf16 (docs/capability.md):
// an f32 matmul created with fpmath_mode::bf16 may round its inputs to bf16
// (dev_guide_attributes_fpmath_mode names the conversions that are allowed),
// and oneDNN says which kernel it selected (primitive_desc::impl_info_str).
// This program builds the same f32 matmul in strict and bf16 fpmath modes, and
// a bf16-data matmul, prints the kernel each selected, and checks that the
// kernel's name and the numbers agree: A = 1 + 2^-12 (not a bf16 value) times
// B = 1 over K = 64 is 64.015625 exactly in f32 and 64 once A is rounded to
// bf16. A kernel without bf16 arithmetic (no "bf16" or "amx" in its name)
// must give the f32 value, bit for bit as strict mode; one with it, the bf16 one.
//
// Exits 0 when names and numbers agree (it prints whether the bf16 request was
// served), 1 when they contradict each other.
#include <dnnl.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool bf16_kernel(const std::string& impl) {
  return impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos;
}

struct Run {
  std::string impl;
  float c0 = 0;
};

Run f32_matmul(dnnl::fpmath_mode mode) {
  using namespace dnnl;
  const memory::dim m = 8, n = 8, k = 64;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const memory::desc a({m, k}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b({k, n}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc c({m, n}, memory::data_type::f32, memory::format_tag::ab);
  primitive_attr attr;
  attr.set_fpmath_mode(mode);
  matmul::primitive_desc pd(matmul::desc(a, b, c), attr, eng);
  std::vector<float> av(m * k, 1.0f + 1.0f / 4096), bv(k * n, 1.0f), cv(m * n, 0.0f);
  matmul(pd).execute(s, {{DNNL_ARG_SRC, memory(a, eng, av.data())},
                         {DNNL_ARG_WEIGHTS, memory(b, eng, bv.data())},
                         {DNNL_ARG_DST, memory(c, eng, cv.data())}});
  s.wait();
  return {pd.impl_info_str(), cv[0]};
}

}  // namespace

int main() {
  const float exact = 64.015625f, rounded = 64.0f;
  const Run strict = f32_matmul(dnnl::fpmath_mode::strict);
  const Run bf16 = f32_matmul(dnnl::fpmath_mode::bf16);
  std::printf("f32 strict:        %-28s C[0] = %.9g\n", strict.impl.c_str(), strict.c0);
  std::printf("f32 fpmath bf16:   %-28s C[0] = %.9g\n", bf16.impl.c_str(), bf16.c0);
  std::string bf16_data = "(no primitive)";
  try {
    using namespace dnnl;
    engine eng(engine::kind::cpu, 0);
    const memory::desc a({8, 64}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc b({64, 8}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc c({8, 8}, memory::data_type::f32, memory::format_tag::ab);
    bf16_data = matmul::primitive_desc(matmul::desc(a, b, c), eng).impl_info_str();
  } catch (const dnnl::error&) {
  }
  std::printf("bf16 data:         %s\n", bf16_data.c_str());
  int bad = 0;
  if (strict.c0 != exact || bf16_kernel(strict.impl)) {
    std::printf("strict mode did not compute in f32\n");
    ++bad;
  }
  if (bf16_kernel(bf16.impl)) {
    std::printf("the bf16 request was served by %s\n", bf16.impl.c_str());
    if (bf16.c0 != rounded) {
      std::printf("...but the result %.9g is not the bf16-rounded %.9g\n", bf16.c0, rounded);
      ++bad;
    }
  } else {
    std::printf("the bf16 request fell back to %s (f32 arithmetic)\n", bf16.impl.c_str());
    if (std::memcmp(&bf16.c0, &strict.c0, sizeof(float)) != 0 || bf16.c0 != exact) {
      std::printf("...but the result %.9g differs from strict mode's %.9g\n", bf16.c0, strict.c0);
      ++bad;
    }
  }
  return bad ? 1 : 0;
}
