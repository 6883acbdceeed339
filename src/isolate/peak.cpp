// kc — physical floors on kernel time (see kc/peak.h).
#include "kc/peak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace kc {

namespace {

using V4 = float __attribute__((vector_size(16)));

// Multiply-add throughput of one thread on 12 independent 4-lane chains (the
// x86-64 baseline SSE width; mul and add are separate instructions without
// -mfma). Compiled optimised whatever the build type, so a debug build does
// not under-measure and make honest kernels look impossibly fast.
#if defined(__clang__)
#define KC_OPTIMISED __attribute__((noinline))
#else
#define KC_OPTIMISED __attribute__((noinline, optimize("O2")))
#endif
KC_OPTIMISED double measure_madd_rate() {
  volatile float seed = 1.0f, scale = 0.999999f, shift = 1e-7f;
  V4 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = V4{seed, seed, seed, seed} + static_cast<float>(j);
  const V4 m = {scale, scale, scale, scale};
  const V4 c = {shift, shift, shift, shift};
  constexpr long kIters = 100000;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < kIters; ++i) {
      for (int j = 0; j < 12; ++j) acc[j] = acc[j] * m + c;
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt > 0) best = std::max(best, kIters * 12.0 * 4.0 / dt);
  }
  float sink = 0;
  for (int j = 0; j < 12; ++j) sink += acc[j][0];
  volatile float keep = sink;
  (void)keep;
  return best;
}

// Write bandwidth of one thread into an L1-resident buffer (the fastest level).
double measure_write_rate() {
  std::vector<unsigned char> buf(16 * 1024);
  volatile unsigned char* sink = buf.data();
  double best = 0;
  constexpr int kIters = 4000;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; ++i) {
      std::memset(buf.data(), i & 0xFF, buf.size());
      __asm__ volatile("" : : "r"(buf.data()) : "memory");
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt > 0) best = std::max(best, static_cast<double>(kIters) * buf.size() / dt);
  }
  (void)sink[0];
  return best;
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

const HostPeak& host_peak() {
  static const HostPeak peak = [] {
    HostPeak p;
    const double hw = std::max(1u, std::thread::hardware_concurrency());
    // The widest x86 core (AVX-512, two FMA units) does 32 fp32 multiply-adds
    // a cycle, 8x the 4 a cycle the 4-lane mul+add loop reaches; x16 leaves a
    // further factor 2. Every hardware thread counted as a full core. Floored
    // at 2 GHz x 32 per thread, so a loaded machine cannot under-measure.
    const double madd = measure_madd_rate();
    p.multiply_adds_per_s = std::max(madd * 16, 2e9 * 32) * hw;
    // L1 stores: x2 for the store ports a memset may not use, per thread;
    // floored at 32 GB/s per thread.
    const double write = measure_write_rate();
    p.bytes_per_s = std::max(write * 2, 32e9) * hw;
    p.basis = "measured " + fmt_g(madd) + " multiply-adds/s and " + fmt_g(write) +
              " B/s written per thread; bounds " + fmt_g(p.multiply_adds_per_s) + "/s and " +
              fmt_g(p.bytes_per_s) + " B/s over " + fmt_g(hw) + " hardware thread(s)";
    return p;
  }();
  return peak;
}

TimeFloor time_floor(const Call& call, const HostPeak& peak) {
  double written = 0;
  for (std::size_t i = 0; i < call.tensors.size(); ++i) {
    if (call.roles[i] != Role::kOut) continue;
    const Tensor& t = call.tensors[i];
    written += static_cast<double>(t.numel()) * dtype_info(t.dtype()).storage_bytes;
  }
  // The op's work model (Op::multiply_adds, in its folder); an op kc does not
  // know has none, and its floor rests on the bytes alone.
  const Op* op = builtin_ops().find(call.op);
  const double madds = op ? op->multiply_adds(call) : 0;
  TimeFloor f;
  const double by_bytes = peak.bytes_per_s > 0 ? written / peak.bytes_per_s : 0;
  const double by_madds = peak.multiply_adds_per_s > 0 ? madds / peak.multiply_adds_per_s : 0;
  if (by_madds >= by_bytes) {
    f.seconds = by_madds;
    f.basis = fmt_g(madds) + " multiply-adds at <= " + fmt_g(peak.multiply_adds_per_s) + "/s";
  } else {
    f.seconds = by_bytes;
    f.basis = fmt_g(written) + " output bytes at <= " + fmt_g(peak.bytes_per_s) + " B/s";
  }
  if (f.seconds < 1e-6) f = TimeFloor{};
  return f;
}

}  // namespace kc
