// SSBO pool: size classes, reuse, statistics, trim, memory limit, max SSBO size.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <thread>

#include "gl_log.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/host_copy.hpp"
#include "runtime/readback.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
// splitmix64's stream from a seed drawn from the test's rng (replayed by its seed as before).
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// The transfers' data: floats uniform in [-1, 1) on a grid of 2^-23 (as glt_test::uniform's 24
// bits), two from each 64-bit draw of a SplitMix stream. These tests move about 150 M values, and
// glt_test::uniform's mt19937_64 draw per value was 16% of the binary's CPU on llvmpipe (suite41d).
std::vector<float> fast_uniform(std::mt19937_64& rng, std::size_t n) {
  SplitMix g{rng()};
  std::vector<float> v(n);
  const auto unit = [](std::uint64_t bits24) {
    return static_cast<float>(static_cast<std::int64_t>(bits24) - (std::int64_t{1} << 23)) * 0x1p-23f;
  };
  for (std::size_t i = 0; i < n; i += 2) {
    const std::uint64_t z = g.next();
    v[i] = unit(z >> 40);
    if (i + 1 < n) v[i + 1] = unit(z & 0xffffff);
  }
  return v;
}

// Random bytes, eight from each draw.
void fill_random(std::mt19937_64& rng, std::vector<std::uint8_t>& b) {
  SplitMix g{rng()};
  for (std::size_t i = 0; i < b.size(); i += 8) {
    const std::uint64_t z = g.next();
    std::memcpy(b.data() + i, &z, std::min<std::size_t>(8, b.size() - i));
  }
}
}  // namespace

TEST(Pool, SizeClasses) {
  using detail::Pool;
  EXPECT_EQ(Pool::size_class(1), 256u);
  EXPECT_EQ(Pool::size_class(256), 256u);
  EXPECT_EQ(Pool::size_class(257), 384u);
  EXPECT_EQ(Pool::size_class(384), 384u);
  EXPECT_EQ(Pool::size_class(385), 512u);
  EXPECT_EQ(Pool::size_class(1 << 20), 1u << 20);
  EXPECT_EQ(Pool::size_class((1 << 20) + 1), (1u << 20) + (1u << 19));
  for (std::size_t b = 1; b < 100000; b = b * 3 + 1) EXPECT_GE(Pool::size_class(b), b);
  {  // GLTENSOR_POOL_MIN_CLASS: no class below it (a diagnostic)
    ScopedSettings s;
    s->pool_min_class = 65536;
    EXPECT_EQ(Pool::size_class(1), 65536u);
    EXPECT_EQ(Pool::size_class(70000), Pool::size_class(65537));
  }
  EXPECT_EQ(Pool::size_class(1), 256u);
}

TEST(Pool, ReusesFreedBuffers) {
  Device dev = Device::open();
  const auto s0 = dev.pool_stats();
  { Tensor t = Tensor::empty(dev, {1000}); }
  const auto s1 = dev.pool_stats();
  EXPECT_EQ(s1.misses, s0.misses + 1);
  EXPECT_EQ(s1.cached_buffers, 1u);
  EXPECT_EQ(s1.live_buffers, 0u);
  Tensor t2 = Tensor::empty(dev, {990});  // same size class (4000 bytes -> 4096)
  const auto s2 = dev.pool_stats();
  EXPECT_EQ(s2.hits, s1.hits + 1);
  EXPECT_EQ(s2.misses, s1.misses);
  EXPECT_EQ(s2.live_buffers, 1u);
  EXPECT_EQ(s2.bytes_in_use, 4096u);
  EXPECT_GE(s2.peak_bytes, 4096u);
}

TEST(Pool, ReusedBufferHoldsNewValues) {
  // A buffer freed while a dispatch still reads it must not be overwritten early.
  Device dev = Device::open();
  GLT_RNG(rng);
  auto a = fast_uniform(rng, 5000);
  Tensor ta = Tensor::from_host(dev, a, {5000});
  Tensor r;
  {
    Tensor tmp = ta * 2.0;
    r = tmp + 1.0;
  }  // tmp's buffer returns to the pool while the add may still be pending
  Tensor reuse = full(dev, {5000}, 42.0);
  auto got = r.to_vector();
  std::vector<double> ref(5000);
  for (int i = 0; i < 5000; ++i) ref[i] = 2.0 * a[i] + 1.0;
  EXPECT_TRUE(close(got, ref, 1e-6, 1e-6));
  EXPECT_EQ(reuse.to_vector(), std::vector<float>(5000, 42.0f));
}

TEST(Pool, TrimFreesCachedBuffers) {
  Device dev = Device::open();
  { Tensor a = Tensor::empty(dev, {100}), b = Tensor::empty(dev, {100000}); }
  EXPECT_EQ(dev.pool_stats().cached_buffers, 2u);
  dev.trim();
  const auto s = dev.pool_stats();
  EXPECT_EQ(s.cached_buffers, 0u);
  EXPECT_EQ(s.bytes_allocated, 0u);
}

TEST(Pool, MemoryLimitThrowsOutOfMemoryAndDeviceStaysUsable) {
  Device dev = Device::open();
  dev.set_memory_limit(1 << 20);
  Tensor small = ones(dev, {1000});
  try {
    Tensor big = Tensor::empty(dev, {1 << 19});  // 2 MiB
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("memory limit"), std::string::npos) << m;
    EXPECT_NE(m.find("1048576"), std::string::npos) << m;
  }
  EXPECT_EQ(dev.pool_stats().memory_limit, 1u << 20);
  EXPECT_EQ((small + small).to_vector(), std::vector<float>(1000, 2.0f));
  // Freed buffers are trimmed to make room before giving up.
  { Tensor a = Tensor::empty(dev, {100000}); }
  EXPECT_NO_THROW(Tensor::empty(dev, {150000}));  // 786432-byte class + 4096 in use
  dev.set_memory_limit(0);
  EXPECT_NO_THROW(Tensor::empty(dev, {1 << 19}));
}

TEST(Pool, LargerThanMaxSsboIsLimitError) {
  Device dev = Device::open();
  const std::int64_t max = dev.caps().max_ssbo_block_size;
  try {
    Tensor::empty(dev, {max / 4 + 1});
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("max SSBO block size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(max)), std::string::npos) << e.what();
  }
  EXPECT_EQ(dev.pool_stats().live_buffers, 0u);
  EXPECT_THROW(Tensor::empty(dev, {1, 1, 1, 1, 1, 1, 1, 1, 1}), LimitError);
  EXPECT_THROW(Tensor::empty(dev, {-1}), ValueError);
  EXPECT_THROW(Tensor::empty(dev, {1 << 16, 1 << 16}), LimitError);
}

// Device::set_ssbo_limit lowers the size that allocations are checked against (and that ops
// split their workspaces to fit: tests/nn, tests/ops); the capabilities keep the device's
// value, and 0 gives the device's limit back.
TEST(Pool, LoweredSsboLimit) {
  Device dev = Device::open();
  const std::int64_t max = dev.caps().max_ssbo_block_size;
  dev.set_ssbo_limit(4096);
  EXPECT_NO_THROW(Tensor::empty(dev, {1024}));
  try {
    Tensor::empty(dev, {1025});
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("max SSBO block size of 4096 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Device::set_ssbo_limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dev.caps().max_ssbo_block_size, max);
  dev.set_ssbo_limit(max * 2);  // never above the device's
  EXPECT_THROW(Tensor::empty(dev, {max / 4 + 1}), LimitError);
  dev.set_ssbo_limit(0);
  EXPECT_NO_THROW(Tensor::empty(dev, {1025}));
  EXPECT_THROW(dev.set_ssbo_limit(-1), ValueError);
}

TEST(Pool, ZeroSizeTensors) {
  Device dev = Device::open();
  Tensor z = Tensor::empty(dev, {0, 3});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_TRUE(z.to_vector().empty());
  EXPECT_TRUE((z + z).to_vector().empty());
  EXPECT_EQ((z + z).shape(), (Shape{0, 3}));
}

TEST(Pool, UploadsNeverReuseBuffersStillInUse) {
  // A buffer released while a recorded dispatch still uses it must not receive host uploads
  // (drivers do not order glBufferSubData against in-flight shader access).
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  GLT_RNG(rng);
  auto a = fast_uniform(rng, 2000);
  Tensor x = Tensor::from_host(dev, a, {2000});
  Tensor y;
  GLuint busy = 0;
  {
    Tensor tmp = x * 2.0;  // pending dispatch writes tmp
    busy = tmp.impl()->storage->buffer();
    y = tmp + 1.0;  // pending dispatch reads tmp
  }                 // tmp released while both are pending
  Tensor up = Tensor::from_host(dev, a, {2000});
  EXPECT_NE(up.impl()->storage->buffer(), busy);
  Tensor out = Tensor::empty(dev, {2000});  // a kernel output may reuse it (barriers order it)
  EXPECT_EQ(out.impl()->storage->buffer(), busy);
  dev.synchronize();
  {
    Tensor z = x * 3.0;
    busy = z.impl()->storage->buffer();
  }
  dev.synchronize();  // now idle: an upload may reuse it
  Tensor up2 = Tensor::from_host(dev, a, {2000});
  EXPECT_EQ(up2.impl()->storage->buffer(), busy);
  std::vector<double> ref(2000);
  for (int i = 0; i < 2000; ++i) ref[i] = 2.0 * a[i] + 1.0;
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 1e-6));
  EXPECT_EQ(up.to_vector(), a);
}

TEST(Pool, ReadBacksOfGrowingSizesSeeTheirPendingWriters) {
  // to_vector queues its copy behind the tensor's writers in the same batch (no wait first) and
  // reuses one staging buffer, grown as reads get larger (the mapped read buffer up to 64 MiB).
  Device dev = Device::open();
  dev.set_auto_flush(1000000);  // the writers stay in the batch being recorded
  GLT_RNG(rng);
  for (std::int64_t n : {1, 1000, 300000, 17, 1500001, 5000}) {  // 1500001 floats: 6 MB
    auto a = fast_uniform(rng, static_cast<std::size_t>(n));
    Tensor x = Tensor::from_host(dev, a, {n});
    Tensor y = x * 2.0 + 1.0;  // pending writers
    std::vector<double> ref(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) ref[i] = 2.0 * a[i] + 1.0;
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 1e-6)) << "n = " << n;
    if (n > 2) {  // a view at an offset reads from its first element
      const std::vector<float> tail = y.narrow(0, 2, n - 2).to_vector();
      ASSERT_EQ(tail.size(), static_cast<std::size_t>(n - 2));
      EXPECT_FLOAT_EQ(tail[0], static_cast<float>(ref[2])) << "n = " << n;
      EXPECT_FLOAT_EQ(tail.back(), static_cast<float>(ref.back())) << "n = " << n;
    }
  }
}

// Reads of at least kParallelCopyMin (256 KiB) are copied out of the mapped read buffer (or a
// host-visible buffer) by the calling thread and helper threads, each a part (parallel_copy), into a
// result allocated while the GPU works (read_to_host's HostDest): every element of reads just
// below and at the threshold, of 1 MiB + 4 bytes and 8 MiB, of views at an odd offset, and of f16
// tensors (to_bytes, then the conversion), with pending writers. Sabotage: each helper copying
// the next part instead of its own: fails (here and in the two tests below).
TEST(Pool, LargeReadBacksSplitOverHelperThreadsKeepEveryElement) {
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  GLT_RNG(rng);
  for (std::int64_t n : {std::int64_t{65535}, std::int64_t{65536}, std::int64_t{262145}, std::int64_t{2097152}}) {
    auto a = fast_uniform(rng, static_cast<std::size_t>(n));
    Tensor x = Tensor::from_host(dev, a, {n});
    for (const std::int64_t off : {std::int64_t{0}, std::int64_t{7}}) {
      Tensor y = x * 2.0 + 1.0;  // pending writers
      const std::vector<float> got = y.narrow(0, off, n - off).to_vector();
      ASSERT_EQ(got.size(), static_cast<std::size_t>(n - off));
      std::int64_t bad = 0;
      for (std::int64_t i = 0; i < n - off; ++i)
        bad += got[static_cast<std::size_t>(i)] == static_cast<float>(2.0 * a[static_cast<std::size_t>(off + i)] + 1.0)
                   ? 0
                   : 1;
      EXPECT_EQ(bad, 0) << "n = " << n << ", offset " << off;
    }
    Tensor h = (x * 2.0 + 1.0).to(DType::f16);
    const std::vector<float> hv = h.to_vector();
    ASSERT_EQ(hv.size(), static_cast<std::size_t>(n));
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double ref = 2.0 * a[static_cast<std::size_t>(i)] + 1.0;
      bad += std::abs(hv[static_cast<std::size_t>(i)] - ref) <= 1e-3 * std::abs(ref) + 1e-3 ? 0 : 1;
    }
    EXPECT_EQ(bad, 0) << "f16, n = " << n;
  }
}

// Tensor::to_host: the bytes into the caller's memory (no allocation, nothing zeroed), through
// every path of read_to_host: small reads, the helpers' split from 256 KiB, the read in pieces
// of at least kPieceBytes from 1 MiB (GLTENSOR_READ_PIECES 1, 3, 8: 3 to 8 pieces, the last one
// shorter), views at an
// odd offset, f16 and i32 tensors, with pending writers; the bytes around the destination are
// untouched; a wrong size throws ValueError and writes nothing. Sabotage: a piece copied from
// the read buffer's start (every piece's bytes the first piece's), or the last piece left out:
// fail.
TEST(Pool, ToHostWritesEveryByteIntoTheCallersMemoryInOneOrManyPieces) {
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  GLT_RNG(rng);
  for (const int pieces : {1, 3, 8}) {
    // Under GLTENSOR_STAGING=copy (test_pool_staging_copy) a read maps a buffer of its own and
    // the pieces do not apply: one pass.
    if (pieces != 1 && !detail::settings().persistent_staging) continue;
    ScopedSettings s;
    s->read_pieces = pieces;
    for (const std::int64_t n :
         {std::int64_t{5}, std::int64_t{65536}, std::int64_t{262143}, std::int64_t{262151}, std::int64_t{1600003}}) {
      auto a = fast_uniform(rng, static_cast<std::size_t>(n));
      Tensor x = Tensor::from_host(dev, a, {n});
      for (const std::int64_t off : {std::int64_t{0}, std::int64_t{3}}) {
        const Tensor y = (x * 2.0 + 1.0).narrow(0, off, n - off);  // pending writers
        const std::size_t bytes = static_cast<std::size_t>(n - off) * 4;
        std::vector<unsigned char> mem(bytes + 64, 0xA5);
        y.to_host(mem.data() + 32, bytes);
        std::int64_t bad = 0;
        for (std::int64_t i = 0; i < n - off; ++i) {
          float v;
          std::memcpy(&v, mem.data() + 32 + 4 * i, 4);
          bad += v == static_cast<float>(2.0 * a[static_cast<std::size_t>(off + i)] + 1.0) ? 0 : 1;
        }
        EXPECT_EQ(bad, 0) << "n = " << n << ", offset " << off << ", pieces " << pieces;
        for (std::size_t i = 0; i < 32; ++i)
          ASSERT_TRUE(mem[i] == 0xA5 && mem[32 + bytes + i] == 0xA5) << "guard byte " << i << ", n = " << n;
      }
      if (n == 1600003) {  // f16 and i32: their own element sizes
        const Tensor h = (x * 2.0 + 1.0).to(DType::f16);
        std::vector<std::uint8_t> hb(static_cast<std::size_t>(n) * 2);
        h.to_host(hb.data(), hb.size());
        EXPECT_EQ(hb, h.to_bytes()) << "pieces " << pieces;
        const Tensor k = (x * 1000.0).to(DType::i32);
        std::vector<std::int32_t> kv(static_cast<std::size_t>(n));
        k.to_host(kv.data(), kv.size() * 4);
        EXPECT_EQ(kv, k.to_int_vector()) << "pieces " << pieces;
      }
    }
  }
  Tensor x = Tensor::from_host(dev, std::vector<float>{1, 2, 3}, {3});
  std::vector<float> out(4, -7.0f);
  EXPECT_THROW(x.to_host(out.data(), 16), ValueError);
  EXPECT_THROW(x.to_host(out.data(), 8), ValueError);
  EXPECT_THROW(x.to_host(nullptr, 12), ValueError);
  EXPECT_EQ(out, std::vector<float>(4, -7.0f));
  x.narrow(0, 1, 0).to_host(nullptr, 0);  // empty: nothing to write
  x.to_host(out.data(), 12);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, -7}));
}

// stream_copy alone and through parallel_copy (host_copy.hpp): every destination alignment
// against 16 bytes, sizes below, at and past one 64-byte block and past kParallelPieceMin, with
// guard bytes on both sides that must stay as they were. Sabotage: the tail after the last
// 64-byte block left out: fail.
TEST(Pool, StreamCopyKeepsEveryByteAndNoMore) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{63},
                              std::size_t{64}, std::size_t{65}, std::size_t{1000}, detail::kParallelPieceMin + 77}) {
    for (std::size_t at = 0; at < 18; at += (n > 100000 ? 5 : 1)) {
      std::vector<unsigned char> src(n + 3), dst(n + 40, 0xAB), dst2(n + 40, 0xAB);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
      detail::stream_copy(dst.data() + at, src.data() + 3, n);
      detail::parallel_copy(dst2.data() + at, src.data() + 3, n, true);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const unsigned char want = i >= at && i < at + n ? src[i - at + 3] : 0xAB;
        bad += (dst[i] != want) + (dst2[i] != want);
      }
      EXPECT_EQ(bad, 0u) << "n = " << n << ", destination at " << at;
    }
  }
}

// parallel_copy alone (host_copy.hpp): sizes just below and past kParallelPieceMin and odd
// ones, source and destination at odd byte offsets, and two threads copying at once (one of
// them falls back to memcpy): every byte. Sabotage: a chunk of floor(n / 8) (the tail's bytes
// left out), or a helper taking the next chunk: fail.
TEST(Pool, ParallelCopyKeepsEveryByte) {
  const std::size_t min = detail::kParallelPieceMin;
  for (const std::size_t n : {min - 1, min, min + 13, (std::size_t{1} << 20) + 7}) {
    std::vector<unsigned char> src(n + 3), dst1(n + 1), dst2(n + 1);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    std::thread other([&] { detail::parallel_copy(dst2.data() + 1, src.data() + 3, n); });
    detail::parallel_copy(dst1.data() + 1, src.data() + 3, n);
    other.join();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += (dst1[i + 1] != src[i + 3]) + (dst2[i + 1] != src[i + 3]);
    EXPECT_EQ(bad, 0u) << "n = " << n;
  }
}

TEST(Pool, ReadBacksOfViewsAtAnOffsetSeeTheirPendingWriters) {
  // A read of a tensor written in the batch being recorded copies behind the batch's dispatches,
  // and the batch's fence follows the copy (one fence): a view's read starts at its first element,
  // and a later dispatch of the same batch (writing another tensor) is covered too.
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  GLT_RNG(rng);
  // 1100000 floats: through the mapped read buffer; (1 << 24) + 1000: past its 64 MiB (Storage::download's own
  // staging buffer)
  for (std::int64_t n : {std::int64_t{3}, std::int64_t{1000}, std::int64_t{3264}, std::int64_t{300001},
                         std::int64_t{1100000}, (std::int64_t{1} << 24) + 1000}) {
    auto a = fast_uniform(rng, static_cast<std::size_t>(n));
    Tensor x = Tensor::from_host(dev, a, {n});
    Tensor y = x * 2.0 + 1.0;  // pending writers
    Tensor z = y * 3.0;        // a later dispatch of the same batch
    const std::int64_t off = n / 3 + 1;
    const std::vector<float> tail = y.narrow(0, off, n - off).to_vector();
    ASSERT_EQ(tail.size(), static_cast<std::size_t>(n - off));
    bool ok = true;
    for (std::int64_t i = 0; i < n - off && ok; ++i) {
      const double ref = 2.0 * a[static_cast<std::size_t>(off + i)] + 1.0;
      ok = std::abs(tail[static_cast<std::size_t>(i)] - ref) <= 1e-6 + 1e-6 * std::abs(ref);
      EXPECT_TRUE(ok) << "n = " << n << ", element " << off + i << ": " << tail[static_cast<std::size_t>(i)]
                      << " against " << ref;
    }
    Tensor w = z + 1.0;  // pending again
    const std::vector<float> zv = w.narrow(0, 1, n - 1).to_vector();
    EXPECT_NEAR(zv[0], 3.0 * (2.0 * a[1] + 1.0) + 1.0, 1e-5) << "n = " << n;
    EXPECT_NEAR(zv.back(), 3.0 * (2.0 * a.back() + 1.0) + 1.0, 1e-5) << "n = " << n;
  }
}

// A read of a tensor written in the current batch gets one barrier, GL_ALL_BARRIER_BITS (with
// GL_BUFFER_UPDATE_BARRIER_BIT, which a copy after shader writes needs), before its copy, even
// where a later dispatch's hazard barrier (storage and uniform bits) made the queue forget the
// write: y written, then b = a + 1 and c = b * 2 (a barrier between them), then y's read; the
// batch's end after the copy adds none (Queue::barrier_for_copy). The same for a read of 8 MiB
// (through the mapped read buffer) and one of 64 MiB + 256 bytes, past the read buffer's 64 MiB
// (the batch ended before Storage::download's copy). Sabotage: without
// barrier_for_copy in read_to_host the log is copy, barrier; the barrier before the copy as a
// second one (the code before): 2 barriers.
TEST(Pool, ReadBackOfAWriteTheQueueForgotGetsABarrier) {
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  auto& q = dev.impl()->queue();
  for (const std::int64_t n : {std::int64_t{3}, std::int64_t{1} << 21 /* 8 MiB */, (std::int64_t{1} << 24) + 64}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::vector<float> xs(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 1000);
    Tensor x = Tensor::from_host(dev, xs, {n});
    Tensor a = Tensor::from_host(dev, std::vector<float>{4, 5}, {2});
    dev.synchronize();
    Tensor y = x * 2.0;
    Tensor b = a + 1.0;
    Tensor c = b * 2.0;  // its barrier clears the queue's record of y's write
    const auto b0 = q.barriers();
    std::vector<GlCall> log;
    gl_log = &log;
    const std::vector<float> got = y.to_vector();
    gl_log = nullptr;
    EXPECT_EQ(q.barriers() - b0, 1u);
    // Reads of 1 MiB or more copy in pieces (GLTENSOR_READ_PIECES): one barrier, then every piece's copy.
    const std::string order = gl_order(log);
    EXPECT_TRUE(order.size() >= 2 && order[0] == 'b' && order.find_first_not_of('c', 1) == std::string::npos)
        << order << ": a barrier, then the copies, and no barrier after them";
    if (!log.empty() && log[0].what == 'b') {
      EXPECT_EQ(log[0].bits, static_cast<GLbitfield>(GL_ALL_BARRIER_BITS));
    }
    bool right = true;
    for (std::size_t i = 0; i < xs.size(); ++i) right = right && got[i] == 2.0f * xs[i];
    EXPECT_TRUE(right);
    EXPECT_EQ(c.to_vector(), (std::vector<float>{10, 12}));
  }
}

// Queue::flush after a full barrier that followed the last dispatch issues none of its own; one
// dispatch after it, and flush issues its barrier again. barrier_for_copy with no dispatch since
// a full barrier issues none.
TEST(Pool, ABatchEndAfterACopyBarrierAddsNone) {
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  auto& q = dev.impl()->queue();
  Tensor x = Tensor::from_host(dev, std::vector<float>{1, 2}, {2});
  dev.synchronize();
  Tensor y = x + 1.0;
  auto b0 = q.barriers();
  q.barrier_for_copy();
  EXPECT_EQ(q.barriers() - b0, 1u);
  EXPECT_EQ(q.last_barrier_bits(), static_cast<GLbitfield>(GL_ALL_BARRIER_BITS));
  q.barrier_for_copy();
  q.flush();
  EXPECT_EQ(q.barriers() - b0, 1u) << "nothing dispatched since the full barrier";
  Tensor z = y * 3.0;
  b0 = q.barriers();
  q.flush();
  EXPECT_EQ(q.barriers() - b0, 1u) << "a dispatch since";
  q.barrier_for_copy();
  EXPECT_EQ(q.barriers() - b0, 1u) << "the batch end's barrier covers the copy";
  EXPECT_EQ(z.to_vector(), (std::vector<float>{6, 9}));
}

TEST(Pool, UploadsThroughTheStagingRingKeepEveryValue) {
  // Uploads go through a persistently mapped ring of two 4 MiB halves, larger ones in pieces (where the
  // context has buffer storage; GLTENSOR_STAGING=copy: a buffer per upload, the ctest entry
  // test_pool_staging_copy). With every copy and its reader still pending, the host fills the
  // ring past both halves several times: a half is refilled only after its copies ran. (The
  // ring forced where uploads would go by glBufferSubData: software rasterizers.)
  ScopedSettings set;
  set->upload_direct_bytes = 0;
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  GLT_RNG(rng);
  const std::int64_t sizes[] = {1, 17, 300001, 1048576 /* exactly a half */, 1048577 /* past it */, 4099, 700000};
  std::vector<std::vector<float>> in;
  std::vector<Tensor> out;
  for (int round = 0; round < 4; ++round)
    for (std::int64_t n : sizes) {
      in.push_back(fast_uniform(rng, static_cast<std::size_t>(n)));
      Tensor x = Tensor::from_host(dev, in.back(), {n});
      out.push_back(x * 2.0 + static_cast<double>(out.size()));  // a pending reader of the upload
    }
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::vector<double> ref(in[i].size());
    for (std::size_t j = 0; j < ref.size(); ++j) ref[j] = 2.0 * in[i][j] + static_cast<double>(i);
    EXPECT_TRUE(close(out[i].to_vector(), ref, 1e-6, 1e-6)) << "upload " << i << " of " << in[i].size() << " floats";
  }
}

// The ways an upload can go (upload38): glBufferSubData from the caller's memory (the software
// rasterizers' default), the ring in the fewest pieces (one up to a half, the GPUs' default), and
// in more pieces, written by memcpy, streaming stores, the helper threads or both, at sizes below, at and past
// the pieces' 1 MiB, past a half of the ring (4 MiB: pieces in both halves) and past the whole
// ring (9 MiB: each half refilled within one upload), odd byte counts (the padded last word),
// every copy and its reader still pending: every value through a kernel against float64, and
// every byte read back. (Under GLTENSOR_STAGING=copy, test_pool_staging_copy, the ring's ways
// fall back to a buffer per upload.) Sabotage: a piece copied to the destination's byte 0, or
// streaming stores that leave out the last 64 bytes' tail: fail.
TEST(Pool, UploadsEveryWayKeepEveryValue) {
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  GLT_RNG(rng);
  struct Way {
    const char* name;
    std::int64_t direct;
    int pieces;
    detail::UploadCopySetting copy;
  };
  using C = detail::UploadCopySetting;
  const Way ways[] = {
      {"direct", 1, 1, C::threads_stream},      {"ring, fewest pieces", 0, 1, C::plain},
      {"3 pieces, memcpy", 0, 3, C::plain},     {"8 pieces, streaming", 0, 8, C::stream},
      {"8 pieces, threads", 0, 8, C::threads},  {"8 pieces, threads + streaming", 0, 8, C::threads_stream},
      {"64 pieces, threads", 0, 64, C::threads}};
  const std::int64_t floats[] = {1, 3, 65536, 262143, 262144, 262145, (4 << 18) + 65, (9 << 18) + 3};
  const std::int64_t odd_bytes[] = {1, 5, (1 << 20) + 3};
  for (const Way& w : ways) {
    // Under GLTENSOR_STAGING=copy every way through the ring is a buffer per upload, pieces
    // and host copies aside: the first of them only.
    if (w.direct == 0 && &w != &ways[1] && !detail::settings().persistent_staging) continue;
    ScopedSettings set;
    set->upload_direct_bytes = w.direct;
    set->upload_pieces = w.pieces;
    set->upload_copy = w.copy;
    std::vector<std::vector<float>> in;
    std::vector<Tensor> out;
    for (const std::int64_t n : floats) {
      in.push_back(fast_uniform(rng, static_cast<std::size_t>(n)));
      Tensor x = Tensor::from_host(dev, in.back(), {n});
      out.push_back(x * 2.0 + static_cast<double>(out.size()));  // a pending reader of the upload
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::vector<double> ref(in[i].size());
      for (std::size_t j = 0; j < ref.size(); ++j) ref[j] = 2.0 * in[i][j] + static_cast<double>(i);
      EXPECT_TRUE(close(out[i].to_vector(), ref, 1e-6, 1e-6)) << w.name << ": " << in[i].size() << " floats";
    }
    for (const std::int64_t n : odd_bytes) {
      std::vector<std::uint8_t> b(static_cast<std::size_t>(n));
      fill_random(rng, b);
      const Tensor t = Tensor::from_bytes(dev, b.data(), b.size(), {n}, DType::u8);
      EXPECT_EQ(t.to_bytes(), b) << w.name << ": " << n << " bytes";
    }
  }
}

// Two threads, each with its own device, upload in pieces written by the helper threads at the
// same time (one thread's parallel_copy falls back to memcpy while the other's runs): every byte.
TEST(Pool, TwoThreadsUploadingInPiecesKeepEveryByte) {
  ScopedSettings set;
  set->upload_direct_bytes = 0;
  set->upload_pieces = 8;
  set->upload_copy = detail::UploadCopySetting::threads_stream;
  GLT_RNG(seeds);
  const std::uint64_t seed[2] = {seeds(), seeds()};
  std::size_t bad[2] = {0, 0};
  const auto work = [&](int id) {
    Device dev = Device::open();
    std::mt19937_64 rng(seed[id]);
    for (int i = 0; i < 6; ++i) {
      std::vector<std::uint8_t> b((std::size_t{3} << 20) + 4 * static_cast<std::size_t>(i) + 4);
      fill_random(rng, b);
      const Tensor t = Tensor::from_bytes(dev, b.data(), b.size(), {static_cast<std::int64_t>(b.size())}, DType::u8);
      bad[id] += t.to_bytes() != b;
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  EXPECT_EQ(bad[0] + bad[1], 0u);
}

// Device::synchronize() after an upload that no dispatch follows (review38's R11: the queue
// fenced only batches with a dispatch, so the upload's copies could still be running, or not yet
// submitted, when synchronize returned): the queue notes every transfer (glBufferSubData, a
// glCopyBufferSubData from the ring or a staging buffer), flush() leaves it pending, and
// synchronize() waits for it and clears it; a batch end after it clears it too. Every way an
// upload goes, in one piece and in pieces past both ring halves. Sabotage: copy_buffer or the
// direct path without note_transfer, or wait_all without its fence: fail.
TEST(Pool, AnUploadWithNoDispatchAfterItIsPendingUntilSynchronize) {
  GLT_RNG(rng);
  struct Way {
    const char* name;
    std::int64_t direct;
    int pieces;
    bool persistent;
  };
  const Way ways[] = {{"glBufferSubData", std::int64_t{1} << 40, 1, true},
                      {"ring, fewest pieces", 0, 1, true},
                      {"ring, 8 pieces", 0, 8, true},
                      {"a staging buffer", 0, 1, false}};
  for (const Way& w : ways) {
    ScopedSettings set;
    set->upload_direct_bytes = w.direct;
    set->upload_pieces = w.pieces;
    set->persistent_staging = w.persistent;
    Device dev = Device::open();
    auto& q = dev.impl()->queue();
    for (const std::int64_t n : {std::int64_t{3}, (std::int64_t{3} << 20) + 5}) {  // 12 B; 12 MiB: past both halves
      SCOPED_TRACE(std::string(w.name) + ", " + std::to_string(n) + " floats");
      const std::vector<float> v = fast_uniform(rng, static_cast<std::size_t>(n));
      const std::uint64_t d0 = q.dispatches(), b0 = q.batch();
      Tensor x = Tensor::from_host(dev, v, {n});
      ASSERT_EQ(q.dispatches(), d0) << "an upload dispatches nothing (the case under test)";
      EXPECT_TRUE(q.transfer_pending());
      dev.flush();  // submits it; no batch to end
      EXPECT_EQ(q.batch(), b0);
      EXPECT_TRUE(q.transfer_pending());
      dev.synchronize();
      EXPECT_FALSE(q.transfer_pending());
      EXPECT_EQ(x.to_vector(), v);
      // A batch end after the upload (a dispatch reading it) covers it: no fence of its own.
      Tensor y = Tensor::from_host(dev, v, {n});
      EXPECT_TRUE(q.transfer_pending());
      Tensor z = y + 1.0;
      q.flush();
      EXPECT_FALSE(q.transfer_pending());
      dev.synchronize();
    }
  }
}

// A read-back waits for a fence made after its copy, which follows every transfer noted before it (fences signal
// in order): the read clears the queue's transfer note, so that synchronize() right after it makes no round trip of
// its own (rt39's note stayed set: one more fence and wait). Round trips counted by the wait trace (client_wait's
// calls), for each read path: the mapped read buffer and a staging buffer (GLTENSOR_STAGING), a tensor whose batch
// has ended and one still being recorded, an asynchronous read; an upload after a read's fence stays noted.
TEST(Pool, AReadBackClearsTheTransferNote) {
  GLT_RNG(rng);
  for (const bool persistent : {true, false}) {
    ScopedSettings set;
    set->persistent_staging = persistent;
    Device dev = Device::open();
    auto& q = dev.impl()->queue();
    const auto sync_waits = [&] {
      gltensor::detail::WaitTrace tr;
      gltensor::detail::set_wait_trace(&tr);
      dev.synchronize();
      gltensor::detail::set_wait_trace(nullptr);
      return tr.waits;
    };
    for (const std::int64_t n : {std::int64_t{5}, (std::int64_t{1} << 19) + 3}) {  // 20 B; 2 MiB: in pieces
      SCOPED_TRACE(std::string(persistent ? "mapped read buffer, " : "staging buffer, ") + std::to_string(n) +
                   " floats");
      const std::vector<float> v = fast_uniform(rng, static_cast<std::size_t>(n));
      std::vector<float> twice(v);
      for (float& f : twice) f *= 2;
      Tensor x = Tensor::from_host(dev, v, {n});
      // The count itself: an upload with no dispatch after it costs synchronize() one round trip, then none.
      EXPECT_TRUE(q.transfer_pending());
      EXPECT_EQ(sync_waits(), 1);
      EXPECT_EQ(sync_waits(), 0);
      Tensor y = x * 2.0;
      dev.synchronize();
      EXPECT_EQ(y.to_vector(), twice);  // y's batch has ended: the copy, then a fence of the read's own
      EXPECT_FALSE(q.transfer_pending());
      EXPECT_EQ(sync_waits(), 0);
      Tensor z = y * -1.0;  // still being recorded: the batch end after the copy covers it
      const std::vector<float> zv = z.to_vector();
      EXPECT_EQ(zv.front(), -twice.front());
      EXPECT_EQ(zv.back(), -twice.back());
      EXPECT_FALSE(q.transfer_pending());
      EXPECT_EQ(sync_waits(), 0);
      AsyncRead r = y.to_host_async();  // its fence follows its copy
      EXPECT_TRUE(q.transfer_pending());
      EXPECT_EQ(r.get_float(), twice);
      EXPECT_FALSE(q.transfer_pending());
      EXPECT_EQ(sync_waits(), 0);
      AsyncRead r2 = y.to_host_async();
      Tensor w = Tensor::from_host(dev, v, {n});  // after r2's fence: not covered by it
      EXPECT_EQ(r2.get_float(), twice);
      EXPECT_TRUE(q.transfer_pending());
      EXPECT_EQ(sync_waits(), 1);
      EXPECT_EQ(w.to_vector(), v);
    }
  }
}

// What an interop user sees (review38's R11): after from_host and synchronize(), with no
// dispatch after the upload, a fence that the application put into the device's context between
// the two has signaled (every command before synchronize has finished: the device is idle).
// Public API and GL only, and the ways from the environment (GLTENSOR_UPLOAD_DIRECT,
// GLTENSOR_UPLOAD_PIECES, GLTENSOR_STAGING), so that the GPU pack runs it against main's library
// too, where synchronize() waited for no upload. llvmpipe copies synchronously, so it passes there
// either way; the GPU is where it can fail.
TEST(Pool, SynchronizeLeavesNoUploadRunning) {
  Device dev = Device::open();  // no context of the caller's: the device's stays current
  GLT_RNG(rng);
  for (const std::int64_t n : {std::int64_t{3}, std::int64_t{1} << 18, (std::int64_t{3} << 20) + 5}) {
    SCOPED_TRACE(std::to_string(n) + " floats");
    const std::vector<float> v = fast_uniform(rng, static_cast<std::size_t>(n));
    dev.synchronize();
    Tensor x = Tensor::from_host(dev, v, {n});
    GLsync app = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);  // not flushed: synchronize must submit it too
    ASSERT_NE(app, nullptr);
    dev.synchronize();
    GLint status = 0;
    glGetSynciv(app, GL_SYNC_STATUS, 1, nullptr, &status);
    glDeleteSync(app);
    EXPECT_EQ(status, GL_SIGNALED) << "a fence issued after the upload, before synchronize(), has not signaled";
    EXPECT_EQ(x.to_vector(), v);
  }
}

// An upload past the SSBO limit (the device's, or one lowered to 8 MiB: past a ring half, in
// pieces) is a LimitError before anything is written, with no buffer left; at the limit it goes.
TEST(Pool, UploadPastTheSsboLimitIsLimitError) {
  Device dev = Device::open();
  ScopedSettings set;
  set->upload_direct_bytes = 0;
  set->upload_pieces = 8;
  const std::int64_t max = dev.caps().max_ssbo_block_size;
  const std::int64_t limits[] = {std::int64_t{8} << 20, max};
  for (const std::int64_t limit : limits) {
    if (limit > (std::int64_t{256} << 20)) continue;  // (llvmpipe's 128 MiB; not a GPU's gigabytes)
    dev.set_ssbo_limit(limit);
    std::vector<std::uint8_t> b(static_cast<std::size_t>(limit) + 4, 7);
    EXPECT_THROW(Tensor::from_bytes(dev, b.data(), b.size(), {limit + 4}, DType::u8), LimitError) << limit;
    EXPECT_EQ(dev.pool_stats().live_buffers, 0u);
    b.resize(static_cast<std::size_t>(limit));
    b.back() = 9;
    EXPECT_EQ(Tensor::from_bytes(dev, b.data(), b.size(), {limit}, DType::u8).to_bytes(), b) << limit;
  }
  dev.set_ssbo_limit(0);
}

TEST(Pool, LargeBuffersOnCudaMemoryHoldEveryValue) {
  // Buffers of kCudaMemoryMin bytes and more live on CUDA's memory where the device can
  // (NVIDIA's GL with libcuda: runtime/cuda_memory.hpp), else on the pool's own: either way
  // uploads, kernels, reuse after release and read-backs keep every value. Sizes at, above and
  // below the threshold, odd ones included (CUDA's 2 MiB granules are larger than the classes).
  Device dev = Device::open();
  GLT_RNG(rng);
  const std::size_t min_floats = detail::kCudaMemoryMin / 4;
  const std::size_t sizes[] = {min_floats, min_floats + 1, 3 * min_floats / 2 + 777, min_floats - 1, 5000001};
  for (int round = 0; round < 2; ++round)  // the second round reuses the first's buffers
    for (std::size_t n : sizes) {
      const auto a = fast_uniform(rng, n), b = fast_uniform(rng, n);
      const auto ni = static_cast<std::int64_t>(n);
      Tensor ta = Tensor::from_host(dev, a, {ni}), tb = Tensor::from_host(dev, b, {ni});
      Tensor c = ta + tb, d = c * tb;
      std::vector<double> ref_c(n), ref_d(n);
      for (std::size_t i = 0; i < n; ++i) {
        ref_c[i] = static_cast<float>(static_cast<double>(a[i]) + b[i]);
        ref_d[i] = ref_c[i] * b[i];
      }
      EXPECT_TRUE(close(c.to_vector(), ref_c, 0, 0)) << n << " floats, round " << round;
      EXPECT_TRUE(close(d.to_vector(), ref_d, 1e-6, 1e-7)) << n << " floats, round " << round;
    }
  const detail::CudaMemory* cuda = dev.impl()->find_extension<detail::CudaMemory>();
  const std::size_t on_cuda = cuda ? cuda->buffers() : 0;
  std::printf("pool buffers on CUDA memory: %zu (%s)\n", on_cuda, dev.caps().renderer.c_str());
  if (dev.impl()->adapter().software || !detail::settings().cuda_memory) {
    EXPECT_EQ(on_cuda, 0u);  // GLTENSOR_CUDA_MEMORY=0: the pool's own buffers only
  }
  dev.trim();  // every cached buffer deleted, memory objects with them
  if (cuda) {
    EXPECT_EQ(cuda->buffers(), 0u);
  }
}

TEST(Pool, LargeBuffersGoToCudaMemoryWhereTheDriverHasThePath) {
  // Where the driver has the path (NVIDIA's GL, GL_EXT_memory_object_fd, libcuda.so.1, a device
  // the library opened itself, GLTENSOR_CUDA_MEMORY not 0), every new buffer of kCudaMemoryMin
  // bytes and more is on CUDA's memory and every smaller one is not: a path that turned itself
  // off would otherwise pass the value tests unseen (review10's finding 4).
  Device dev = Device::open();
  const Capabilities& caps = dev.caps();
  std::string missing;
  if (dev.impl()->adapter().software) missing += " a software renderer;";
  if (caps.vendor.find("NVIDIA") == std::string::npos) missing += " vendor " + caps.vendor + ", not NVIDIA;";
  if (!caps.has_extension("GL_EXT_memory_object_fd")) missing += " no GL_EXT_memory_object_fd;";
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
    dlclose(lib);
  else
    missing += " no libcuda.so.1;";
  if (!detail::settings().cuda_memory) missing += " GLTENSOR_CUDA_MEMORY=0;";
  if (!missing.empty()) GTEST_SKIP() << "no CUDA-memory path here:" << missing << " (" << caps.renderer << ")";
  dev.trim();
  const auto on_cuda = [&] {
    const detail::CudaMemory* cuda = dev.impl()->find_extension<detail::CudaMemory>();
    return cuda ? cuda->buffers() : std::size_t{0};
  };
  const std::size_t before = on_cuda();
  const auto min_floats = static_cast<std::int64_t>(detail::kCudaMemoryMin / 4);
  std::vector<Tensor> kept;
  kept.push_back(zeros(dev, {min_floats}));  // exactly 4 MiB
  EXPECT_EQ(on_cuda(), before + 1) << "a 4 MiB buffer is not on CUDA memory (" << caps.renderer << ")";
  kept.push_back(zeros(dev, {3 * min_floats + 5}));  // an odd size past it
  EXPECT_EQ(on_cuda(), before + 2) << "a buffer of 12 MiB + 20 bytes is not on CUDA memory";
  kept.push_back(zeros(dev, {min_floats / 4}));  // 1 MiB: the pool's own
  EXPECT_EQ(on_cuda(), before + 2) << "a 1 MiB buffer is on CUDA memory";
  std::printf("pool buffers on CUDA memory: %zu of %zu (%s)\n", on_cuda() - before, kept.size(), caps.renderer.c_str());
  const std::vector<float> z = kept[1].to_vector();
  EXPECT_EQ(std::count(z.begin(), z.end(), 0.0f), static_cast<std::ptrdiff_t>(z.size()));
}

TEST(Pool, FromHostOfItsOwnDtypeKeepsEveryBit) {
  // from_host of float values into f32 (int32 into i32, uint8 into u8) uploads the values' bytes
  // as they are, without the conversion pass: every bit comes back, NaN payloads, -0 and
  // subnormals included, and an odd byte count (u8) keeps its last bytes.
  Device dev = Device::open();
  GLT_RNG(rng);
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{3264}, std::size_t{70001}}) {
    std::vector<std::uint32_t> bits(n);
    for (auto& b : bits) b = static_cast<std::uint32_t>(rng());
    const std::uint32_t specials[] = {0x7fa00001u, 0xffc00123u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f800000u};
    for (std::size_t i = 0; i < n && i < 6; ++i) bits[i] = specials[(i + n) % 6];
    std::vector<float> f(n);
    std::memcpy(f.data(), bits.data(), n * 4);
    const std::vector<std::uint8_t> fb = Tensor::from_host(dev, f, {static_cast<std::int64_t>(n)}).to_bytes();
    ASSERT_EQ(fb.size(), n * 4);
    EXPECT_EQ(std::memcmp(fb.data(), bits.data(), n * 4), 0) << "f32, n = " << n;
    std::vector<std::int32_t> iv(n);
    std::memcpy(iv.data(), bits.data(), n * 4);
    iv[0] = std::numeric_limits<std::int32_t>::min();
    EXPECT_EQ(Tensor::from_host(dev, iv, {static_cast<std::int64_t>(n)}).to_int_vector(), iv) << "i32, n = " << n;
    std::vector<std::uint8_t> u(n);
    for (std::size_t i = 0; i < n; ++i) u[i] = static_cast<std::uint8_t>(bits[i] >> 7);
    EXPECT_EQ(Tensor::from_host(dev, std::span<const std::uint8_t>(u), {static_cast<std::int64_t>(n)}).to_bytes(), u)
        << "u8, n = " << n;
  }
  // The other dtypes still convert: float values into f16, int32 into f32.
  const std::vector<float> h = {1.0f, -2.5f, 65504.0f, 0.1f};
  const std::vector<float> back = Tensor::from_host(dev, h, {4}, DType::f16).to_vector();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_EQ(back[2], 65504.0f);
  EXPECT_NEAR(back[3], 0.1, 1e-4);
  EXPECT_EQ(Tensor::from_host(dev, std::vector<std::int32_t>{-7, 1 << 24}, {2}, DType::f32).to_vector(),
            (std::vector<float>{-7.0f, 16777216.0f}));
  EXPECT_THROW(Tensor::from_host(dev, h, {5}), ShapeError);
}

TEST(Pool, FromHostOfNoElementsInEveryDtypeOfItsValues) {
  // The fast path (the values' own dtype) and the conversion alike at 0 elements: empty vectors
  // (null data) of 1-D and 2-D shapes give empty tensors of that shape and dtype, readable.
  Device dev = Device::open();
  for (const Shape& s : {Shape{0}, Shape{3, 0}, Shape{0, 5}}) {
    SCOPED_TRACE(to_string(s));
    const Tensor f = Tensor::from_host(dev, std::vector<float>{}, s);
    EXPECT_EQ(f.dtype(), DType::f32);
    EXPECT_EQ(f.shape(), s);
    EXPECT_TRUE(f.to_vector().empty());
    const Tensor i = Tensor::from_host(dev, std::vector<std::int32_t>{}, s);
    EXPECT_EQ(i.dtype(), DType::i32);
    EXPECT_TRUE(i.to_int_vector().empty());
    const Tensor u = Tensor::from_host(dev, std::span<const std::uint8_t>(), s);
    EXPECT_EQ(u.dtype(), DType::u8);
    EXPECT_EQ(u.shape(), s);
    EXPECT_TRUE(u.to_bytes().empty());
    const Tensor h = Tensor::from_host(dev, std::vector<float>{}, s, DType::f16);
    EXPECT_EQ(h.dtype(), DType::f16);
    EXPECT_TRUE(h.to_vector().empty());
    EXPECT_TRUE((f + 1.0).to_vector().empty());
  }
  EXPECT_THROW(Tensor::from_host(dev, std::vector<float>{1.0f}, {0}), ShapeError);
  EXPECT_THROW(Tensor::from_host(dev, std::vector<std::int32_t>{}, {1}), ShapeError);
}
