// The worker process (kc/isolate.h): a kernel that crashes, hangs, blows up
// its memory or writes outside its buffers becomes an Outcome with a named
// signature, and kc's own process carries on. Every misbehaviour here is real
// (a null write, an infinite loop, a write one element past the end), run in
// a forked worker.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "kc/child.h"
#include "kc/engine.h"
#include "kc/isolate.h"

namespace kc::isolate {
namespace {

class FnImpl : public Impl {
 public:
  explicit FnImpl(std::function<Status(Call&)> fn, std::string backend = "test") : fn_(std::move(fn)) {
    decl_.name = "test.scal";
    decl_.op = "scal";
    decl_.backend = std::move(backend);
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Declaration& mutable_declaration() { return decl_; }
  Status run(Call& call) const override { return fn_(call); }

 private:
  Declaration decl_;
  std::function<Status(Call&)> fn_;
};

/// scal's layout: x {n}, in and out.
Call scal_call(std::int64_t n) {
  Call c;
  c.op = "scal";
  c.names = {"x"};
  c.roles = {Role::kInOut};
  c.tensors.emplace_back(DType::kF32, std::vector<std::int64_t>{n});
  for (std::int64_t i = 0; i < n; ++i) c.tensors[0].set(i, static_cast<double>(i));
  return c;
}

/// A real SIGSEGV: a store to a page mapped PROT_NONE (not a null store,
/// which UBSan would report and turn into exit(1) before the fault).
Status write_to_forbidden_page() {
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return Status(StatusCode::kInternal, "mmap failed");
  *static_cast<volatile int*>(page) = 1;
  return ok_status();
}

Status doubler(Call& c) {
  Tensor& x = c.t("x");
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, 2 * x.at(i));
  return ok_status();
}

Outcome run_once(const Impl& impl, Call& call, Limits limits = {}) {
  Worker w(impl, Mode::kProcess, limits);
  EXPECT_TRUE(w.prepare(call).ok());
  return w.run(call);
}

// A plugin that starts CUDA itself (extra device_runtime = cuda) runs in a
// worker, which starts CUDA after the fork, on a device. Once CUDA runs in
// kc's own process (the cuda backend's impls), a worker forked from it could
// not use CUDA: the call is refused with the reason instead of crashing.
TEST(Isolate, ACudaPluginRunsInAWorkerUntilCudaRunsInKcsProcess) {
  FnImpl impl(doubler, "plugin");
  impl.mutable_declaration().extra[std::string(kDeviceRuntimeKey)] = "cuda";
  // What the plugin backend declares for such a library (plugin_test.cpp).
  impl.mutable_declaration().runtime = {true, false, "the plugin starts CUDA in its worker process"};
  Call call = scal_call(8);
  {
    Worker w(impl, Mode::kProcess, Limits{});
    EXPECT_TRUE(w.in_process_reason().empty()) << w.in_process_reason();
    ASSERT_TRUE(w.prepare(call).ok());
    const Outcome o = w.run(call);
    ASSERT_TRUE(o.status.ok()) << o.status.message();
    EXPECT_EQ(call.t("x").at(3), 6.0);
  }
  note_runtime_started("cuda");
  Worker w(impl, Mode::kProcess, Limits{});
  const Outcome o = w.run(call);
  ASSERT_TRUE(o.failure);
  EXPECT_EQ(o.failure->name, "WORKER_FAILED");
  EXPECT_NE(o.status.message().find("cuda was started in kc's process"), std::string::npos) << o.status.message();
  EXPECT_EQ(call.t("x").at(3), 6.0);  // not run again
}

TEST(Isolate, AHonestKernelsResultComesBack) {
  const FnImpl impl(doubler);
  Call call = scal_call(1000);
  Worker w(impl, Mode::kProcess, Limits{});
  ASSERT_TRUE(w.prepare(call).ok());
  const Outcome o = w.run(call);
  EXPECT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_FALSE(o.failure);
  EXPECT_TRUE(w.isolated());
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(call.t("x").at(i), 2.0 * i);
  // A second call of the same layout reuses the worker.
  const Outcome again = w.run(call);
  EXPECT_TRUE(again.status.ok());
  EXPECT_EQ(call.t("x").at(7), 28.0);
  EXPECT_EQ(w.spawned(), 1);
}

// A case's configs differ in layout (shapes, strides, config): the running
// worker takes each new one on (new guarded buffers) instead of kc forking a
// new worker per layout, and every result still comes back right.
TEST(Isolate, OneWorkerServesEveryLayoutOfItsCase) {
  const FnImpl impl(doubler);
  Worker w(impl, Mode::kProcess, Limits{});
  int layouts = 0;
  std::string last;
  for (std::int64_t n : {8, 1000, 3, 1000, 70000}) {
    Call call = scal_call(n);
    call.config.params["n"] = std::to_string(n);
    const std::string key = std::to_string(n);
    if (key != last) ++layouts;
    last = key;
    ASSERT_TRUE(w.prepare(call).ok());
    const Outcome o = w.run(call);
    ASSERT_FALSE(o.failure) << "n=" << n << ": " << o.status.message();
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(call.t("x").at(i), 2.0 * i) << "n=" << n << " i=" << i;
  }
  EXPECT_EQ(w.spawned(), 1);
  EXPECT_EQ(w.relayouts(), layouts - 1);
}

// After a layout change the guards sit around the new buffers: a write one
// past the end of the smaller tensor is caught, and the next layout still runs.
TEST(Isolate, TheGuardsFollowTheNewLayout) {
  const FnImpl impl([](Call& c) {
    Tensor& x = c.t("x");
    if (x.numel() == 5) x.data<float>()[5] = 1.0f;
    return doubler(c);
  });
  Worker w(impl, Mode::kProcess, Limits{});
  Call big = scal_call(4096);
  ASSERT_FALSE(w.run(big).failure);
  Call small = scal_call(5);
  const Outcome o = w.run(small);
  ASSERT_TRUE(o.failure);
  EXPECT_EQ(o.failure->to_string(), "GUARD_OVERWRITTEN(x, after)") << o.status.message();
  EXPECT_EQ(w.relayouts(), 1);
  Call next = scal_call(64);
  EXPECT_FALSE(w.run(next).failure);
  EXPECT_EQ(next.t("x").at(9), 18.0);
}

// A layout larger than the region kc shares with the running worker gets a
// new worker; the calls' results are the same either way.
TEST(Isolate, ALayoutTooLargeForTheWorkerGetsANewOne) {
  const FnImpl impl(doubler);
  Worker w(impl, Mode::kProcess, Limits{});
  Call small = scal_call(16);
  ASSERT_FALSE(w.run(small).failure);
  Call huge = scal_call(std::int64_t{20} << 20);  // 80 MiB of floats
  ASSERT_FALSE(w.run(huge).failure);
  EXPECT_EQ(huge.t("x").at(12345), 24690.0);
  EXPECT_EQ(w.spawned(), 2);
  EXPECT_EQ(w.relayouts(), 0);
}

TEST(Isolate, TheKernelRunsOutsideKcsProcess) {
  static int touched = 0;  // in the worker, a copy of this is changed
  const FnImpl impl([](Call& c) {
    touched = 1;
    return doubler(c);
  });
  Call call = scal_call(16);
  EXPECT_TRUE(run_once(impl, call).status.ok());
  EXPECT_EQ(touched, 0);

  Worker in_process(impl, Mode::kNone, Limits{});
  EXPECT_FALSE(in_process.isolated());
  EXPECT_TRUE(in_process.run(call).status.ok());
  EXPECT_EQ(touched, 1);
}

TEST(Isolate, ASegfaultIsACrashVerdictNotADeadKc) {
  const FnImpl impl([](Call&) { return write_to_forbidden_page(); });
  Call call = scal_call(16);
  const Outcome o = run_once(impl, call);
  ASSERT_TRUE(o.failure);
  EXPECT_EQ(o.failure->to_string(), "CRASH(SIGSEGV)");
  EXPECT_EQ(o.status.code(), StatusCode::kCrashed);
}

TEST(Isolate, AbortAndExitAreNamed) {
  Call call = scal_call(16);
  const FnImpl aborts([](Call&) -> Status { std::abort(); });
  EXPECT_EQ(run_once(aborts, call).failure->to_string(), "CRASH(SIGABRT)");
  const FnImpl exits([](Call&) -> Status { std::exit(3); });
  EXPECT_EQ(run_once(exits, call).failure->to_string(), "CRASH(exit 3)");
  const FnImpl throws([](Call&) -> Status { throw std::runtime_error("boom"); });
  const Outcome t = run_once(throws, call);
  ASSERT_TRUE(t.failure);
  EXPECT_EQ(t.failure->to_string(), "CRASH(exception)");
  EXPECT_NE(t.status.message().find("boom"), std::string::npos) << t.status.message();
}

TEST(Isolate, AHangIsATimeout) {
  const FnImpl impl([](Call&) {
    std::atomic<bool> forever{true};
    while (forever.load()) {
    }
    return ok_status();
  });
  Call call = scal_call(16);
  Limits limits;
  limits.timeout_s = 0.5;
  const Outcome o = run_once(impl, call, limits);
  ASSERT_TRUE(o.failure);
  EXPECT_EQ(o.failure->name, "TIMEOUT");
  EXPECT_EQ(o.status.code(), StatusCode::kDeadlineExceeded);
}

TEST(Isolate, AWriteOnePastTheEndIsCaughtByTheGuard) {
  // One float past the end lands in the canary gap or on the guard page,
  // depending on alignment: either way it is GUARD_OVERWRITTEN(x, after).
  for (std::int64_t n : {1024, 1023, 1}) {
    const FnImpl impl([](Call& c) {
      Tensor& x = c.t("x");
      float* p = x.data<float>();
      p[x.numel()] = 42.0f;
      return ok_status();
    });
    Call call = scal_call(n);
    const Outcome o = run_once(impl, call);
    ASSERT_TRUE(o.failure) << "n=" << n;
    EXPECT_EQ(o.failure->to_string(), "GUARD_OVERWRITTEN(x, after)") << "n=" << n << ": " << o.status.message();
  }
}

TEST(Isolate, AWriteBeforeTheStartIsCaught) {
  const FnImpl impl([](Call& c) {
    c.t("x").data<float>()[-1] = 1.0f;
    return ok_status();
  });
  Call call = scal_call(64);
  const Outcome o = run_once(impl, call);
  ASSERT_TRUE(o.failure);
  EXPECT_EQ(o.failure->to_string(), "GUARD_OVERWRITTEN(x, before)") << o.status.message();
}

TEST(Isolate, AMemoryBlowUpIsAResourceLimit) {
  const FnImpl impl([](Call& c) {
    std::vector<std::vector<char>> hog;
    for (int i = 0; i < 64; ++i) hog.emplace_back(std::size_t{64} << 20, static_cast<char>(i + 1));
    c.t("x").set(0, static_cast<double>(hog.size()));
    return ok_status();
  });
  Call call = scal_call(16);
  Limits limits;
  limits.memory_bytes = std::int64_t{256} << 20;
  const Outcome o = run_once(impl, call, limits);
  ASSERT_TRUE(o.failure) << "4 GiB allocated under a 256 MiB limit went unnoticed";
  EXPECT_EQ(o.failure->to_string(), "MEMORY_LIMIT(256MiB)") << o.status.message();
  EXPECT_EQ(o.status.code(), StatusCode::kResourceExhausted);
}

TEST(Isolate, AfterAFailureTheNextCallGetsAFreshWorker) {
  // Each worker is a fresh fork of this process, so "first call" is counted in
  // a shared mapping every fork inherits (a file would not do: the kernel
  // cannot write outside its private scratch /tmp): the first worker dies,
  // the second finds the count and computes.
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* calls = static_cast<std::atomic<int>*>(shared);
  calls->store(0);
  const FnImpl impl([calls](Call& c) {
    if (calls->fetch_add(1) > 0) return doubler(c);
    std::abort();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, Limits{});
  ASSERT_TRUE(w.prepare(call).ok());
  EXPECT_TRUE(w.run(call).failure);
  const Outcome second = w.run(call);
  EXPECT_FALSE(second.failure) << second.status.message();
  EXPECT_EQ(call.t("x").at(3), 6.0);
  EXPECT_EQ(w.spawned(), 2);
  munmap(shared, 4096);
}

TEST(Isolate, TheKernelsOwnErrorsPassThrough) {
  const FnImpl impl([](Call&) { return Status(StatusCode::kUnimplemented, "no such path"); });
  Call call = scal_call(8);
  const Outcome o = run_once(impl, call);
  EXPECT_FALSE(o.failure);
  EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(o.status.message(), "no such path");
}

TEST(Isolate, ByteSizes) {
  EXPECT_EQ(parse_bytes("4G"), std::int64_t{4} << 30);
  EXPECT_EQ(parse_bytes("512M"), std::int64_t{512} << 20);
  EXPECT_EQ(parse_bytes("1.5GiB"), std::int64_t{3} << 29);
  EXPECT_EQ(parse_bytes("65536"), 65536);
  EXPECT_FALSE(parse_bytes("lots"));
  EXPECT_FALSE(parse_bytes("-1G"));
  EXPECT_EQ(format_bytes(std::int64_t{4} << 30), "4GiB");
  EXPECT_EQ(format_bytes(std::int64_t{256} << 20), "256MiB");
}

// Through the engine: a crashing impl is an error verdict with its signature
// and a repro; the other cases of the same check still run and are recorded.
TEST(IsolateEngine, ACrashingImplIsAnErrorVerdictAndTheRunGoesOn) {
  const char* kContract = R"(contract T-SCAL {
  scope      scal
  pre        precision(x) in {FP32}
  post       output x satisfies elementwise_close(x, ref(x))
  tolerance  relative 1e-6
  reference  higher_precision FP64
  measure    sample 2 random inputs per config
  violation  signature TOLERANCE_EXCEEDED
}
)";
  auto parsed = lang::parse_text(kContract, "t.kc");
  ASSERT_TRUE(parsed.diagnostics.empty() || !parsed.document.contracts.empty());
  ASSERT_EQ(parsed.document.contracts.size(), 1u);
  const Contract& contract = parsed.document.contracts[0];
  const BackendInfo info{"test", true, "", "", ""};

  const FnImpl crashing([](Call&) { return write_to_forbidden_page(); });
  engine::CheckRequest req;
  const engine::CaseResult crashed = engine::run_case(contract, "t.kc", crashing, info, req);
  EXPECT_EQ(crashed.verdict, engine::Verdict::kError) << crashed.reason;
  ASSERT_FALSE(crashed.signatures.empty());
  EXPECT_EQ(crashed.signatures.front().to_string(), "CRASH(SIGSEGV)");
  EXPECT_FALSE(crashed.repro.empty());

  const FnImpl honest([](Call& c) {
    Tensor& x = c.t("x");
    const double alpha = c.get_double("alpha", 1.5);
    for (std::int64_t i = 0; i < x.numel(); ++i)
      x.set(i, static_cast<float>(static_cast<float>(alpha) * static_cast<float>(x.at(i))));
    return ok_status();
  });
  const engine::CaseResult fine = engine::run_case(contract, "t.kc", honest, info, req);
  EXPECT_EQ(fine.verdict, engine::Verdict::kConforming) << fine.reason;
}

}  // namespace
}  // namespace kc::isolate
