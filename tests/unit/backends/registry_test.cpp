#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kc/backend.h"

namespace kc {
namespace {

class FakeImpl final : public Impl {
 public:
  explicit FakeImpl(std::string name) {
    decl_.name = std::move(name);
    decl_.op = "dot";
    decl_.backend = "fake";
    decl_.dtypes = {DType::kF32};
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call&) const override { return ok_status(); }

 private:
  Declaration decl_;
};

class FakeBackend final : public Backend {
 public:
  FakeBackend(std::string name, bool available, int* probes)
      : name_(std::move(name)), available_(available), probes_(probes) {}
  std::string_view name() const override { return name_; }
  BackendInfo probe() override {
    ++*probes_;
    BackendInfo info;
    info.name = name_;
    info.available = available_;
    info.reason = available_ ? "fake" : "switched off";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override {
    if (!available_) return {};
    return {std::make_shared<FakeImpl>(name_ + ".dot")};
  }

 private:
  std::string name_;
  bool available_;
  int* probes_;
};

TEST(BackendRegistry, RejectsDuplicateNames) {
  int probes = 0;
  BackendRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeBackend>("a", true, &probes)).ok());
  Status dup = r.add(std::make_unique<FakeBackend>("a", true, &probes));
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.message().find("duplicate"), std::string::npos) << dup.message();
  EXPECT_EQ(r.backends().size(), 1u);
}

TEST(BackendRegistry, ProbesEachBackendOnceAndSkipsUnavailable) {
  int probes_a = 0, probes_b = 0;
  BackendRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeBackend>("a", true, &probes_a)).ok());
  ASSERT_TRUE(r.add(std::make_unique<FakeBackend>("b", false, &probes_b)).ok());
  EXPECT_EQ(r.impls().size(), 1u);
  EXPECT_NE(r.find_impl("a.dot"), nullptr);
  EXPECT_EQ(r.find_impl("b.dot"), nullptr);
  auto infos = r.infos();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_TRUE(infos[0].available);
  EXPECT_FALSE(infos[1].available);
  EXPECT_EQ(probes_a, 1);
  EXPECT_EQ(probes_b, 1);
  EXPECT_EQ(r.find_backend("b")->name(), "b");
  EXPECT_EQ(r.find_backend("c"), nullptr);
}

TEST(Impl, DefaultCanImplementChecksOpAndDtype) {
  FakeImpl impl("x.dot");
  Call call;
  call.op = "dot";
  call.config.dtype = DType::kF32;
  EXPECT_TRUE(impl.can_implement(call).ok());
  call.config.dtype = DType::kF16;
  EXPECT_EQ(impl.can_implement(call).code(), StatusCode::kUnimplemented);
  call.config.dtype = DType::kF32;
  call.op = "matmul";
  EXPECT_EQ(impl.can_implement(call).code(), StatusCode::kUnimplemented);
}

TEST(BuiltinBackends, OneTableInDocumentedOrder) {
  BackendRegistry r;
  ASSERT_TRUE(register_builtin_backends(r).ok());
  std::vector<std::string> names;
  for (Backend* b : r.backends()) names.emplace_back(b->name());
  // Every build registers every backend (one without its library reports why).
  EXPECT_EQ(names, (std::vector<std::string>{"ref", "openblas", "blis", "refblas", "calibration", "cuda",
                                             "eigen", "compilers", "mpi", "opencl", "onednn", "torch",
                                             "sleef", "hwy", "opencl_user", "plugin"}));
  for (const BackendInfo& info : r.infos()) {
    if (info.name == "plugin") {
      EXPECT_FALSE(info.available);
      EXPECT_EQ(info.reason, "no --plugin given");
    }
    if (!info.available) {
      EXPECT_FALSE(info.reason.empty()) << info.name;
    }
  }
  // Registering the table twice into one registry is a duplicate.
  EXPECT_FALSE(register_builtin_backends(r).ok());
}

TEST(BuiltinBackends, OnlyTheNamedBackendsAreRegistered) {
  // --backend: the others are never constructed into the registry, so never probed.
  BackendRegistry r;
  BackendOptions options;
  options.only = {"ref", "open*"};
  ASSERT_TRUE(register_builtin_backends(r, options).ok());
  std::vector<std::string> names;
  for (Backend* b : r.backends()) names.emplace_back(b->name());
  EXPECT_EQ(names, (std::vector<std::string>{"ref", "openblas", "opencl", "opencl_user"}));
}

// What engine, ladder and isolate read instead of backend names: calibration
// impls declare themselves broken on purpose, host impls are not; a backend
// whose runtime needs care declares it on each of its impls.
TEST(BuiltinBackends, ImplsDeclareBrokenOnPurposeAndTheirRuntime) {
  BackendRegistry r;
  BackendOptions options;
  options.only = {"ref", "calibration", "opencl"};
  ASSERT_TRUE(register_builtin_backends(r, options).ok());
  std::size_t calibration = 0;
  for (const auto& impl : r.impls()) {
    const Declaration& d = impl->declaration();
    if (d.backend == "calibration") {
      ++calibration;
      EXPECT_FALSE(d.broken_on_purpose.empty()) << d.name;
      EXPECT_TRUE(d.runtime.runs_on_host) << d.name;
    } else if (d.backend == "ref") {
      EXPECT_TRUE(d.broken_on_purpose.empty()) << d.name;
      EXPECT_TRUE(d.runtime.survives_fork && d.runtime.runs_on_host) << d.name;
    } else if (d.backend == "opencl") {
      EXPECT_TRUE(d.runtime.survives_fork) << d.name;
      EXPECT_FALSE(d.runtime.runs_on_host) << d.name;
      EXPECT_EQ(d.runtime.sandbox, "opencl") << d.name;
      EXPECT_EQ(d.broken_on_purpose.empty(), d.name.rfind("opencl.incident.", 0) != 0) << d.name;
    }
  }
  EXPECT_GT(calibration, 0u);
}

}  // namespace
}  // namespace kc
