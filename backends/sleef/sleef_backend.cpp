// kc — the sleef backend (see sleef_backend.h, docs/backends/sleef.md).
//
// What each impl declares comes from SLEEF's reference documentation
// (sleef.org, "Math library reference", the libm page; the vectorized pages
// for x86 say each vector function has "the same accuracy specification" as
// its scalar function):
//   Sleef_expf_u10   "The error bound of the returned value is 1.0 ULP"
//   Sleef_logf_u10   1.0 ULP          Sleef_logf_u35   3.5 ULP
//   Sleef_tanhf_u10  1.0001 ULP (single precision; 1.0 for double)
//   Sleef_tanhf_u35  3.5 ULP
//   Sleef_erff_u10   1.0 ULP
// and, for every one: "These functions treat the non-number arguments and
// return non-numbers as specified in the C99 specification" (nan =
// IEEE_PROPAGATE; C99 Annex F fixes exp(-inf) = +0, log(+-0) = -inf,
// tanh(+-0) = +-0, erf(+-inf) = +-1, ...). SLEEF states no flush to zero and
// sets no MXCSR bits (denormal = IEEE). An ULP in SLEEF's tester is measured
// at the exact value's binade (subnormal spacing below FLT_MIN), which is
// what the elementwise exactness contracts assume (contracts/elementwise/
// KC-ELEM-EDGE.kc derives each class's tolerance in representable steps).
//
// The ISA variants are separate exported symbols (Sleef_expf8_u10avx2, ...).
// Each is called only from a function compiled for that ISA (target
// attribute), and only after __builtin_cpu_supports says the CPU has it:
// a variant the CPU lacks is listed and its cases are skipped with the reason
// (kUnavailable), never run into SIGILL.
#include "sleef_backend.h"

#include <cstdint>
#include <string>
#include <vector>

#ifdef KC_HAVE_SLEEF
#include <sleef.h>
#include <x86intrin.h>
#endif

#ifdef KC_HAVE_SLEEF
// The prototypes sleef.h leaves out here: it declares the AVX, AVX-512 and
// FMA blocks only when the translation unit itself is compiled for them
// (#ifdef __AVX__, __AVX512F__, __FMA__), and kc is not; the symbols are in
// libsleef whatever the compiler flags. Declared as sleef.h does (const).
#define KC_SLEEF_PROTOS(F, A)                                                       \
  extern "C" __attribute__((const)) float Sleef_##F##f1_##A##purecfma(float);        \
  extern "C" __attribute__((const)) __m256 Sleef_##F##f8_##A##avx(__m256);           \
  extern "C" __attribute__((const)) __m256 Sleef_##F##f8_##A##avx2(__m256);          \
  extern "C" __attribute__((const)) __m512 Sleef_##F##f16_##A##avx512fnofma(__m512);  \
  extern "C" __attribute__((const)) __m256 Sleef_##F##f8_##A##fma4(__m256);          \
  extern "C" __attribute__((const)) __m512 Sleef_##F##f16_##A##avx512f(__m512);
KC_SLEEF_PROTOS(exp, u10)
KC_SLEEF_PROTOS(log, u10)
KC_SLEEF_PROTOS(log, u35)
KC_SLEEF_PROTOS(tanh, u10)
KC_SLEEF_PROTOS(tanh, u35)
KC_SLEEF_PROTOS(erf, u10)
#endif

namespace kc::backends {
namespace {

#ifdef KC_HAVE_SLEEF


using Kernel = void (*)(const float* x, float* y, std::int64_t n);

// One loop per ISA width: full vectors, then the remainder through a padded
// buffer (padding 1.0f, a value every function takes without exceptions).
#define KC_SLEEF_VEC_LOOP(W, LOAD, STORE, FN)                                        \
  std::int64_t i = 0;                                                                \
  for (; i + (W) <= n; i += (W)) STORE(y + i, FN(LOAD(x + i)));                      \
  if (i < n) {                                                                       \
    float bx[W], by[W];                                                              \
    for (int j = 0; j < (W); ++j) bx[j] = i + j < n ? x[i + j] : 1.0f;               \
    STORE(by, FN(LOAD(bx)));                                                         \
    for (int j = 0; i + j < n; ++j) y[i + j] = by[j];                                \
  }

#define KC_SLEEF_KERNELS(F, A)                                                                      \
  void F##_##A##_purec(const float* x, float* y, std::int64_t n) {                                  \
    for (std::int64_t i = 0; i < n; ++i) y[i] = Sleef_##F##f1_##A##purec(x[i]);                     \
  }                                                                                                 \
  __attribute__((target("fma"))) void F##_##A##_purecfma(const float* x, float* y, std::int64_t n) { \
    for (std::int64_t i = 0; i < n; ++i) y[i] = Sleef_##F##f1_##A##purecfma(x[i]);                  \
  }                                                                                                 \
  void F##_##A##_sse2(const float* x, float* y, std::int64_t n) {                                   \
    KC_SLEEF_VEC_LOOP(4, _mm_loadu_ps, _mm_storeu_ps, Sleef_##F##f4_##A##sse2)                      \
  }                                                                                                 \
  __attribute__((target("sse4.1"))) void F##_##A##_sse4(const float* x, float* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(4, _mm_loadu_ps, _mm_storeu_ps, Sleef_##F##f4_##A##sse4)                      \
  }                                                                                                 \
  __attribute__((target("avx2,fma"))) void F##_##A##_avx2128(const float* x, float* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(4, _mm_loadu_ps, _mm_storeu_ps, Sleef_##F##f4_##A##avx2128)                   \
  }                                                                                                 \
  __attribute__((target("avx"))) void F##_##A##_avx(const float* x, float* y, std::int64_t n) {     \
    KC_SLEEF_VEC_LOOP(8, _mm256_loadu_ps, _mm256_storeu_ps, Sleef_##F##f8_##A##avx)                 \
  }                                                                                                 \
  __attribute__((target("avx512f"))) void F##_##A##_avx512fnofma(const float* x, float* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(16, _mm512_loadu_ps, _mm512_storeu_ps, Sleef_##F##f16_##A##avx512fnofma)      \
  }                                                                                                 \
  __attribute__((target("avx2,fma"))) void F##_##A##_avx2(const float* x, float* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(8, _mm256_loadu_ps, _mm256_storeu_ps, Sleef_##F##f8_##A##avx2)                \
  }                                                                                                 \
  __attribute__((target("avx,fma4"))) void F##_##A##_fma4(const float* x, float* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(8, _mm256_loadu_ps, _mm256_storeu_ps, Sleef_##F##f8_##A##fma4)                \
  }                                                                                                 \
  __attribute__((target("avx512f"))) void F##_##A##_avx512f(const float* x, float* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(16, _mm512_loadu_ps, _mm512_storeu_ps, Sleef_##F##f16_##A##avx512f)           \
  }

KC_SLEEF_KERNELS(exp, u10)
KC_SLEEF_KERNELS(log, u10)
KC_SLEEF_KERNELS(log, u35)
KC_SLEEF_KERNELS(tanh, u10)
KC_SLEEF_KERNELS(tanh, u35)
KC_SLEEF_KERNELS(erf, u10)

/// An ISA variant: its label, what it needs of the CPU, and the SLEEF symbol
/// suffix it calls (for the description).
struct Isa {
  const char* label;
  const char* needs;  ///< for the skip reason
  const char* width;   ///< lanes, in the symbol: Sleef_<fn>f<width>_<acc><label>
  const char* what;
  bool (*cpu_ok)();
};

bool always() { return true; }
bool has_fma() { return __builtin_cpu_supports("fma"); }
bool has_sse41() { return __builtin_cpu_supports("sse4.1"); }
bool has_avx() { return __builtin_cpu_supports("avx"); }
bool has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool has_fma4() { return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma4"); }
bool has_avx512f() { return __builtin_cpu_supports("avx512f"); }

constexpr Isa kIsas[] = {
    {"purec", "nothing beyond x86-64", "1", "scalar, plain C", always},
    {"purecfma", "FMA3", "1", "scalar, FMA", has_fma},
    {"sse2", "nothing beyond x86-64", "4", "4 lanes, no FMA", always},
    {"sse4", "SSE4.1", "4", "4 lanes, no FMA", has_sse41},
    {"avx2128", "AVX2 and FMA3", "4", "4 lanes, FMA", has_avx2_fma},
    {"avx", "AVX", "8", "8 lanes, no FMA", has_avx},
    {"avx2", "AVX2 and FMA3", "8", "8 lanes, FMA", has_avx2_fma},
    {"avx512f", "AVX-512F", "16", "16 lanes, FMA", has_avx512f},
    {"avx512fnofma", "AVX-512F", "16", "16 lanes, no FMA", has_avx512f},
    {"fma4", "AVX and AMD FMA4", "8", "8 lanes, FMA4", has_fma4},
};
constexpr std::size_t kNumIsas = std::size(kIsas);

/// One function in one accuracy class: its kernels per ISA (kIsas order) and
/// the bound SLEEF documents for it.
struct Fn {
  const char* op;
  const char* accuracy;  ///< "u10" | "u35"
  const char* ulp_bound;  ///< as documented, in ULP of the exact value
  const char* doc;       ///< the sentence the bound is taken from
  Kernel kernels[kNumIsas];  ///< in kIsas order
};

#define KC_SLEEF_FN(F, A, B, DOC) \
  {#F, #A, B, DOC,                                                                                   \
   {F##_##A##_purec, F##_##A##_purecfma, F##_##A##_sse2, F##_##A##_sse4, F##_##A##_avx2128, F##_##A##_avx, \
    F##_##A##_avx2, F##_##A##_avx512f, F##_##A##_avx512fnofma, F##_##A##_fma4}}

const Fn kFns[] = {
    KC_SLEEF_FN(exp, u10, "1", "Sleef_expf_u10: 'The error bound of the returned value is 1.0 ULP'"),
    KC_SLEEF_FN(log, u10, "1", "Sleef_logf_u10: 'The error bound of the returned value is 1.0 ULP'"),
    KC_SLEEF_FN(log, u35, "3.5", "Sleef_logf_u35: 'The error bound of the returned value is 3.5 ULP'"),
    KC_SLEEF_FN(tanh, u10, "1.0001",
                "Sleef_tanhf_u10: 'The error bound of the returned value is ... 1.0001 ULP for the single-precision "
                "function'"),
    KC_SLEEF_FN(tanh, u35, "3.5", "Sleef_tanhf_u35: 'The error bound of the returned value is ... 3.5 ULP'"),
    KC_SLEEF_FN(erf, u10, "1", "Sleef_erff_u10: 'The error bound of the returned value is 1.0 ULP'"),
};

class SleefImpl final : public Impl {
 public:
  SleefImpl(const Fn& fn, std::size_t isa) : kernel_(fn.kernels[isa]), isa_(kIsas[isa]) {
    decl_.name = std::string("sleef.") + fn.op + "_" + fn.accuracy + "_" + isa_.label;
    decl_.op = fn.op;
    decl_.backend = "sleef";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;            // evaluated in fp32 (with double-float steps inside)
    decl_.determinism = Determinism::kBitwise;  // a pure function per element
    decl_.nan = NanPolicy::kIeeePropagate;      // "as specified in the C99 specification"
    decl_.denormal = DenormalPolicy::kIeee;     // no FTZ/DAZ stated or set
    decl_.extra["ulp_bound"] = fn.ulp_bound;
    decl_.extra["ulp_domain"] = "ALL";  // no range restriction stated; C99 special values
    decl_.source = std::string("SLEEF 3.5 reference (sleef.org, libm page): ") + fn.doc +
                   "; 'treat the non-number arguments and return non-numbers as specified in the C99 "
                   "specification'; x86 page: the vector functions have the same accuracy specification";
    decl_.description = std::string("Sleef_") + fn.op + "f" + isa_.width + "_" + fn.accuracy + isa_.label + " (" +
                        isa_.what + "; " + fn.ulp_bound + " ULP documented)";
  }
  const Declaration& declaration() const override { return decl_; }
  Status can_implement(const Call& call) const override {
    KC_RETURN_IF_ERROR(Impl::can_implement(call));
    if (!isa_.cpu_ok())
      return unavailable(decl_.name + " needs " + isa_.needs + ", which this CPU lacks (cpuid); not called");
    return ok_status();
  }
  Status run(Call& call) const override {
    KC_RETURN_IF_ERROR(can_implement(call));
    const Tensor& x = call.t("x");
    Tensor& y = call.t("y");
    const std::int64_t n = x.numel();
    std::vector<float> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(x.at(i));
    kernel_(in.data(), out.data(), n);
    for (std::int64_t i = 0; i < n; ++i) y.set(i, out[static_cast<std::size_t>(i)]);
    return ok_status();
  }

 private:
  Kernel kernel_;
  const Isa& isa_;
  Declaration decl_;
};

class SleefBackend final : public Backend {
 public:
  std::string_view name() const override { return "sleef"; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = "sleef";
    info.available = true;
    info.version = std::to_string(SLEEF_VERSION_MAJOR) + "." + std::to_string(SLEEF_VERSION_MINOR) + "." +
                   std::to_string(SLEEF_VERSION_PATCHLEVEL);
    std::string missing;
    for (const Isa& isa : kIsas)
      if (!isa.cpu_ok()) missing += (missing.empty() ? "" : ", ") + std::string(isa.label);
    info.reason = "libsleef linked into kc" + (missing.empty() ? std::string() : "; this CPU lacks " + missing +
                                                                                   " (those impls are skipped)");
    info.description = "SLEEF vectorized libm: exp, log, tanh, erf (fp32), u10/u35, per ISA";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override {
    std::vector<std::shared_ptr<const Impl>> out;
    for (const Fn& fn : kFns)
      for (std::size_t i = 0; i < kNumIsas; ++i) out.push_back(std::make_shared<SleefImpl>(fn, i));
    return out;
  }
};

#else  // KC_HAVE_SLEEF

class SleefBackend final : public Backend {
 public:
  std::string_view name() const override { return "sleef"; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = "sleef";
    info.available = false;
    info.reason =
        "built without SLEEF (sleef.h or libsleef not found at configure time, or KC_WITH_SLEEF=OFF; "
        "Debian: libsleef-dev, scripts/install-deps.sh)";
    info.description = "SLEEF vectorized libm: exp, log, tanh, erf (fp32), u10/u35, per ISA";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override { return {}; }
};

#endif  // KC_HAVE_SLEEF

}  // namespace

std::unique_ptr<Backend> make_sleef_backend() { return std::make_unique<SleefBackend>(); }

}  // namespace kc::backends
