// The GPU profiler: timer queries per dispatch attributed to kernels, ops and scopes.
#include <chrono>

#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
const ProfileRow* find(const std::vector<ProfileRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}
}  // namespace

// Desktop OpenGL has timestamp queries in its core (3.3; gltensor needs 4.3) whether or not the context lists
// EXT_disjoint_timer_query (NVIDIA's 4.6 does not, Mesa's llvmpipe 4.5 neither): the profiler runs there too.
TEST(Profiler, DesktopOpenGlHasTimerQueries) {
  Device dev = Device::open();
  if (!dev.caps().desktop) GTEST_SKIP() << "OpenGL ES (GLTENSOR_API=gl runs it)";
  EXPECT_TRUE(dev.caps().timer_query) << dev.caps().version;
}

TEST(Profiler, AttributesDispatchesToKernelsOpsAndScopes) {
  Device dev = Device::open();
  if (!dev.caps().timer_query) {
    ASSERT_FALSE(dev.caps().desktop) << "desktop OpenGL has core timer queries";
    GTEST_SKIP() << "OpenGL ES without EXT_disjoint_timer_query";
  }
  Tensor a = ones(dev, {64, 96}), b = ones(dev, {96, 32});
  dev.synchronize();
  dev.set_profiling(true);
  // The GPU's time lies inside the host's wall time from the first dispatch to the report (which waits for them).
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t d0 = dev.dispatch_count();
  for (int i = 0; i < 3; ++i) (void)matmul(a, b);
  {
    ProfileScope scope(dev, "my block");
    (void)exp(a);
    (void)softmax(a, 1);
  }
  const ProfileReport r = dev.profile();
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Every dispatch timed once, in each list.
  const std::uint64_t dispatches = dev.dispatch_count() - d0;
  for (const auto* rows : {&r.by_kernel, &r.by_op, &r.by_scope}) {
    std::uint64_t calls = 0;
    for (const auto& row : *rows) calls += row.calls;
    EXPECT_EQ(calls, dispatches) << r.table();
  }
  EXPECT_EQ(r.disjoint_events, 0u) << r.table();
  EXPECT_GT(r.total_ms, 0.0) << r.table();
  EXPECT_LT(r.total_ms, wall_ms) << r.table();
  for (const auto& row : r.by_kernel) {
    EXPECT_GT(row.gpu_ms, 0.0) << row.name << "\n" << r.table();
    EXPECT_LT(row.gpu_ms, wall_ms) << row.name << "\n" << r.table();
  }
  const ProfileRow* mm = find(r.by_op, "matmul");
  ASSERT_NE(mm, nullptr) << r.table();
  EXPECT_EQ(mm->calls, 3u);
  EXPECT_GT(mm->gpu_ms, 0.0);
  // One of the matmul kernels (matmul_reg.comp on llvmpipe, matmul_tile64.comp on GPUs).
  const ProfileRow* mm_kernel = nullptr;
  for (const auto& row : r.by_kernel)
    if (row.name.rfind("matmul_", 0) == 0) mm_kernel = &row;
  ASSERT_NE(mm_kernel, nullptr) << r.table();
  ASSERT_NE(find(r.by_kernel, "softmax.comp"), nullptr) << r.table();
  const ProfileRow* block = find(r.by_scope, "my block");
  ASSERT_NE(block, nullptr) << r.table();
  EXPECT_EQ(block->calls, 2u);
  double share = 0, ms = 0;
  for (const auto& row : r.by_kernel) share += row.share, ms += row.gpu_ms;
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_NEAR(ms, r.total_ms, 1e-6 * std::max(1.0, ms));
  const std::string t = r.table();
  EXPECT_NE(t.find(mm_kernel->name), std::string::npos) << t;
  EXPECT_NE(t.find("my block"), std::string::npos) << t;
  // Reset, then off: nothing more is recorded.
  dev.reset_profile();
  EXPECT_TRUE(dev.profile().by_op.empty());
  dev.set_profiling(false);
  (void)exp(a);
  EXPECT_TRUE(dev.profile().by_op.empty());
  // Results are unaffected by profiling.
  dev.set_profiling(true);
  EXPECT_EQ(matmul(a, b).to_vector(), std::vector<float>(64 * 32, 96.0f));
}
