// On-disk caches: program binaries (stale/corrupt fallback, compile errors as ShaderError) and tuning.
#include <filesystem>
#include <fstream>

#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/tuner.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
std::filesystem::path fresh_cache_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("gltensor-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  gltensor::detail::settings().cache_dir = dir;
  return dir;
}
std::vector<float> run_ops(Device& dev) {
  Tensor a = arange(dev, 0, 10), b = full(dev, {10}, 0.5);
  return exp(a * b).to_vector();
}
}  // namespace

TEST(ProgramCache, BinariesAreStoredAndReused) {
  const auto dir = fresh_cache_dir();
  Device d1 = Device::open();
  if (!d1.caps().program_binary) GTEST_SKIP() << "no program binary formats";
  auto r1 = run_ops(d1);
  EXPECT_EQ(d1.impl()->programs().binary_cache_hits(), 0u);
  EXPECT_FALSE(std::filesystem::is_empty(dir));
  Device d2 = Device::open();
  auto r2 = run_ops(d2);
  EXPECT_GT(d2.impl()->programs().binary_cache_hits(), 0u);
  EXPECT_EQ(r1, r2);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(r1[i], std::exp(0.5 * i), 1e-4 * std::exp(0.5 * i));
  std::filesystem::remove_all(dir);
}

TEST(ProgramCache, CorruptBinariesFallBackToCompiling) {
  const auto dir = fresh_cache_dir();
  Device d1 = Device::open();
  if (!d1.caps().program_binary) GTEST_SKIP() << "no program binary formats";
  auto r1 = run_ops(d1);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    const char junk[64] = "this is not a program binary, it is junk";
    f.write(junk, sizeof junk);
  }
  Device d2 = Device::open();
  d2.set_logger([](LogLevel, const std::string&) {});
  auto r2 = run_ops(d2);
  EXPECT_EQ(r1, r2);
  // Truncated files too.
  for (const auto& e : std::filesystem::directory_iterator(dir)) std::filesystem::resize_file(e.path(), 10);
  Device d3 = Device::open();
  EXPECT_EQ(run_ops(d3), r1);
  EXPECT_EQ(d3.impl()->programs().binary_cache_hits(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(ProgramCache, CompileErrorIsShaderErrorWithLogAndLine) {
  ScopedSettings settings;
  settings->cache_dir.clear();
  Device dev = Device::open();
  dev.set_logger([](LogLevel, const std::string&) {});
  auto& impl = *dev.impl();
  detail::Enter e(impl, "test");
  try {
    impl.programs().get("unary.comp",
                        "#define NOPS 1\n#define NDIM 1\n#define OP op_no_such_function\n"
                        "layout(std430, binding = 0) buffer Buf0 { uint t0[]; };\n#define CT0 float\n"
                        "uint bits0(float v) { return 0u; }\nvoid store0(uint e, float v) {}\n",
                        64);
    FAIL() << "expected ShaderError";
  } catch (const ShaderError& err) {
    EXPECT_FALSE(err.log().empty());
    EXPECT_NE(std::string(err.what()).find("unary.comp"), std::string::npos) << err.what();
    EXPECT_NE(err.line().find("OP"), std::string::npos) << "line: " << err.line() << "\n" << err.what();
  }
  EXPECT_THROW(impl.programs().get("no_such_kernel.comp", "", 64), ShaderError);
  // The device still works.
  EXPECT_EQ((ones(dev, {3}) + 1.0).to_vector(), std::vector<float>(3, 2.0f));
}

// Tuning (tuner.hpp): matmul's quad-load variant for (tiles, K) is measured on the first use
// (every variant run, the chosen one last), reused without measuring, stored in the cache folder
// and read back by a new device; the result is right whichever variant won.
TEST(Tuning, MeasuredOnceStoredAndReused) {
  GLT_RNG(rng);
  const auto dir = fresh_cache_dir();
  ScopedSettings settings;
  settings->tune = 1;                                          // llvmpipe too
  settings->matmul_kernel = detail::MatmulKernelSetting::gpu;  // the GPU's kernel choice (llvmpipe's is REG)
  const std::int64_t M = 1024, K = 256, N = 2048;              // 16 x 16 tiles of 64 x 128: the quad-load kernel
  auto a = uniform(rng, M * K), b = uniform(rng, K * N);
  auto product = [&](Device& d, std::uint64_t& dispatches) {
    Tensor ta = Tensor::from_host(d, a, {M, K}), tb = Tensor::from_host(d, b, {K, N});
    d.synchronize();
    const auto d0 = d.dispatch_count();
    Tensor r = matmul(ta, tb);
    dispatches = d.dispatch_count() - d0;
    return r.to_vector();
  };
  auto check = [&](const std::vector<float>& r, const char* what) {
    for (int t = 0; t < 64; ++t) {
      const std::int64_t i = rng() % M, j = rng() % N;
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += double(a[i * K + k]) * b[k * N + j];
      ASSERT_NEAR(r[i * N + j], s, 1e-5 * std::abs(s) + 2e-6 * K) << what << " [" << i << ", " << j << "]";
    }
  };
  Device d1 = Device::open();
  std::uint64_t n = 0;
  check(product(d1, n), "first use");
  EXPECT_GE(n, 16u) << "4 variants x (1 warm-up + 3 timed)";
  EXPECT_EQ(d1.impl()->extension<detail::Tuner>().measured(), 1u);
  check(product(d1, n), "second use");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(d1.impl()->extension<detail::Tuner>().measured(), 1u);
  bool stored = false;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("tuning-", 0) == 0) {
      std::ifstream in(e.path());
      std::string key;
      int v = -1;
      in >> key >> v;
      stored = key == "matmul_vec4/256/256/float32" && v >= 0 && v < 4;
    }
  EXPECT_TRUE(stored);
  Device d2 = Device::open();
  check(product(d2, n), "new device");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(d2.impl()->extension<detail::Tuner>().measured(), 0u);
  std::filesystem::remove_all(dir);
}
