// kc — kc's own floating-point environment (kc/isolate.h, FpEnvScope).
#include <cfenv>
#include <string>

#include "kc/isolate.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KC_HAVE_MXCSR 1
#endif

namespace kc::isolate {

namespace {

#if defined(KC_HAVE_MXCSR)
// MXCSR bit 15: flush results that would be subnormal to zero (FTZ); bit 6:
// treat subnormal inputs as zero (DAZ). Neither is part of the C fenv_t
// contract: glibc's fesetenv(FE_DFL_ENV) leaves them as they are, so kc clears them itself.
constexpr unsigned kFtz = 1u << 15;
constexpr unsigned kDaz = 1u << 6;
#endif

void set_default_env() {
  std::fesetenv(FE_DFL_ENV);
#if defined(KC_HAVE_MXCSR)
  _mm_setcsr(_mm_getcsr() & ~(kFtz | kDaz));
#endif
}

}  // namespace

FpEnvScope::FpEnvScope() {
  std::fegetenv(&saved_);
#if defined(KC_HAVE_MXCSR)
  saved_csr_ = _mm_getcsr();
#endif
  set_default_env();
}

FpEnvScope::~FpEnvScope() {
  std::fesetenv(&saved_);
#if defined(KC_HAVE_MXCSR)
  _mm_setcsr(saved_csr_);
#endif
}

bool fp_env_changed(std::string* what) {
  std::string s;
  switch (std::fegetround()) {
    case FE_TONEAREST: break;
    case FE_UPWARD: s = "rounding upward"; break;
    case FE_DOWNWARD: s = "rounding downward"; break;
    case FE_TOWARDZERO: s = "rounding toward zero"; break;
    default: s = "an unknown rounding mode"; break;
  }
#if defined(KC_HAVE_MXCSR)
  const unsigned csr = _mm_getcsr();
  if (csr & kFtz) s += std::string(s.empty() ? "" : ", ") + "FTZ set";
  if (csr & kDaz) s += std::string(s.empty() ? "" : ", ") + "DAZ set";
#endif
  if (what) *what = s;
  return !s.empty();
}

}  // namespace kc::isolate
