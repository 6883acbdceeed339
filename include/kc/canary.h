// kc — canary bands for device buffers (docs/isolation.md).
//
// A device backend cannot put a PROT_NONE page next to device memory the way
// the CPU worker does (src/isolate/guard.h), so it allocates every buffer
// larger, [front band | payload | back band], writes a position-dependent
// byte pattern into both bands before the kernel runs and compares them after.
// A changed band is reported as a Status whose message carries the same
// signature the CPU worker produces, GUARD_OVERWRITTEN(<tensor>, before|after);
// isolate::Worker turns such a Status into an error verdict with that
// signature (in a worker process and in-process alike).
//
// Header-only: used by backends (kc_backends, kc_opencl) and by src/isolate.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/model.h"
#include "kc/signature.h"
#include "kc/status.h"

namespace kc::canary {

/// Bytes of canary before and after every guarded device buffer (a multiple
/// of every OpenCL CL_DEVICE_MEM_BASE_ADDR_ALIGN seen in practice, so the
/// payload of an OpenCL buffer can be a sub-buffer at this origin).
inline constexpr std::size_t kBandBytes = 4096;

/// The canary byte at position i of a band. Front and back use different
/// seeds (a shifted copy of one band does not pass for the other); no byte is
/// 0x00 or 0xFF, so neither a memset to zero nor the NaN poison passes for it.
inline std::uint8_t band_byte(std::size_t i, bool back) {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u + (back ? 0x9E3779B9u : 0x7F4A7C15u);
  x ^= x >> 15;
  auto b = static_cast<std::uint8_t>(x & 0xFF);
  if (b == 0x00 || b == 0xFF) b = 0xA5;
  return b;
}

/// A whole band's pattern.
inline std::vector<std::uint8_t> band_pattern(bool back) {
  std::vector<std::uint8_t> p(kBandBytes);
  for (std::size_t i = 0; i < kBandBytes; ++i) p[i] = band_byte(i, back);
  return p;
}

/// The Status a backend returns when a band of buffer `tensor` changed:
/// kCrashed, message "GUARD_OVERWRITTEN(<tensor>, before|after): <detail>".
inline Status guard_overwritten(const std::string& tensor, bool after, const std::string& detail) {
  return Status(StatusCode::kCrashed,
                "GUARD_OVERWRITTEN(" + tensor + (after ? ", after): " : ", before): ") + detail);
}

/// Compares a band read back from the device with its pattern. OK when intact;
/// otherwise guard_overwritten() naming the bytes that changed. `payload_bytes`
/// is only used in the message.
inline Status check_band(const std::uint8_t* got, bool back, const std::string& tensor, std::size_t payload_bytes) {
  std::size_t changed = 0, first = kBandBytes, last = 0;
  for (std::size_t i = 0; i < kBandBytes; ++i) {
    if (got[i] != band_byte(i, back)) {
      ++changed;
      first = std::min(first, i);
      last = i;
    }
  }
  if (changed == 0) return ok_status();
  std::string where;
  if (back) {
    where = "bytes +" + std::to_string(first) + " to +" + std::to_string(last) + " past the end of device buffer '" +
            tensor + "' (" + std::to_string(payload_bytes) + " bytes)";
  } else {
    where = "bytes -" + std::to_string(kBandBytes - first) + " to -" + std::to_string(kBandBytes - last) +
            " before the start of device buffer '" + tensor + "'";
  }
  return guard_overwritten(tensor, back,
                           "the kernel wrote outside the buffer: canary " + where + ", " + std::to_string(changed) +
                               " of " + std::to_string(kBandBytes) + " canary bytes changed");
}

/// The signature carried by a guard_overwritten() Status (also after
/// with_context() prefixed it), or nullopt.
inline std::optional<Signature> guard_signature(const Status& s) {
  if (s.code() != StatusCode::kCrashed) return std::nullopt;
  static constexpr std::string_view kName = "GUARD_OVERWRITTEN(";
  const std::string& m = s.message();
  const auto at = m.find(kName);
  if (at == std::string::npos) return std::nullopt;
  const auto open = at + kName.size();
  const auto close = m.find(')', open);
  const auto comma = m.rfind(", ", close);
  if (close == std::string::npos || comma == std::string::npos || comma < open) return std::nullopt;
  return Signature{sig::kGuardOverwritten, {m.substr(open, comma - open), m.substr(comma + 2, close - comma - 2)}};
}

}  // namespace kc::canary
