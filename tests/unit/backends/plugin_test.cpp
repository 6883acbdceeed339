// The plugin backend: loading the example plugin through the C ABI, and every
// malformed plugin becoming "unavailable, because ..." rather than a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../../../backends/plugin/plugin_backend.h"
#include "kc/backend.h"

namespace kc {
namespace {

const std::string kExamplePlugin = KC_BINARY_DIR "/lib/libkc_example_plugin.so";

BackendInfo info_of(Backend& b) { return b.probe(); }

Call matmul_call(std::int64_t m, std::int64_t n, std::int64_t k, float a_value, float b_value) {
  Call call;
  call.op = "matmul";
  call.config.dtype = DType::kF32;
  call.config.params = {{"M", std::to_string(m)},
                        {"N", std::to_string(n)},
                        {"K", std::to_string(k)},
                        {"trans_a", "N"},
                        {"trans_b", "N"},
                        {"alpha", "1"},
                        {"beta", "0"}};
  call.names = {"A", "B", "C"};
  call.roles = {Role::kIn, Role::kIn, Role::kInOut};
  call.tensors = {Tensor(DType::kF32, {m, k}), Tensor(DType::kF32, {k, n}),
                  Tensor(DType::kF32, {m, n})};
  for (std::int64_t i = 0; i < m * k; ++i) call.tensors[0].data<float>()[i] = a_value;
  for (std::int64_t i = 0; i < k * n; ++i) call.tensors[1].data<float>()[i] = b_value;
  for (std::int64_t i = 0; i < m * n; ++i)
    call.tensors[2].data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return call;
}

class ExamplePlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kExamplePlugin))
        << kExamplePlugin << " is missing: build target kc_example_plugin";
    registry_ = std::make_unique<BackendRegistry>();
    BackendOptions options;
    options.plugin_paths = {kExamplePlugin};
    ASSERT_TRUE(register_builtin_backends(*registry_, options).ok());
  }
  std::unique_ptr<BackendRegistry> registry_;
};

TEST_F(ExamplePlugin, LoadsWithDeclarations) {
  BackendInfo info;
  for (const BackendInfo& i : registry_->infos())
    if (i.name == "plugin") info = i;
  ASSERT_TRUE(info.available) << info.reason;
  EXPECT_EQ(info.version, "kc_example_plugin 1.0, ABI 2");
  auto impl = registry_->find_impl("example.matmul_fp16acc");
  ASSERT_NE(impl, nullptr);
  const Declaration& d = impl->declaration();
  EXPECT_EQ(d.backend, "plugin");
  EXPECT_EQ(d.op, "matmul");
  EXPECT_EQ(d.dtypes, std::vector<DType>{DType::kF32});
  EXPECT_EQ(d.accumulator, DType::kF32);  // the declaration the impl does not keep
  EXPECT_EQ(d.determinism, Determinism::kBitwise);
  EXPECT_NE(registry_->find_impl("example.matmul_fp32"), nullptr);
  EXPECT_NE(registry_->find_impl("example.dot_fp32"), nullptr);
}

TEST_F(ExamplePlugin, MatmulFp32HonoursTransposeLeadingDimsAndBetaZero) {
  auto impl = registry_->find_impl("example.matmul_fp32");
  ASSERT_NE(impl, nullptr);
  // C (2x3, ldc 4) = 2 * A^T B + 0.5 C, A stored 2x2 (K x M) with lda 3, B 2x3.
  Call call;
  call.op = "matmul";
  call.config.params = {{"trans_a", "T"}, {"trans_b", "N"}, {"alpha", "2"}, {"beta", "0.5"}};
  call.names = {"A", "B", "C"};
  call.roles = {Role::kIn, Role::kIn, Role::kInOut};
  call.tensors = {Tensor(DType::kF32, {2, 2}, {3, 1}), Tensor(DType::kF32, {2, 3}),
                  Tensor(DType::kF32, {2, 3}, {4, 1})};
  const float a[] = {1, 2, -9, 3, 4};  // rows (1 2) (3 4), padding -9
  const float b[] = {1, 0, 2, 0, 1, 3};
  std::memcpy(call.tensors[0].data<float>(), a, sizeof a);
  std::memcpy(call.tensors[1].data<float>(), b, sizeof b);
  float* c = call.tensors[2].data<float>();
  const std::int64_t c_elems = call.tensors[2].storage_elems();  // 7 or 8, by Tensor's choice
  ASSERT_GE(c_elems, 7);
  for (std::int64_t i = 0; i < c_elems; ++i) c[i] = 10.0f;
  ASSERT_TRUE(impl->run(call).ok());
  // A^T = (1 3; 2 4); A^T B = (1 3 11; 2 4 16); 2 * that + 5; padding stays 10.
  const float want[] = {7, 11, 27, 10, 9, 13, 37, 10};
  for (std::int64_t i = 0; i < c_elems; ++i) EXPECT_EQ(c[i], want[i]) << i;

  // beta = 0: C is not read, so NaN in C does not survive.
  Call fresh = matmul_call(2, 2, 3, 1.0f, 1.0f);
  ASSERT_TRUE(impl->run(fresh).ok());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fresh.tensors[2].data<float>()[i], 3.0f);
}

// 300 products of 16 * 16 = 256: the exact sum 76800 is far inside fp32 but
// beyond fp16's largest finite 65504, so an fp16 accumulator overflows to +inf.
TEST_F(ExamplePlugin, Fp16AccumulatorOverflowsWhereFp32DoesNot) {
  Call c32 = matmul_call(1, 1, 300, 16.0f, 16.0f);
  Call c16 = matmul_call(1, 1, 300, 16.0f, 16.0f);
  ASSERT_TRUE(registry_->find_impl("example.matmul_fp32")->run(c32).ok());
  ASSERT_TRUE(registry_->find_impl("example.matmul_fp16acc")->run(c16).ok());
  EXPECT_EQ(c32.tensors[2].data<float>()[0], 76800.0f);
  EXPECT_TRUE(std::isinf(c16.tensors[2].data<float>()[0]));
  EXPECT_GT(c16.tensors[2].data<float>()[0], 0.0f);
}

TEST_F(ExamplePlugin, DotAndUnsupported) {
  auto dot = registry_->find_impl("example.dot_fp32");
  Call call;
  call.op = "dot";
  call.names = {"x", "y", "out"};
  call.roles = {Role::kIn, Role::kIn, Role::kOut};
  call.tensors = {Tensor(DType::kF32, {3}, {2}), Tensor(DType::kF32, {3}),
                  Tensor(DType::kF32, {1})};
  const float x[] = {1, -1, 2, -1, 3};
  const float y[] = {4, 5, 6};
  std::memcpy(call.tensors[0].data<float>(), x, sizeof x);
  std::memcpy(call.tensors[1].data<float>(), y, sizeof y);
  ASSERT_TRUE(dot->run(call).ok());
  EXPECT_EQ(call.tensors[2].data<float>()[0], 4.0f + 10.0f + 18.0f);
  // Wrong dtype: the plugin answers KC_UNSUPPORTED, kc sees kUnimplemented.
  call.tensors[0] = Tensor(DType::kF64, {3});
  Status s = dot->run(call);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("FP32 only"), std::string::npos) << s.message();
}

// --- Malformed plugins, described by init functions linked into this test.

int32_t run_raise(const kc_call*, char* message, size_t size, void*) {
  std::snprintf(message, size, "index 7 out of range [0, 4)");
  return KC_RAISED;
}

constexpr kc_impl_desc kGoodImpl{"t.raise", "dot",     "FP32", "oob = RAISE",
                                 "raises",  run_raise, nullptr};
const kc_plugin kGood{KC_PLUGIN_ABI_VERSION, "good", "0.1", 1, &kGoodImpl};
const kc_plugin kWrongAbi{KC_PLUGIN_ABI_VERSION + 1, "future", "9", 1, &kGoodImpl};
constexpr kc_impl_desc kBadDeclares{"t.bad", "dot",     "FP32", "determinism = SOMETIMES",
                                    "",      run_raise, nullptr};
const kc_plugin kBadDeclaresPlugin{KC_PLUGIN_ABI_VERSION, "bad", "0", 1, &kBadDeclares};
constexpr kc_impl_desc kNoEquals{"t.bad", "dot",     "FP32", "accumulator FP32",
                                 "",      run_raise, nullptr};
const kc_plugin kNoEqualsPlugin{KC_PLUGIN_ABI_VERSION, "bad", "0", 1, &kNoEquals};
constexpr kc_impl_desc kBadDtype{"t.bad", "dot", "FP33", "", "", run_raise, nullptr};
const kc_plugin kBadDtypePlugin{KC_PLUGIN_ABI_VERSION, "bad", "0", 1, &kBadDtype};
constexpr kc_impl_desc kNoRun{"t.bad", "dot", "FP32", "", "", nullptr, nullptr};
const kc_plugin kNoRunPlugin{KC_PLUGIN_ABI_VERSION, "bad", "0", 1, &kNoRun};

const kc_plugin* init_good(uint32_t) { return &kGood; }
const kc_plugin* init_wrong_abi(uint32_t) { return &kWrongAbi; }
const kc_plugin* init_null(uint32_t) { return nullptr; }
const kc_plugin* init_bad_declares(uint32_t) { return &kBadDeclaresPlugin; }
const kc_plugin* init_no_equals(uint32_t) { return &kNoEqualsPlugin; }
const kc_plugin* init_bad_dtype(uint32_t) { return &kBadDtypePlugin; }
const kc_plugin* init_no_run(uint32_t) { return &kNoRunPlugin; }

void expect_unavailable(std::vector<backends::PluginSource> sources, const std::string& needle) {
  auto b = backends::make_plugin_backend(std::move(sources));
  BackendInfo info = info_of(*b);
  EXPECT_FALSE(info.available);
  EXPECT_NE(info.reason.find(needle), std::string::npos) << info.reason;
  EXPECT_TRUE(b->impls().empty());
}

TEST(PluginBackend, MalformedPluginsAreUnavailableWithAReason) {
  expect_unavailable({}, "no --plugin given");
  expect_unavailable({{"/nonexistent/libx.so", nullptr}}, "/nonexistent/libx.so");
  // A real shared library without kc_plugin_init.
  expect_unavailable({{"libm.so.6", nullptr}}, "no symbol kc_plugin_init");
  expect_unavailable({{"future", init_wrong_abi}}, "built against ABI 3");
  expect_unavailable({{"null", init_null}}, "returned NULL");
  expect_unavailable({{"decl", init_bad_declares}}, "determinism = SOMETIMES");
  expect_unavailable({{"noeq", init_no_equals}}, "not key = VALUE");
  expect_unavailable({{"dtype", init_bad_dtype}}, "unknown dtype 'FP33'");
  expect_unavailable({{"norun", init_no_run}}, "run are required");
  // One bad plugin makes the whole backend unavailable; duplicates are malformed too.
  expect_unavailable({{"good", init_good}, {"decl", init_bad_declares}}, "decl:");
  expect_unavailable({{"good", init_good}, {"again", init_good}}, "duplicate impl name 't.raise'");
}

TEST(PluginBackend, RaisedBecomesKernelRaisedWithMessage) {
  auto b = backends::make_plugin_backend({backends::PluginSource{"good", init_good}});
  ASSERT_TRUE(info_of(*b).available);
  auto impls = b->impls();
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0]->declaration().oob, OobPolicy::kRaise);
  Call call;
  call.op = "dot";
  Status s = impls[0]->run(call);
  EXPECT_EQ(s.code(), StatusCode::kKernelRaised);
  EXPECT_EQ(s.message(), "index 7 out of range [0, 4)");
}


/// Builds a one-impl plugin from C `extra` (plus the boilerplate) with cc and
/// returns the backend loaded from it.
std::unique_ptr<Backend> build_plugin(const std::string& name, const std::string& extra) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kc_plugin_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path src = dir / (name + ".c"), lib = dir / ("lib" + name + ".so");
  {
    std::FILE* f = std::fopen(src.c_str(), "w");
    if (!f) return nullptr;
    std::fputs(("#include \"kc/kc_plugin.h\"\n" + extra +
                "static int run(const kc_call* c, char* m, size_t n, void* u) {\n"
                "  (void)c; (void)m; (void)n; (void)u; return KC_OK; }\n"
                "static const kc_impl_desc impls[] = {{\"fake.dot\", \"dot\", \"FP32\", \"\", \"\", run, 0}};\n"
                "static const kc_plugin p = {KC_PLUGIN_ABI_VERSION, \"fake\", \"1\", 1, impls};\n"
                "const kc_plugin* kc_plugin_init(uint32_t v) { return v >= KC_PLUGIN_ABI_VERSION ? &p : 0; }\n")
                   .c_str(),
               f);
    std::fclose(f);
  }
  const std::string cmd = "cc -shared -fPIC -I" KC_SOURCE_DIR "/include " + src.string() + " -o " + lib.string();
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << cmd;
    return nullptr;
  }
  auto b = backends::make_plugin_backend(std::vector<std::string>{lib.string()});
  (void)info_of(*b);  // loads it: the mapped library outlives its file
  fs::remove_all(dir);
  return b;
}

std::string device_runtime(Backend& b) {
  if (!info_of(b).available || b.impls().size() != 1) return "(not loaded: " + info_of(b).reason + ")";
  const Declaration& d = b.impls()[0]->declaration();
  const std::string runtime = d.extra.count("device_runtime") ? d.extra.at("device_runtime") : "";
  // The runtime the backend declares follows: such a library runs in a worker
  // (it starts CUDA after the fork), on a device; host code keeps host limits.
  EXPECT_TRUE(d.runtime.survives_fork) << d.name;
  EXPECT_EQ(d.runtime.runs_on_host, runtime.empty()) << d.name;
  return runtime;
}

// A library that starts CUDA itself is marked device_runtime = cuda, so its
// worker starts CUDA after the fork: one that reaches the runtime or driver
// API (here it merely defines cuInit, so the test needs no GPU or toolkit),
// and one holding CUDA device code (nvcc's .nv_fatbin section; with cudart
// linked statically it exports no CUDA symbol at all). Host code is not.
TEST(PluginBackend, ALibraryStartingCudaIsMarkedSo) {
  auto driver = build_plugin("fake_driver", "int cuInit(unsigned flags) { return (int)flags; }\n");
  ASSERT_TRUE(driver);
  EXPECT_EQ(device_runtime(*driver), "cuda");
  auto fatbin = build_plugin("fake_fatbin",
                             "__attribute__((used, section(\".nv_fatbin\"))) const char fatbin[16] = {1};\n");
  ASSERT_TRUE(fatbin);
  EXPECT_EQ(device_runtime(*fatbin), "cuda");
  auto host = build_plugin("fake_host", "");
  ASSERT_TRUE(host);
  EXPECT_EQ(device_runtime(*host), "");
  // What nvcc really builds: cudart linked statically (its default), no
  // CUDA symbol exported, found by its fat binary.
  const std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (std::filesystem::exists(nvcc)) {
    const std::string lib =
        (std::filesystem::temp_directory_path() / ("kc_nvcc_plugin_" + std::to_string(getpid()) + ".so")).string();
    const std::string cmd = nvcc + " -O2 -shared -Xcompiler -fPIC -I" KC_SOURCE_DIR "/include " KC_SOURCE_DIR
                            "/examples/vet/generated_sgemm.cu -o " + lib;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto built = backends::make_plugin_backend(std::vector<std::string>{lib});
    ASSERT_TRUE(info_of(*built).available) << info_of(*built).reason;
    for (const auto& impl : built->impls())
      EXPECT_EQ(impl->declaration().extra.count("device_runtime") ? impl->declaration().extra.at("device_runtime")
                                                                  : "",
                "cuda")
          << impl->declaration().name;
    std::filesystem::remove(lib);
  }
  auto example = backends::make_plugin_backend(std::vector<std::string>{kExamplePlugin});
  ASSERT_TRUE(info_of(*example).available) << info_of(*example).reason;
  for (const auto& impl : example->impls())
    EXPECT_EQ(impl->declaration().extra.count("device_runtime"), 0u) << impl->declaration().name;
}

}  // namespace
}  // namespace kc
