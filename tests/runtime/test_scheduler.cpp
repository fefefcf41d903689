// Scheduling: fence waits, barriers only on hazards, auto-flush, async reads, split grids.
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

TEST(Scheduler, ChainedOpsReadBackCorrectly) {
  GLT_RNG(rng);
  auto a = uniform(rng, 777);
  Tensor t = Tensor::from_host(device(), a, {777});
  for (int i = 0; i < 50; ++i) t = t * 1.01 + 0.5;
  std::vector<double> ref(777);
  for (int j = 0; j < 777; ++j) {
    double x = a[j];
    for (int i = 0; i < 50; ++i) x = double(float(float(x * 1.01) + 0.5));
    ref[j] = x;
  }
  EXPECT_TRUE(close(t.to_vector(), ref, 1e-5, 1e-5));
}

TEST(Scheduler, BarrierOnlyWhereADispatchReadsAPendingWrite) {
  Device dev = Device::open();
  Tensor a = ones(dev, {1000}), b = ones(dev, {1000});
  dev.synchronize();
  const auto b0 = dev.barrier_count();
  Tensor c = a + b;  // reads a, b: no pending writes since the flush
  Tensor d = a * b;  // independent of c
  EXPECT_EQ(dev.barrier_count(), b0);
  Tensor e = c + d;  // reads c and d, written since the last barrier
  EXPECT_EQ(dev.barrier_count(), b0 + 1);
  Tensor f = a - b;  // independent again
  EXPECT_EQ(dev.barrier_count(), b0 + 1);
  EXPECT_EQ(e.to_vector(), std::vector<float>(1000, 3.0f));
  EXPECT_EQ(f.to_vector(), std::vector<float>(1000, 0.0f));
}

TEST(Scheduler, WriteAfterReadGetsABarrier) {
  Device dev = Device::open();
  Tensor a = ones(dev, {1000}), b = ones(dev, {1000});
  dev.synchronize();
  const auto b0 = dev.barrier_count();
  Tensor c = a + b;  // reads a
  a.fill_(5.0);      // overwrites a: must wait for the read
  EXPECT_EQ(dev.barrier_count(), b0 + 1);
  EXPECT_EQ(c.to_vector(), std::vector<float>(1000, 2.0f));
  EXPECT_EQ(a.to_vector(), std::vector<float>(1000, 5.0f));
}

TEST(Scheduler, ReadWaitsOnlyForItsWritersFence) {
  Device dev = Device::open();
  auto& impl = *dev.impl();
  Tensor a = full(dev, {256}, 2.0);
  dev.flush();
  const auto batch_a = a.impl()->storage->write_batch;
  Tensor b = full(dev, {256}, 3.0);
  dev.flush();
  EXPECT_GT(b.impl()->storage->write_batch, batch_a);
  EXPECT_EQ(a.to_vector(), std::vector<float>(256, 2.0f));
  // b's batch was not waited for: its fence is still queued.
  ASSERT_GT(impl.queue().pending_batches(), 0u);
  EXPECT_EQ(impl.queue().last_submitted(), b.impl()->storage->write_batch);
  EXPECT_GE(impl.queue().completed(), batch_a);
  EXPECT_LT(impl.queue().completed(), b.impl()->storage->write_batch);
  dev.synchronize();
  EXPECT_EQ(impl.queue().pending_batches(), 0u);
}

TEST(Scheduler, AutoFlushEndsBatches) {
  Device dev = Device::open();
  dev.set_auto_flush(4);
  auto& impl = *dev.impl();
  dev.synchronize();
  const auto batch0 = impl.queue().batch();
  Tensor t = zeros(dev, {100});           // 1 dispatch
  for (int i = 0; i < 11; ++i) t += 1.0;  // 11 more: 12 in all -> 3 flushes
  EXPECT_EQ(impl.queue().batch(), batch0 + 3);
  EXPECT_EQ(t.to_vector(), std::vector<float>(100, 11.0f));
  EXPECT_THROW(dev.set_auto_flush(0), ValueError);
}

TEST(Scheduler, AsyncReadSnapshotsValues) {
  Device dev = Device::open();
  GLT_RNG(rng);
  auto a = uniform(rng, 4099);
  Tensor t = Tensor::from_host(dev, a, {4099});
  Tensor u = t * 3.0;
  AsyncRead r = u.to_host_async();
  u.fill_(0.0);  // later writes do not change the snapshot
  for (int i = 0; i < 1000000 && !r.ready(); ++i) {
  }
  auto got = r.get_float();
  std::vector<double> ref(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) ref[i] = 3.0 * a[i];
  EXPECT_TRUE(close(got, ref, 1e-6, 0));
  EXPECT_TRUE(r.ready());
  // Non-contiguous source and f16 dtype.
  Tensor h = Tensor::from_host(dev, a, {4099}, DType::f16).slice(0, 1, 4099, 2);
  auto got16 = h.to_host_async().get_float();
  auto want = gather_view(a, h);
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got16[i], f16_to_f32(f32_to_f16(want[i])));
}

TEST(Scheduler, SplitsGridsLargerThanTheDispatchLimit) {
  Device dev = Device::open();
  dev.set_dispatch_limit(3);  // grids of at most 3 x 3 workgroups of 256 per dispatch
  GLT_RNG(rng);
  const int n = 10007;
  auto a = uniform(rng, n), b = uniform(rng, 97);
  Tensor ta = Tensor::from_host(dev, a, {n});
  Tensor tb = Tensor::from_host(dev, b, {97});
  const auto d0 = dev.dispatch_count();
  auto got = (ta.slice(0, 0, 97 * 103).view({103, 97}) + tb).to_vector();
  // 40 workgroups: 14 rows of 3 (a 2-D grid, the last row partly past the end) in 5 dispatches.
  EXPECT_EQ(dev.dispatch_count() - d0, 5u);
  std::vector<double> ref(97 * 103);
  for (int i = 0; i < 97 * 103; ++i) ref[i] = double(a[i]) + b[i % 97];
  EXPECT_TRUE(close(got, ref, 1e-6, 1e-7));
  // f16 output (one word per invocation) and u8 strided output (atomic stores) split too.
  auto h = Tensor::from_host(dev, a, {n}, DType::f16);
  auto hh = (h + h).to_vector();
  for (int i = 0; i < n; ++i) ASSERT_EQ(hh[i], f16_to_f32(f32_to_f16(2.0f * f16_to_f32(f32_to_f16(a[i]))))) << i;
  Tensor u = zeros(dev, {n, 2}, DType::u8);
  u.select(1, 1).fill_(7);
  auto uu = u.to_int_vector();
  for (int i = 0; i < 2 * n; ++i) ASSERT_EQ(uu[i], i % 2 ? 7 : 0) << i;
  dev.set_dispatch_limit(0);
}

TEST(Scheduler, RealGridBeyond65535Workgroups) {
  // More elements than one dispatch of 65535 workgroups x 256 invocations covers.
  const std::int64_t n = 65535LL * 256 + 4097;
  Device& dev = device();
  if (static_cast<std::int64_t>(n * 4) > dev.caps().max_ssbo_block_size) GTEST_SKIP() << "max SSBO too small";
  Tensor a = arange(dev, 0, static_cast<double>(n), 1.0, DType::i32);
  Tensor b = a + 1;
  auto v = b.to_int_vector();
  ASSERT_EQ(static_cast<std::int64_t>(v.size()), n);
  for (std::int64_t i = 0; i < n; i += 4093) ASSERT_EQ(v[i], i + 1) << i;
  EXPECT_EQ(v[n - 1], n);
  EXPECT_EQ(v[65535LL * 256], 65535LL * 256 + 1);
}
