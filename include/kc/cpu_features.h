// kc — the CPU features kc can name, and whether this CPU has them.
//
// One table serves every place a kernel's needs are matched against the host:
// the `device_capability` declaration (kc/capability.h), the OpenBLAS core
// types and BLIS sub-configurations kc loads copies of, and the SIMD variants'
// manifests. Names are GCC's (__builtin_cpu_supports, -m flags): sse4.2, fma,
// avx512f, amx-tile; matched case-insensitively.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kc {

enum class CpuFeature {
  kSse2,
  kSse3,
  kSsse3,
  kSse41,
  kSse42,
  kAvx,
  kFma,
  kFma4,
  kF16c,
  kBmi,
  kBmi2,
  kAvx2,
  kAvx512F,
  kAvx512Dq,
  kAvx512Bw,
  kAvx512Vl,
  kAvx512Pf,
  kAvx512Vnni,
  kAvx512Bf16,
  kAmxTile,
  kAmxBf16,
};

struct CpuFeatureInfo {
  CpuFeature feature;
  const char* name;  ///< GCC's spelling: "sse4.2", "avx512f", "amx-tile"
};

/// Every feature kc can name, in the table's order.
std::span<const CpuFeatureInfo> cpu_feature_table();
const char* cpu_feature_name(CpuFeature f);
/// The feature named `name` (case-insensitive), or nullopt.
std::optional<CpuFeature> find_cpu_feature(std::string_view name);
/// Whether this CPU has `f` and its OS enables the register state it needs
/// (libgcc's detection asks XGETBV for AVX and AVX-512). False off x86.
bool cpu_has(CpuFeature f);
/// The features of `needs` this CPU lacks, upper-cased and comma-separated
/// ("AVX512F, FMA4"); empty when it has them all.
std::string missing_cpu_features(const std::vector<CpuFeature>& needs);

}  // namespace kc
