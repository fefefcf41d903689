// Program cache: on-disk binaries, stale/corrupt fallback, compile errors as ShaderError.
#include <filesystem>
#include <fstream>

#include "device_impl.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
std::filesystem::path fresh_cache_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("gltensor-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("GLTENSOR_CACHE_DIR", dir.c_str(), 1);
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
  EXPECT_EQ(d1.impl()->programs.binary_cache_hits(), 0u);
  EXPECT_FALSE(std::filesystem::is_empty(dir));
  Device d2 = Device::open();
  auto r2 = run_ops(d2);
  EXPECT_GT(d2.impl()->programs.binary_cache_hits(), 0u);
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
  EXPECT_EQ(d3.impl()->programs.binary_cache_hits(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(ProgramCache, CompileErrorIsShaderErrorWithLogAndLine) {
  ::setenv("GLTENSOR_CACHE_DIR", "off", 1);
  Device dev = Device::open();
  dev.set_logger([](LogLevel, const std::string&) {});
  auto& impl = *dev.impl();
  detail::Enter e(impl, "test");
  try {
    impl.programs.get("unary.comp",
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
  EXPECT_THROW(impl.programs.get("no_such_kernel.comp", "", 64), ShaderError);
  // The device still works.
  EXPECT_EQ((ones(dev, {3}) + 1.0).to_vector(), std::vector<float>(3, 2.0f));
}
