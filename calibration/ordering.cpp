// kc — calibration trios for the ordering contract classes:
//   C-ORD-01 reduction-order bound     (row mean over a space of block / thread schedules)
//   C-ORD-02 determinism class         (sum on real threads, declared BITWISE)
//   C-ORD-03 communication overlap     (all_reduce over K simulated ranks, ring and tree)
// Each kernel computes for real; the bad ones carry one documented defect
// (docs/classes/C-ORD-0*.md).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

/// The logical elements of a (possibly strided) FP32 vector, in order.
std::vector<float> elements_of(const Tensor& x) {
  std::vector<float> v(static_cast<std::size_t>(x.numel()));
  for (std::int64_t i = 0; i < x.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(x.at(i));
  return v;
}

/// Left-to-right FP32 sum of v[lo, hi).
float serial_sum(const std::vector<float>& v, std::size_t lo, std::size_t hi) {
  float acc = 0;
  for (std::size_t i = lo; i < hi; ++i) acc += v[i];
  return acc;
}

/// Bounds of chunk c when n elements are cut into `chunks` contiguous near-equal chunks.
std::size_t chunk_lo(std::size_t n, std::size_t chunks, std::size_t c) { return c * n / chunks; }

/// Every chunk summed in FP32 on its own std::thread; partial[t] is thread t's.
std::vector<float> thread_partials(const std::vector<float>& v, std::size_t threads) {
  std::vector<float> partial(threads, 0.0f);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      partial[t] = serial_sum(v, chunk_lo(v.size(), threads, t), chunk_lo(v.size(), threads, t + 1));
    });
  for (auto& th : pool) th.join();
  return partial;
}

// ---------------------------------------------------------------- C-ORD-01

/// Pairwise (cascade) summation: halves summed recursively, 8 terms serially at the leaves.
float pairwise_sum(const std::vector<float>& v, std::size_t lo, std::size_t hi) {
  if (hi - lo <= 8) return serial_sum(v, lo, hi);
  const std::size_t mid = lo + (hi - lo) / 2;
  return pairwise_sum(v, lo, mid) + pairwise_sum(v, mid, hi);
}

enum class OrderDefect {
  kNone,
  kFp16PartialsAt8,   ///< the threads8 schedule parks its per-thread partials in an FP16 workspace
  kLastBlockDropped,  ///< the blocked schedules' combine stops one block early
};

/// The threads<t> schedule over a whole {rows, cols} matrix: thread t sums
/// chunk t of every row (one std::thread each); partial[r * t + j] is thread
/// j's sum over row r.
std::vector<float> row_thread_partials(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                       std::size_t threads) {
  std::vector<float> partial(rows * threads, 0.0f);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t r = 0; r < rows; ++r)
        partial[r * threads + t] =
            serial_sum(x, r * cols + chunk_lo(cols, threads, t), r * cols + chunk_lo(cols, threads, t + 1));
    });
  for (auto& th : pool) th.join();
  return partial;
}

/// Row mean over a schedule space: serial, pairwise, block<b> (contiguous
/// blocks of b summed in FP32, then the block partials in order) and
/// threads<t> (t contiguous chunks, one std::thread each, partials combined in
/// thread order); the FP32 row sum is then divided by cols. Every schedule is
/// a valid FP32 reduction order of the same terms.
Status scheduled_mean(Call& call, const std::string& default_schedule, OrderDefect defect) {
  const Tensor& xt = call.t("x");
  if (xt.dtype() != DType::kF32) return unimplemented("calibration reductions are FP32 only");
  const std::vector<float> x = elements_of(xt);
  const std::size_t rows = static_cast<std::size_t>(xt.dim(0)), cols = static_cast<std::size_t>(xt.dim(1));
  const std::string schedule = call.get("schedule", default_schedule);
  std::vector<float> sums(rows, 0.0f);
  if (schedule == "serial" || schedule == "pairwise") {
    auto row_sum = schedule == "serial" ? serial_sum : pairwise_sum;
    for (std::size_t r = 0; r < rows; ++r) sums[r] = row_sum(x, r * cols, (r + 1) * cols);
  } else if (schedule == "block32" || schedule == "block256") {
    const std::size_t b = schedule == "block32" ? 32 : 256;
    const std::size_t blocks = (cols + b - 1) / b;
    const std::size_t combined = defect == OrderDefect::kLastBlockDropped && blocks > 1 ? blocks - 1 : blocks;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t k = 0; k < combined; ++k)
        sums[r] += serial_sum(x, r * cols + k * b, r * cols + std::min(cols, (k + 1) * b));
  } else if (schedule == "threads4" || schedule == "threads8") {
    const std::size_t t = schedule == "threads4" ? 4 : 8;
    std::vector<float> partial = row_thread_partials(x, rows, cols, t);
    // The defect: a half-precision workspace rounds every thread's partial to FP16.
    if (defect == OrderDefect::kFp16PartialsAt8 && t == 8)
      for (float& p : partial) p = static_cast<float>(round_to(p, DType::kF16));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < t; ++j) sums[r] += partial[r * t + j];
  } else {
    return unimplemented("schedule '" + schedule + "' is not in this kernel's space");
  }
  Tensor& out = call.t("out");
  for (std::size_t r = 0; r < rows; ++r)
    out.set(static_cast<std::int64_t>(r), sums[r] / static_cast<float>(cols));
  return ok_status();
}

void add_order_trio(ImplList& out) {
  auto decl = [](const char* name, const char* description, std::vector<std::string> schedules) {
    Declaration d = calib_decl(name, "mean", description);
    d.schedules = std::move(schedules);
    return d;
  };
  const std::vector<std::string> space = {"serial", "pairwise", "block32", "block256", "threads4", "threads8"};
  add(out,
      decl("calib.mean_blocked_droplast",
           "C-ORD-01 baseline: blocked row mean whose combine over block partials stops one block early",
           {"block32", "block256"}),
      [](Call& call) { return scheduled_mean(call, "block256", OrderDefect::kLastBlockDropped); });
  add(out,
      decl("calib.mean_fp16_partials",
           "C-ORD-01 bad: row mean whose threads8 schedule keeps per-thread partial sums in an FP16 workspace",
           space),
      [](Call& call) { return scheduled_mean(call, "threads8", OrderDefect::kFp16PartialsAt8); });
  add(out,
      decl("calib.mean_scheduled", "C-ORD-01 good: row mean with FP32 partial sums in every schedule", space),
      [](Call& call) { return scheduled_mean(call, "threads8", OrderDefect::kNone); });
}

// ---------------------------------------------------------------- C-ORD-02

constexpr std::size_t kThreads = 4;

/// Atomic-add reduction, the CPU spelling of a CUDA atomicAdd into one
/// accumulator: kThreads std::threads, held at a start gate until all exist,
/// each add their elements one by one into a shared std::atomic<float>. The
/// additions land in whatever order the threads interleave, and FP32 addition
/// is not associative, so the bits of the total depend on thread scheduling.
/// Needs two or more hardware threads to interleave (docs/classes/C-ORD-02.md).
Status atomic_sum(Call& call) {
  if (call.t("x").dtype() != DType::kF32) return unimplemented("calibration sums are FP32 only");
  const std::vector<float> v = elements_of(call.t("x"));
  std::atomic<float> total{0.0f};
  std::atomic<std::size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(kThreads);
  for (std::size_t t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
        // Busy-wait: the threads that hold a core leave the gate together.
      }
      for (std::size_t i = chunk_lo(v.size(), kThreads, t); i < chunk_lo(v.size(), kThreads, t + 1); ++i)
        total.fetch_add(v[i]);
    });
  while (ready.load() < kThreads) std::this_thread::yield();
  go.store(true);
  for (auto& th : pool) th.join();
  call.t("out").set(0, total.load());
  return ok_status();
}

/// Threaded sum with a fixed combine: every thread writes its chunk's partial
/// into its own slot and the caller adds the slots in thread order after the
/// join. `first_only` is the baseline's defect: the combine returns slot 0.
Status ordered_threads_sum(Call& call, bool first_only) {
  if (call.t("x").dtype() != DType::kF32) return unimplemented("calibration sums are FP32 only");
  const std::vector<float> partial = thread_partials(elements_of(call.t("x")), kThreads);
  float total = 0;
  for (std::size_t t = 0; t < (first_only ? 1 : partial.size()); ++t) total += partial[t];
  call.t("out").set(0, total);
  return ok_status();
}

void add_determinism_trio(ImplList& out) {
  // All three declare determinism BITWISE (the calib_decl default).
  add(out,
      calib_decl("calib.sum_threads_firstonly", "sum",
                 "C-ORD-02 baseline: 4-thread sum whose combine returns the first thread's partial only"),
      [](Call& call) { return ordered_threads_sum(call, true); });
  add(out,
      calib_decl("calib.sum_atomic", "sum",
                 "C-ORD-02 bad: 4-thread atomic-add sum (order set by thread scheduling) declared BITWISE"),
      atomic_sum);
  add(out,
      calib_decl("calib.sum_threads_ordered", "sum",
                 "C-ORD-02 good: 4-thread sum with per-thread slots combined in thread order"),
      [](Call& call) { return ordered_threads_sum(call, false); });
}

// ---------------------------------------------------------------- C-ORD-03

/// K ranks' FP32 buffers and the wire between them. A message is rounded to
/// the wire format when it is sent (FP32: sent as is; FP16: a compressing
/// transport); what a rank holds itself is never rounded.
class Ranks {
 public:
  Ranks(const Tensor& x, DType wire) : wire_(wire) {
    const std::int64_t k = x.dim(0), n = x.dim(1);
    buf_.assign(static_cast<std::size_t>(k), std::vector<float>(static_cast<std::size_t>(n)));
    for (std::int64_t r = 0; r < k; ++r)
      for (std::int64_t i = 0; i < n; ++i) buf_[r][i] = static_cast<float>(x.at(r * n + i));
  }
  std::size_t size() const { return buf_.size(); }
  std::size_t n() const { return buf_.front().size(); }

  /// The message rank `from` sends: elements [lo, hi) of its buffer, as the wire carries them.
  std::vector<float> send(std::size_t from, std::size_t lo, std::size_t hi) const {
    std::vector<float> msg(buf_[from].begin() + lo, buf_[from].begin() + hi);
    if (wire_ != DType::kF32)
      for (float& m : msg) m = static_cast<float>(round_to(m, wire_));
    return msg;
  }
  void add_into(std::size_t to, std::size_t lo, const std::vector<float>& msg) {
    for (std::size_t i = 0; i < msg.size(); ++i) buf_[to][lo + i] += msg[i];
  }
  void copy_into(std::size_t to, std::size_t lo, const std::vector<float>& msg) {
    std::copy(msg.begin(), msg.end(), buf_[to].begin() + static_cast<std::ptrdiff_t>(lo));
  }
  void write(Tensor& out) const {
    for (std::size_t r = 0; r < size(); ++r)
      for (std::size_t i = 0; i < n(); ++i) out.set(static_cast<std::int64_t>(r * n() + i), buf_[r][i]);
  }

 private:
  DType wire_;
  std::vector<std::vector<float>> buf_;
};

/// Ring all-reduce (NCCL's): reduce-scatter in K - 1 steps, in which rank r
/// sends chunk (r - s) mod K to rank r + 1, which adds it to its own copy (all
/// sends of a step happen before any receive), leaving chunk (r + 1) mod K
/// complete on rank r; then an all-gather in K - 1 steps, forwarding complete
/// chunks around the ring. `skip_gather` is the baseline's defect.
void ring_all_reduce(Ranks& ranks, bool skip_gather) {
  const std::size_t k = ranks.size(), n = ranks.n();
  auto lo = [&](std::size_t c) { return chunk_lo(n, k, c); };
  auto step = [&](std::size_t s, bool gather) {
    std::vector<std::vector<float>> msgs(k);
    for (std::size_t r = 0; r < k; ++r) {
      const std::size_t c = (r + k - s + (gather ? 1 : 0)) % k;
      msgs[r] = ranks.send(r, lo(c), lo(c + 1));
    }
    for (std::size_t r = 0; r < k; ++r) {
      const std::size_t c = (r + k - s + (gather ? 1 : 0)) % k, to = (r + 1) % k;
      if (gather) ranks.copy_into(to, lo(c), msgs[r]);
      else ranks.add_into(to, lo(c), msgs[r]);
    }
  };
  for (std::size_t s = 0; s + 1 < k; ++s) step(s, false);
  if (skip_gather) return;
  for (std::size_t s = 0; s + 1 < k; ++s) step(s, true);
}

/// Binomial-tree all-reduce: at stride 1, 2, 4, ... rank r (r mod 2s = 0)
/// adds rank r + s's partial sum; rank 0 then broadcasts the total back down
/// the same tree.
void tree_all_reduce(Ranks& ranks) {
  const std::size_t k = ranks.size(), n = ranks.n();
  std::size_t top = 1;
  for (; top < k; top *= 2)
    for (std::size_t r = 0; r + top < k; r += 2 * top) ranks.add_into(r, 0, ranks.send(r + top, 0, n));
  for (std::size_t s = top / 2; s >= 1; s /= 2)
    for (std::size_t r = 0; r + s < k; r += 2 * s) ranks.copy_into(r + s, 0, ranks.send(r, 0, n));
}

enum class WireDefect {
  kNone,
  kFp16Wire,    ///< every message is compressed to FP16
  kNoGather,    ///< the ring stops after its reduce-scatter
};

Status all_reduce(Call& call, WireDefect defect) {
  const Tensor& x = call.t("x");
  if (x.dtype() != DType::kF32) return unimplemented("calibration collectives are FP32 only");
  const std::string schedule = call.get("schedule", "ring");
  Ranks ranks(x, defect == WireDefect::kFp16Wire ? DType::kF16 : DType::kF32);
  if (schedule == "ring") ring_all_reduce(ranks, defect == WireDefect::kNoGather);
  else if (schedule == "tree") tree_all_reduce(ranks);
  else return unimplemented("schedule '" + schedule + "' is not in this kernel's space");
  ranks.write(call.t("out"));
  return ok_status();
}

void add_collective_trio(ImplList& out) {
  auto decl = [](const char* name, const char* description, std::vector<std::string> schedules) {
    Declaration d = calib_decl(name, "all_reduce", description);
    d.schedules = std::move(schedules);
    return d;
  };
  add(out,
      decl("calib.allreduce_ring_nogather",
           "C-ORD-03 baseline: ring all-reduce that stops after the reduce-scatter (no all-gather)", {"ring"}),
      [](Call& call) { return all_reduce(call, WireDefect::kNoGather); });
  add(out,
      decl("calib.allreduce_fp16_wire",
           "C-ORD-03 bad: ring / tree all-reduce that compresses every message to FP16 on the wire",
           {"ring", "tree"}),
      [](Call& call) { return all_reduce(call, WireDefect::kFp16Wire); });
  add(out,
      decl("calib.allreduce_fp32", "C-ORD-03 good: ring / tree all-reduce with FP32 messages",
           {"ring", "tree"}),
      [](Call& call) { return all_reduce(call, WireDefect::kNone); });
}

}  // namespace

void add_ordering_impls(ImplList& out) {
  add_order_trio(out);
  add_determinism_trio(out);
  add_collective_trio(out);
}

}  // namespace kc::calibration
