// kc — the CPU features kc can name (see kc/cpu_features.h).
#include "kc/cpu_features.h"

#include <cctype>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kc {

namespace {

constexpr CpuFeatureInfo kFeatures[] = {
    {CpuFeature::kSse2, "sse2"},
    {CpuFeature::kSse3, "sse3"},
    {CpuFeature::kSsse3, "ssse3"},
    {CpuFeature::kSse41, "sse4.1"},
    {CpuFeature::kSse42, "sse4.2"},
    {CpuFeature::kAvx, "avx"},
    {CpuFeature::kFma, "fma"},
    {CpuFeature::kFma4, "fma4"},
    {CpuFeature::kF16c, "f16c"},
    {CpuFeature::kBmi, "bmi"},
    {CpuFeature::kBmi2, "bmi2"},
    {CpuFeature::kAvx2, "avx2"},
    {CpuFeature::kAvx512F, "avx512f"},
    {CpuFeature::kAvx512Dq, "avx512dq"},
    {CpuFeature::kAvx512Bw, "avx512bw"},
    {CpuFeature::kAvx512Vl, "avx512vl"},
    {CpuFeature::kAvx512Pf, "avx512pf"},
    {CpuFeature::kAvx512Vnni, "avx512vnni"},
    {CpuFeature::kAvx512Bf16, "avx512bf16"},
    {CpuFeature::kAmxTile, "amx-tile"},
    {CpuFeature::kAmxBf16, "amx-bf16"},
};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

#if defined(__x86_64__) || defined(__i386__)
// For the features not every compiler's __builtin_cpu_supports names (clang
// 14 knows neither f16c nor AMX): the CPUID bit, and the register state the
// OS enables in XCR0 (AVX: XMM and YMM, bits 1-2; AMX: XTILECFG and
// XTILEDATA, bits 17-18), as the SDM describes them.
enum Reg { kEax, kEbx, kEcx, kEdx };

bool cpuid_bit(unsigned leaf, unsigned subleaf, Reg reg, int bit) {
  unsigned r[4] = {};
  if (!__get_cpuid_count(leaf, subleaf, &r[kEax], &r[kEbx], &r[kEcx], &r[kEdx])) return false;
  return (r[reg] >> bit) & 1u;
}

bool os_enables(unsigned long long state) {
  if (!cpuid_bit(1, 0, kEcx, 27)) return false;  // OSXSAVE: XGETBV is available
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const unsigned long long xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  return (xcr0 & state) == state;
}

constexpr unsigned long long kAvxState = 0x6, kAmxState = 0x3ull << 17;
#endif

}  // namespace

std::span<const CpuFeatureInfo> cpu_feature_table() { return kFeatures; }

const char* cpu_feature_name(CpuFeature f) {
  for (const CpuFeatureInfo& i : kFeatures)
    if (i.feature == f) return i.name;
  return "?";
}

std::optional<CpuFeature> find_cpu_feature(std::string_view name) {
  for (const CpuFeatureInfo& i : kFeatures)
    if (iequal(i.name, name)) return i.feature;
  return std::nullopt;
}

bool cpu_has(CpuFeature f) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports takes a string literal: one case per feature.
  switch (f) {
    case CpuFeature::kSse2:
      return __builtin_cpu_supports("sse2") != 0;
    case CpuFeature::kSse3:
      return __builtin_cpu_supports("sse3") != 0;
    case CpuFeature::kSsse3:
      return __builtin_cpu_supports("ssse3") != 0;
    case CpuFeature::kSse41:
      return __builtin_cpu_supports("sse4.1") != 0;
    case CpuFeature::kSse42:
      return __builtin_cpu_supports("sse4.2") != 0;
    case CpuFeature::kAvx:
      return __builtin_cpu_supports("avx") != 0;
    case CpuFeature::kFma:
      return __builtin_cpu_supports("fma") != 0;
    case CpuFeature::kFma4:
      return __builtin_cpu_supports("fma4") != 0;
    case CpuFeature::kF16c:
      return cpuid_bit(1, 0, kEcx, 29) && os_enables(kAvxState);
    case CpuFeature::kBmi:
      return __builtin_cpu_supports("bmi") != 0;
    case CpuFeature::kBmi2:
      return __builtin_cpu_supports("bmi2") != 0;
    case CpuFeature::kAvx2:
      return __builtin_cpu_supports("avx2") != 0;
    case CpuFeature::kAvx512F:
      return __builtin_cpu_supports("avx512f") != 0;
    case CpuFeature::kAvx512Dq:
      return __builtin_cpu_supports("avx512dq") != 0;
    case CpuFeature::kAvx512Bw:
      return __builtin_cpu_supports("avx512bw") != 0;
    case CpuFeature::kAvx512Vl:
      return __builtin_cpu_supports("avx512vl") != 0;
    case CpuFeature::kAvx512Pf:
      return __builtin_cpu_supports("avx512pf") != 0;
    case CpuFeature::kAvx512Vnni:
      return __builtin_cpu_supports("avx512vnni") != 0;
    case CpuFeature::kAvx512Bf16:
      return __builtin_cpu_supports("avx512bf16") != 0;
    case CpuFeature::kAmxTile:
      return cpuid_bit(7, 0, kEdx, 24) && os_enables(kAmxState);
    case CpuFeature::kAmxBf16:
      return cpuid_bit(7, 0, kEdx, 22) && os_enables(kAmxState);
  }
#else
  (void)f;
#endif
  return false;
}

std::string missing_cpu_features(const std::vector<CpuFeature>& needs) {
  std::string missing;
  for (CpuFeature f : needs) {
    if (cpu_has(f)) continue;
    std::string name = cpu_feature_name(f);
    for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    missing += (missing.empty() ? "" : ", ") + name;
  }
  return missing;
}

}  // namespace kc
