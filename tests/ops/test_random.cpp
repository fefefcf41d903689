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
