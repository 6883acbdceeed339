// Shared by the tests that run impls of the built-in backend table (blas,
// eigen, compilers, onednn, torch, verify): the registry, a fixture that skips
// when a backend is unavailable, running a contract (written inline or shipped
// in the source tree) through the engine in worker processes as `kc check`
// does, and calling one impl directly on a prepared call.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/op.h"
#include "kc/rng.h"

namespace kc::backend_test {

/// The built-in backend table, registered once per test process.
inline BackendRegistry& registry() {
  static BackendRegistry* r = [] {
    auto* reg = new BackendRegistry();
    KC_CHECK(register_builtin_backends(*reg).ok());
    return reg;
  }();
  return *r;
}

/// The backend's probe result; `available` false (with the reason) when absent.
inline BackendInfo backend_info(const std::string& name) {
  for (const BackendInfo& info : registry().infos())
    if (info.name == name) return info;
  return BackendInfo{name, false, "", "no such backend", ""};
}

/// Fixture for one backend's tests: a test fails when the backend is missing
/// from the built-in table (every optional backend registers a stub when its
/// library is absent), and is skipped with the probe's reason when the
/// backend is there but unavailable.
class BackendTest : public ::testing::Test {
 protected:
  explicit BackendTest(std::string backend) : backend_(std::move(backend)) {}

  void SetUp() override {
    ASSERT_NE(registry().find_backend(backend_), nullptr) << backend_ << " is not in the backend table";
    const BackendInfo info = backend_info(backend_);
    if (!info.available) GTEST_SKIP() << backend_ << " unavailable: " << info.reason;
  }

 private:
  std::string backend_;
};

/// Runs contract `id` from `file` (a path below the source tree) against every
/// impl matching `impl_glob`; `samples`, when set, overrides the protocol's
/// sample count. Returns the cases that ran.
inline std::vector<engine::CaseResult> check_cases(const std::string& file, const std::string& id,
                                                   const std::string& impl_glob,
                                                   std::optional<std::int64_t> samples = std::nullopt) {
  engine::CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/" + file};
  request.contracts = {id};
  request.impls = {impl_glob};
  request.samples = samples;
  const engine::CheckResult r = engine::run_check(request, registry());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  return r.cases;
}

/// Smoke form of check_cases: every config once (unit tests stay in seconds).
inline std::vector<engine::CaseResult> smoke_check(const std::string& file, const std::string& id,
                                                   const std::string& impl_glob) {
  return check_cases(file, id, impl_glob, 1);
}

/// Runs contract `id` from `file` (a path below the source tree) against the
/// one impl `impl`, with the protocol's sample count; its case.
inline engine::CaseResult check_file(const std::string& file, const std::string& id, const std::string& impl) {
  for (auto& c : check_cases(file, id, impl))
    if (c.impl == impl && c.contract_id == id) return c;
  ADD_FAILURE() << impl << " was not run against " << id;
  return {};
}

/// Runs the one contract in `text` against `impl`.
inline engine::CaseResult check_text(const std::string& text, const std::string& impl) {
  auto parsed = lang::parse_kc(text, "inline.kc");
  for (const auto& d : parsed.diagnostics) ADD_FAILURE() << d.render();
  if (parsed.document.contracts.size() != 1) {
    ADD_FAILURE() << "expected one contract in the text";
    return {};
  }
  auto i = registry().find_impl(impl);
  if (!i) {
    ADD_FAILURE() << "no impl " << impl;
    return {};
  }
  engine::CheckRequest request;
  return engine::run_case(parsed.document.contracts[0], "inline.kc", *i, backend_info(i->declaration().backend),
                          request);
}

/// One line for failure messages: the verdict, its reason and signatures, then
/// each config's note.
inline std::string describe(const engine::CaseResult& r) {
  std::string s = r.contract_id + " x " + r.impl + ": " + std::string(engine::verdict_name(r.verdict)) + " (" +
                  r.reason + ")";
  for (const auto& sg : r.signatures) s += " " + sg.to_string();
  for (const auto& c : r.evidence.per_config)
    if (!c.note.empty()) s += "\n  " + c.config + ": " + c.note;
  return s;
}

/// The verdict every smoke test wants, with at least one element compared
/// (a case whose configs were all skipped must not pass as conforming).
inline void expect_conforming(const engine::CaseResult& r) {
  EXPECT_EQ(r.verdict, engine::Verdict::kConforming) << describe(r);
  EXPECT_GT(r.evidence.elements, 0) << describe(r);
}

/// A call of `op` with `params`, inputs filled from N(0, 1) (seeded).
inline Call make_call(const std::string& op, std::map<std::string, std::string> params, std::uint64_t seed = 7) {
  const Op* o = builtin_ops().find(op);
  KC_CHECK(o != nullptr);
  Config config;
  config.params = std::move(params);
  auto call = o->make_call(config);
  KC_CHECK(call.ok());
  Rng rng(seed);
  FillSpec fill;
  o->fill(*call, fill, rng);
  return std::move(call).value();
}

/// Runs impl `name` on a copy of `call`; output `output` as raw float bits.
inline std::vector<std::uint32_t> run_bits(const std::string& name, const Call& call, const std::string& output) {
  auto impl = registry().find_impl(name);
  EXPECT_NE(impl, nullptr) << name;
  if (!impl) return {};
  Call c = call;
  const Status s = impl->run(c);
  EXPECT_TRUE(s.ok()) << name << ": " << s.to_string();
  const Tensor& t = c.t(output);
  std::vector<std::uint32_t> bits(static_cast<std::size_t>(t.storage_elems()));
  std::memcpy(bits.data(), t.raw(), bits.size() * sizeof(std::uint32_t));
  return bits;
}

}  // namespace kc::backend_test
