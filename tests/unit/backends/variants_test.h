// Shared by the eigen and compilers backend tests: the registry, running a
// shipped contract against impls through the engine, and calling one impl
// directly on a prepared call.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/op.h"
#include "kc/rng.h"

namespace kc::variants_test {

inline BackendRegistry& registry() {
  static BackendRegistry* r = [] {
    auto* reg = new BackendRegistry();
    KC_CHECK(register_builtin_backends(*reg).ok());
    return reg;
  }();
  return *r;
}

inline BackendInfo info(const std::string& backend) {
  for (const BackendInfo& i : registry().infos())
    if (i.name == backend) return i;
  return {};
}

inline std::string contract_path(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/contracts/" + rel; }

/// Runs `contract` (from contracts/<file>) against every impl matching
/// `impl_glob`, one sample per config.
inline std::vector<engine::CaseResult> check(const std::string& file, const std::string& contract,
                                             const std::string& impl_glob) {
  engine::CheckRequest request;
  request.paths = {contract_path(file)};
  request.contracts = {contract};
  request.impls = {impl_glob};
  request.samples = 1;  // smoke: every config once (unit tests stay in seconds)
  const engine::CheckResult r = engine::run_check(request, registry());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  return r.cases;
}

inline std::string describe(const engine::CaseResult& c) {
  std::string s = c.contract_id + " " + c.impl + ": " + std::string(engine::verdict_name(c.verdict)) + " (" +
                  c.reason + ")";
  for (const auto& sg : c.signatures) s += " " + sg.to_string();
  return s;
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

/// Runs impl `name` on a copy of `call`; the outputs as raw float bits.
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

}  // namespace kc::variants_test
