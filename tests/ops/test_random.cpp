// Philox random numbers: bit-exact against a host Philox4x32-10, reproducible by seed, with
// distribution checks (mean/variance within 6 standard errors).
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
std::array<std::uint32_t, 4> philox_host(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c[0], p1 = std::uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
  }
  return c;
}
}  // namespace

TEST(Random, PhiloxKnownAnswer) {
  // Random123 known-answer test for philox4x32-10 with zero counter and key.
  auto r = philox_host({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
}

TEST(Random, UniformMatchesHostPhiloxBitForBit) {
  Generator g(0x123456789abcdefULL);
  const int n = 1000;
  auto u = rand(device(), {n}, g).to_vector();
  EXPECT_EQ(g.offset(), 1u);
  for (int e = 0; e < n; ++e) {
    auto r = philox_host({static_cast<std::uint32_t>(e), 0, 0, 0}, {0x89abcdefu, 0x01234567u});
    const float want = ((r[0] >> 8) + 1.0f) / 16777216.0f - 1.0f / 16777216.0f;
    ASSERT_EQ(u[e], want) << e;
  }
}

TEST(Random, ReproducibleAndDistributed) {
  Generator g1(42), g2(42);
  auto a = randn(device(), {200000}, g1).to_vector();
  auto b = randn(device(), {200000}, g2).to_vector();
  EXPECT_EQ(a, b);
  auto c = randn(device(), {200000}, g1).to_vector();  // next offset: a different stream
  EXPECT_NE(a, c);
  double s = 0, s2 = 0;
  for (float x : a) {
    s += x;
    s2 += double(x) * x;
  }
  const double n = a.size(), mean = s / n, var = s2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 6.0 / std::sqrt(n));
  EXPECT_NEAR(var, 1.0, 6.0 * std::sqrt(2.0 / n));
  auto u = rand(device(), {100000}, g1, -2, 3).to_vector();
  double us = 0;
  for (float x : u) {
    ASSERT_GE(x, -2.0f);
    ASSERT_LT(x, 3.0f);
    us += x;
  }
  EXPECT_NEAR(us / u.size(), 0.5, 6 * 5 / std::sqrt(12.0 * u.size()));
  auto bern = bernoulli(device(), {100000}, 0.3, g1).to_vector();
  double bs = 0;
  for (float x : bern) {
    ASSERT_TRUE(x == 0.0f || x == 1.0f);
    bs += x;
  }
  EXPECT_NEAR(bs / bern.size(), 0.3, 6 * std::sqrt(0.21 / bern.size()));
}

TEST(Random, Dropout) {
  Generator g(7);
  Tensor x = full(device(), {50000}, 2.0);
  auto d = dropout(x, 0.25, g).to_vector();
  int zeros = 0;
  for (float v : d) {
    if (v == 0.0f)
      ++zeros;
    else
      ASSERT_FLOAT_EQ(v, 2.0f / 0.75f);
  }
  EXPECT_NEAR(zeros / 50000.0, 0.25, 6 * std::sqrt(0.1875 / 50000));
  EXPECT_TRUE(dropout(x, 0.0, g).shares_storage(x));
  EXPECT_EQ(dropout(x.slice(0, 1, 10, 3), 0.5, g).shape(), Shape{3});
  EXPECT_THROW(dropout(x, 1.0, g), ValueError);
  EXPECT_THROW(rand(device(), {3}, g, 0, 1, DType::i32), DTypeError);
}

// dropout at a device offset: element e keeps x / (1 - p) where Philox's counter (e, 0, offset)
// draws at most 1 - p, offset = the generator's next offset plus the tensor's value read as
// unsigned times 2^32 (its high word); a captured draw takes the tensor's value at each replay. Inputs: fresh random
// values, odd lengths, a seed printed on failure.
TEST(Random, DropoutAtADeviceOffset) {
  GLT_RNG(rng);
  const std::uint64_t seed = rng();
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const double p = 0.3;
  // The expected result of element e of xs at 64-bit offset `off`, in float64 then rounded.
  auto expect = [&](const std::vector<float>& xs, std::uint64_t off, const std::vector<float>& got, const char* what) {
    ASSERT_EQ(got.size(), xs.size()) << what;
    int dropped = 0;
    for (std::size_t e = 0; e < xs.size(); ++e) {
      const auto r = philox_host(
          {static_cast<std::uint32_t>(e), 0, static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(off >> 32)},
          key);
      const double unit = ((r[0] >> 8) + 1.0) / 16777216.0;
      const float keep = 1.0f - static_cast<float>(p);
      const double want = unit <= keep ? static_cast<double>(xs[e]) / keep : 0.0;
      dropped += want == 0.0;
      ASSERT_NEAR(got[e], want, 1e-6 * std::abs(want)) << what << ", element " << e;
    }
    if (xs.size() >= 100) {
      EXPECT_GT(dropped, 0) << what;
    }
  };
  for (const std::int64_t n : {1, 3, 257, 4099}) {
    const auto xs = uniform(rng, static_cast<std::size_t>(n), 0.5f, 2.0f);
    const Tensor x = Tensor::from_host(device(), xs, {n});
    const std::int32_t v = static_cast<std::int32_t>(rng() % 1000);
    Generator g(seed);
    const Tensor off = Tensor::from_host(device(), std::span<const std::int32_t>(&v, 1), {1});
    expect(xs, static_cast<std::uint64_t>(v) << 32, dropout(x, p, g, off).to_vector(), "offset 0 + v 2^32");
    // The generator's offset 1 (one draw since) and -1 read as 0xffffffff into the high word.
    Generator g2(seed);
    (void)g2.next_offset();
    const std::int32_t all = -1;
    const Tensor high = Tensor::from_host(device(), std::span<const std::int32_t>(&all, 1), {1});
    expect(xs, (std::uint64_t{0xffffffffu} << 32) | 1u, dropout(x, p, g2, high).to_vector(),
           "offset 1 + 0xffffffff 2^32");
  }
  // Captured with the offset's advance: each replay draws at the tensor's value then.
  const auto xs = uniform(rng, 999, 0.5f, 2.0f);
  const Tensor x = Tensor::from_host(device(), xs, {999});
  Tensor off = zeros(device(), {1}, DType::i32), y;
  Generator g(seed);
  Recording rec = Recording::capture(device(), [&] {
    y = dropout(x, p, g, off);
    add_(off, 1.0);
  });
  expect(xs, 0, y.to_vector(), "capture");
  std::vector<float> first = y.to_vector();
  for (std::uint64_t k = 1; k <= 3; ++k) {
    rec.replay();
    const std::vector<float> got = y.to_vector();
    expect(xs, k << 32, got, "replay");
    EXPECT_NE(got, first) << "replay " << k;
  }
  EXPECT_EQ(off.to_int_vector(), std::vector<int>{4});
  // Errors: the offset's dtype and shape.
  EXPECT_THROW(dropout(x, p, g, zeros(device(), {1})), DTypeError);
  EXPECT_THROW(dropout(x, p, g, zeros(device(), {2}, DType::i32)), ShapeError);
  EXPECT_THROW(dropout(x, 1.0, g, off), ValueError);
  // A view at a storage offset reads its own element.
  const std::vector<std::int32_t> two = {5, 9};
  const Tensor both = Tensor::from_host(device(), std::span<const std::int32_t>(two), {2});
  Generator g3(seed);
  expect(xs, std::uint64_t{9} << 32, dropout(x, p, g3, both.narrow(0, 1, 1)).to_vector(), "view at offset 1");
}

// dropout's backward draws its forward's mask again (no mask kept): grad_x = grad * mask / (1 - p)
// against a float64 reference from the host Philox, at the generator's offset alone and at a
// device offset changed between the forward and the backward (the backward uses the value its
// forward read); odd lengths, one past 65535 elements, fresh random inputs and gradients (seed
// printed on failure); captured with the offset's advance, each replay's backward uses its own
// forward's mask; keep rate within 6 standard errors.
TEST(Random, DropoutBackwardDrawsTheForwardsMask) {
  GLT_RNG(rng);
  const std::uint64_t seed = rng();
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const double p = 0.35;
  const float keep = 1.0f - static_cast<float>(p);
  auto kept = [&](std::size_t e, std::uint64_t off) {
    const auto r = philox_host(
        {static_cast<std::uint32_t>(e), 0, static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(off >> 32)},
        key);
    return ((r[0] >> 8) + 1.0) / 16777216.0 <= keep;
  };
  // got[e] == src[e] / keep where kept at `off`, else 0 (float64 reference).
  auto expect = [&](const std::vector<float>& src, std::uint64_t off, const std::vector<float>& got, const char* what) {
    ASSERT_EQ(got.size(), src.size()) << what;
    std::size_t dropped = 0;
    for (std::size_t e = 0; e < src.size(); ++e) {
      const double want = kept(e, off) ? static_cast<double>(src[e]) / keep : 0.0;
      dropped += !kept(e, off);
      ASSERT_NEAR(got[e], want, 1e-6 * std::abs(want)) << what << ", element " << e;
    }
    const double n = static_cast<double>(src.size());
    if (src.size() >= 1000) {
      EXPECT_NEAR(dropped / n, p, 6 * std::sqrt(p * (1 - p) / n)) << what;
    }
  };
  for (const std::int64_t n : {1, 3, 257, 70001}) {
    const auto xs = uniform(rng, static_cast<std::size_t>(n), 0.5f, 2.0f);
    const auto gs = uniform(rng, static_cast<std::size_t>(n), -2.0f, 2.0f);
    const Tensor seed_grad = Tensor::from_host(device(), gs, {n});
    {  // the generator's offset alone (its second draw: offset 1)
      Tensor x = Tensor::from_host(device(), xs, {n});
      requires_grad_(x);
      Generator g(seed);
      (void)g.next_offset();
      const Tensor y = dropout(x, p, g);
      expect(xs, 1, y.to_vector(), "forward");
      backward(y, seed_grad);
      expect(gs, 1, grad(x).to_vector(), "backward");
    }
    {  // a device offset v, advanced before the backward runs
      Tensor x = Tensor::from_host(device(), xs, {n});
      requires_grad_(x);
      const std::int32_t v = static_cast<std::int32_t>(rng() % 1000);
      Tensor off = Tensor::from_host(device(), std::span<const std::int32_t>(&v, 1), {1});
      Generator g(seed);
      const Tensor y = dropout(x, p, g, off);
      add_(off, 7.0);
      expect(xs, static_cast<std::uint64_t>(v) << 32, y.to_vector(), "forward at a device offset");
      backward(y, seed_grad);
      expect(gs, static_cast<std::uint64_t>(v) << 32, grad(x).to_vector(), "backward at a device offset");
    }
  }
  // Captured forward, offset advance and backward: replay k's gradient has replay k's mask.
  const std::int64_t n = 4099;
  const auto xs = uniform(rng, n, 0.5f, 2.0f);
  const auto gs = uniform(rng, n, -2.0f, 2.0f);
  const Tensor seed_grad = Tensor::from_host(device(), gs, {n});
  Tensor x = Tensor::from_host(device(), xs, {n});
  requires_grad_(x);
  Tensor off = zeros(device(), {1}, DType::i32), y, gx;
  Generator g(seed);
  Recording rec = Recording::capture(device(), [&] {
    y = dropout(x, p, g, off);
    add_(off, 1.0);
    zero_grad(x);
    backward(y, seed_grad);
    gx = grad(x);
  });
  expect(gs, 0, gx.to_vector(), "captured backward");
  for (std::uint64_t k = 1; k <= 3; ++k) {
    rec.replay();
    expect(xs, k << 32, y.to_vector(), "replayed forward");
    expect(gs, k << 32, gx.to_vector(), "replayed backward");
  }
  // Integer inputs give f32 and no gradient.
  EXPECT_EQ(dropout(zeros(device(), {5}, DType::i32), p, g).dtype(), DType::f32);
}

// dropout forward and backward over n elements at a device offset v and the generator's offset 2
// together (the forward's draw at gen offset 2 + (v << 32)), against float64 from the host Philox:
// the backward must redraw with both, not the device's value alone. Fresh random inputs,
// gradients and v (seed printed on failure).
static void expect_dropout_both_offsets(std::mt19937_64& rng, std::int64_t n) {
  const std::uint64_t seed = rng();
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const double p = 0.5;
  const float keep = 1.0f - static_cast<float>(p);
  const auto xs = uniform(rng, static_cast<std::size_t>(n), 0.5f, 2.0f);
  const auto gs = uniform(rng, static_cast<std::size_t>(n), -2.0f, 2.0f);
  Tensor x = Tensor::from_host(device(), xs, {n});
  requires_grad_(x);
  const std::int32_t v = static_cast<std::int32_t>(1 + rng() % 1000);
  Tensor off = Tensor::from_host(device(), std::span<const std::int32_t>(&v, 1), {1});
  Generator g(seed);
  (void)g.next_offset();
  (void)g.next_offset();
  const Tensor y = dropout(x, p, g, off);
  add_(off, 3.0);
  backward(y, Tensor::from_host(device(), gs, {n}));
  const std::vector<float> yv = y.to_vector(), gx = grad(x).to_vector();
  ASSERT_EQ(yv.size(), xs.size());
  ASSERT_EQ(gx.size(), xs.size());
  const std::uint64_t o = (static_cast<std::uint64_t>(v) << 32) + 2;
  std::size_t kept = 0;
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const auto r = philox_host(
        {static_cast<std::uint32_t>(e), 0, static_cast<std::uint32_t>(o), static_cast<std::uint32_t>(o >> 32)}, key);
    const bool k = ((r[0] >> 8) + 1.0) / 16777216.0 <= keep;
    kept += k;
    const double wy = k ? static_cast<double>(xs[e]) / keep : 0.0, wg = k ? static_cast<double>(gs[e]) / keep : 0.0;
    ASSERT_NEAR(yv[e], wy, 1e-6 * std::abs(wy)) << "forward, element " << e << " of " << n << ", v = " << v;
    ASSERT_NEAR(gx[e], wg, 1e-6 * std::abs(wg)) << "backward, element " << e << " of " << n << ", v = " << v;
  }
  const double m = static_cast<double>(n);
  EXPECT_NEAR(kept / m, keep, 6 * std::sqrt(p * (1 - p) / m) + 1e-9) << n;
}

TEST(Random, DropoutBackwardKeepsTheGeneratorsOffsetWithADeviceOffset) {
  GLT_RNG(rng);
  expect_dropout_both_offsets(rng, 4097);
}

// The same over grids split into dispatches of at most 3 workgroups a dimension (any device):
// each dispatch's elements from its group base. Sabotage: random.comp's element index
// gl_GlobalInvocationID.x (without the group base and the grid's rows) fails it.
TEST(Random, DropoutGridsSplitUnderALoweredDispatchLimit) {
  GLT_RNG(rng);
  ScopedDispatchLimit limit(3);
  for (std::int64_t n : {1, 4099}) expect_dropout_both_offsets(rng, n);
}

// Near the 128 MiB that llvmpipe's SSBOs allow (GPUs allow more): 33554400 float32 values (128
// bytes under 128 MiB; 131072 workgroups of 256: one row on the H100, whose grids take more than
// 65535 workgroups along x, two rows where a device allows 65535), forward and backward. GPUs only
// (llvmpipe: the grid's split at small sizes above). Sabotage (H100): Philox's counter from the
// element's low 24 bits (e & 0xffffffu) in random.comp fails it; the element index from
// gl_GlobalInvocationID.x passes it there (one row) and fails GridsSplitUnderALoweredDispatchLimit.
TEST(Random, DropoutNearTheSsboLimitOnGpus) {
  if (device().adapter().software) GTEST_SKIP() << "GPUs only (llvmpipe: the lowered-limit tests)";
  GLT_RNG(rng);
  const std::int64_t n = (std::int64_t{128} << 20) / 4 - 32;
  expect_dropout_both_offsets(rng, n);
}
