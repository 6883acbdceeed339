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
#include <type_traits>
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
#define KC_SLEEF_PROTOS_D(F, A)                                                      \
  extern "C" __attribute__((const)) double Sleef_##F##d1_##A##purecfma(double);      \
  extern "C" __attribute__((const)) __m256d Sleef_##F##d4_##A##avx(__m256d);          \
  extern "C" __attribute__((const)) __m256d Sleef_##F##d4_##A##avx2(__m256d);         \
  extern "C" __attribute__((const)) __m256d Sleef_##F##d4_##A##fma4(__m256d);         \
  extern "C" __attribute__((const)) __m512d Sleef_##F##d8_##A##avx512f(__m512d);      \
  extern "C" __attribute__((const)) __m512d Sleef_##F##d8_##A##avx512fnofma(__m512d);
KC_SLEEF_PROTOS_D(exp, u10)
KC_SLEEF_PROTOS_D(log, u10)
KC_SLEEF_PROTOS_D(log, u35)
KC_SLEEF_PROTOS_D(tanh, u10)
KC_SLEEF_PROTOS_D(tanh, u35)
KC_SLEEF_PROTOS_D(erf, u10)
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
using KernelD = void (*)(const double* x, double* y, std::int64_t n);

// One loop per ISA width: full vectors, then the remainder through a padded
// buffer (padding 1.0f, a value every function takes without exceptions).
#define KC_SLEEF_VEC_LOOP(W, LOAD, STORE, FN)                                        \
  std::int64_t i = 0;                                                                \
  for (; i + (W) <= n; i += (W)) STORE(y + i, FN(LOAD(x + i)));                      \
  if (i < n) {                                                                       \
    std::remove_cv_t<std::remove_pointer_t<decltype(x)>> bx[W], by[W];              \
    for (int j = 0; j < (W); ++j) bx[j] = i + j < n ? x[i + j] : 1;                  \
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

#define KC_SLEEF_KERNELS_D(F, A)                                                                    \
  void F##_##A##_purec_d(const double* x, double* y, std::int64_t n) {                              \
    for (std::int64_t i = 0; i < n; ++i) y[i] = Sleef_##F##d1_##A##purec(x[i]);                     \
  }                                                                                                 \
  __attribute__((target("fma"))) void F##_##A##_purecfma_d(const double* x, double* y, std::int64_t n) { \
    for (std::int64_t i = 0; i < n; ++i) y[i] = Sleef_##F##d1_##A##purecfma(x[i]);                  \
  }                                                                                                 \
  void F##_##A##_sse2_d(const double* x, double* y, std::int64_t n) {                               \
    KC_SLEEF_VEC_LOOP(2, _mm_loadu_pd, _mm_storeu_pd, Sleef_##F##d2_##A##sse2)                      \
  }                                                                                                 \
  __attribute__((target("sse4.1"))) void F##_##A##_sse4_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(2, _mm_loadu_pd, _mm_storeu_pd, Sleef_##F##d2_##A##sse4)                      \
  }                                                                                                 \
  __attribute__((target("avx2,fma"))) void F##_##A##_avx2128_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(2, _mm_loadu_pd, _mm_storeu_pd, Sleef_##F##d2_##A##avx2128)                   \
  }                                                                                                 \
  __attribute__((target("avx"))) void F##_##A##_avx_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(4, _mm256_loadu_pd, _mm256_storeu_pd, Sleef_##F##d4_##A##avx)                 \
  }                                                                                                 \
  __attribute__((target("avx2,fma"))) void F##_##A##_avx2_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(4, _mm256_loadu_pd, _mm256_storeu_pd, Sleef_##F##d4_##A##avx2)                \
  }                                                                                                 \
  __attribute__((target("avx512f"))) void F##_##A##_avx512f_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(8, _mm512_loadu_pd, _mm512_storeu_pd, Sleef_##F##d8_##A##avx512f)             \
  }                                                                                                 \
  __attribute__((target("avx512f"))) void F##_##A##_avx512fnofma_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(8, _mm512_loadu_pd, _mm512_storeu_pd, Sleef_##F##d8_##A##avx512fnofma)        \
  }                                                                                                 \
  __attribute__((target("avx,fma4"))) void F##_##A##_fma4_d(const double* x, double* y, std::int64_t n) { \
    KC_SLEEF_VEC_LOOP(4, _mm256_loadu_pd, _mm256_storeu_pd, Sleef_##F##d4_##A##fma4)                \
  }

KC_SLEEF_KERNELS(exp, u10)
KC_SLEEF_KERNELS(log, u10)
KC_SLEEF_KERNELS(log, u35)
KC_SLEEF_KERNELS(tanh, u10)
KC_SLEEF_KERNELS(tanh, u35)
KC_SLEEF_KERNELS(erf, u10)
KC_SLEEF_KERNELS_D(exp, u10)
KC_SLEEF_KERNELS_D(log, u10)
KC_SLEEF_KERNELS_D(log, u35)
KC_SLEEF_KERNELS_D(tanh, u10)
KC_SLEEF_KERNELS_D(tanh, u35)
KC_SLEEF_KERNELS_D(erf, u10)

/// An ISA variant: its label, what it needs of the CPU, and the SLEEF symbol
/// suffix it calls (for the description).
struct Isa {
  const char* label;
  const char* needs;  ///< for the skip reason
  const char* width;    ///< float lanes, in the symbol: Sleef_<fn>f<width>_<acc><label>
  const char* width_d;  ///< double lanes: Sleef_<fn>d<width_d>_<acc><label>
  const char* what;      ///< the arithmetic: FMA or not
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
    {"purec", "nothing beyond x86-64", "1", "1", "no FMA, plain C", always},
    {"purecfma", "FMA3", "1", "1", "FMA", has_fma},
    {"sse2", "nothing beyond x86-64", "4", "2", "no FMA", always},
    {"sse4", "SSE4.1", "4", "2", "no FMA", has_sse41},
    {"avx2128", "AVX2 and FMA3", "4", "2", "FMA", has_avx2_fma},
    {"avx", "AVX", "8", "4", "no FMA", has_avx},
    {"avx2", "AVX2 and FMA3", "8", "4", "FMA", has_avx2_fma},
    {"avx512f", "AVX-512F", "16", "8", "FMA", has_avx512f},
    {"avx512fnofma", "AVX-512F", "16", "8", "no FMA", has_avx512f},
    {"fma4", "AVX and AMD FMA4", "8", "4", "FMA4", has_fma4},
};
constexpr std::size_t kNumIsas = std::size(kIsas);

/// One function in one accuracy class: its kernels per ISA (kIsas order) and
/// the bound SLEEF documents for it, in single and in double precision.
struct Fn {
  const char* op;
  const char* accuracy;     ///< "u10" | "u35"
  const char* ulp_bound;    ///< single precision, as documented, in ULP of the exact value
  const char* ulp_bound_d;  ///< double precision
  const char* doc;          ///< the sentences the bounds are taken from
  Kernel kernels[kNumIsas];  ///< in kIsas order
  KernelD kernels_d[kNumIsas];
};

#define KC_SLEEF_ISAS(F, A, S)                                                                               \
  {F##_##A##_purec##S, F##_##A##_purecfma##S, F##_##A##_sse2##S, F##_##A##_sse4##S, F##_##A##_avx2128##S, \
   F##_##A##_avx##S, F##_##A##_avx2##S, F##_##A##_avx512f##S, F##_##A##_avx512fnofma##S, F##_##A##_fma4##S}
#define KC_SLEEF_FN(F, A, B, BD, DOC) {#F, #A, B, BD, DOC, KC_SLEEF_ISAS(F, A, ), KC_SLEEF_ISAS(F, A, _d)}

const Fn kFns[] = {
    KC_SLEEF_FN(exp, u10, "1", "1", "Sleef_exp_u10, Sleef_expf_u10: 'The error bound of the returned value is 1.0 ULP'"),
    KC_SLEEF_FN(log, u10, "1", "1", "Sleef_log_u10, Sleef_logf_u10: 'The error bound of the returned value is 1.0 ULP'"),
    KC_SLEEF_FN(log, u35, "3.5", "3.5",
                "Sleef_log_u35, Sleef_logf_u35: 'The error bound of the returned value is 3.5 ULP'"),
    KC_SLEEF_FN(tanh, u10, "1.0001", "1",
                "Sleef_tanh_u10, Sleef_tanhf_u10: 'The error bound of the returned value is 1.0 ULP for the "
                "double-precision function or 1.0001 ULP for the single-precision function'"),
    KC_SLEEF_FN(tanh, u35, "3.5", "3.5",
                "Sleef_tanh_u35, Sleef_tanhf_u35: 'The error bound of the returned value is 3.5 ULP for the "
                "double-precision function or 3.5 ULP for the single-precision function'"),
    KC_SLEEF_FN(erf, u10, "1", "1", "Sleef_erf_u10, Sleef_erff_u10: 'The error bound of the returned value is 1.0 ULP'"),
};

/// One entry point: the function, class and ISA, in FP32 (Sleef_<fn>f...) or
/// FP64 (Sleef_<fn>d..., impl name suffix _fp64).
class SleefImpl final : public Impl {
 public:
  SleefImpl(const Fn& fn, std::size_t isa, bool fp64)
      : kernel_(fn.kernels[isa]), kernel_d_(fn.kernels_d[isa]), isa_(kIsas[isa]), fp64_(fp64) {
    decl_.name = std::string("sleef.") + fn.op + "_" + fn.accuracy + "_" + isa_.label + (fp64 ? "_fp64" : "");
    decl_.op = fn.op;
    decl_.backend = "sleef";
    decl_.dtypes = {fp64 ? DType::kF64 : DType::kF32};
    decl_.accumulator = fp64 ? DType::kF64 : DType::kF32;  // evaluated in the storage format (double-word steps inside)
    decl_.determinism = Determinism::kBitwise;  // a pure function per element
    decl_.nan = NanPolicy::kIeeePropagate;      // "as specified in the C99 specification"
    decl_.denormal = DenormalPolicy::kIeee;     // no FTZ/DAZ stated or set
    const char* bound = fp64 ? fn.ulp_bound_d : fn.ulp_bound;
    decl_.extra["ulp_bound"] = bound;
    decl_.extra["ulp_domain"] = "ALL";  // no range restriction stated; C99 special values
    decl_.source = std::string("SLEEF 3.5 reference (sleef.org, libm page): ") + fn.doc +
                   "; 'treat the non-number arguments and return non-numbers as specified in the C99 "
                   "specification'; x86 page: the vector functions have the same accuracy specification";
    const std::string lanes = fp64 ? isa_.width_d : isa_.width;
    decl_.description = std::string("Sleef_") + fn.op + (fp64 ? "d" : "f") + lanes + "_" + fn.accuracy + isa_.label +
                        " (" + lanes + (lanes == "1" ? " lane, " : " lanes, ") + isa_.what + "; " + bound +
                        " ULP documented)";
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
    return fp64_ ? apply<double>(call, kernel_d_) : apply<float>(call, kernel_);
  }

 private:
  template <typename T, typename K>
  static Status apply(Call& call, K kernel) {
    const Tensor& x = call.t("x");
    Tensor& y = call.t("y");
    const std::int64_t n = x.numel();
    std::vector<T> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = static_cast<T>(x.at(i));
    kernel(in.data(), out.data(), n);
    for (std::int64_t i = 0; i < n; ++i) y.set(i, out[static_cast<std::size_t>(i)]);
    return ok_status();
  }

  Kernel kernel_;
  KernelD kernel_d_;
  const Isa& isa_;
  bool fp64_;
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
    info.description = "SLEEF vectorized libm: exp, log, tanh, erf (fp32, fp64), u10/u35, per ISA";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override {
    std::vector<std::shared_ptr<const Impl>> out;
    for (const Fn& fn : kFns)
      for (bool fp64 : {false, true})
        for (std::size_t i = 0; i < kNumIsas; ++i) out.push_back(std::make_shared<SleefImpl>(fn, i, fp64));
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
