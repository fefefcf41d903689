// conv2d whose im2col columns exceed the device's max SSBO block, for real: the issue "Model
// coverage" (a segmentation model's 3x3 conv of 256 channels at 128x128 failed on llvmpipe with
// "a float32 tensor of shape [2304, 16384] needs 150994944 bytes, more than the device's max SSBO
// block size of 134217728 bytes"). On llvmpipe (128 MiB) the columns are made and multiplied per
// piece of output rows (113 rows, then 15); on devices with a larger block they fit whole. The
// small-shape tests of every piece path under a lowered limit are in test_nn.cpp.
// Tolerance: |got - ref| <= 1e-4 + 1e-4 |ref| (f32 accumulation over K = 2304, |w| <= 0.05).
#include <cmath>

#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

TEST(Conv2d, ColumnsPastTheDeviceSsboLimit) {
  GLT_RNG(rng);
  const std::int64_t C = 256, H = 128, W = 128, O = 256, K = C * 9;
  const std::int64_t cols_bytes = K * H * W * 4;  // 150994944
  SCOPED_TRACE("columns " + std::to_string(cols_bytes) + " bytes, device's max SSBO block " +
               std::to_string(device().caps().max_ssbo_block_size));
  const auto xv = uniform(rng, C * H * W), wv = uniform(rng, O * K, -0.05f, 0.05f), bv = uniform(rng, O);
  Tensor y = conv2d(Tensor::from_host(device(), xv, {1, C, H, W}), Tensor::from_host(device(), wv, {O, C, 3, 3}),
                    Tensor::from_host(device(), bv, {O}), Conv2dOptions::pad(1));
  ASSERT_EQ(y.shape(), (Shape{1, O, H, W}));
  const std::vector<float> got = y.to_vector();
  // All 4M outputs in float64 would take the host longer than the GPU path: a sample. Every
  // channel's corners and edges (padding), the output rows either side of llvmpipe's piece
  // boundary (112, 113) in a few channels, and random positions.
  std::vector<std::int64_t> sample;
  for (std::int64_t oc = 0; oc < O; ++oc)
    for (std::int64_t p : {std::int64_t{0}, W - 1, (H - 1) * W, H * W - 1, 64 * W, 64 * W + W - 1, std::int64_t{37}})
      sample.push_back(oc * H * W + p);
  for (std::int64_t oc : {std::int64_t{0}, std::int64_t{1}, O - 1})
    for (std::int64_t r : {112, 113})
      for (std::int64_t c = 0; c < W; ++c) sample.push_back((oc * H + r) * W + c);
  std::uniform_int_distribution<std::int64_t> pick(0, O * H * W - 1);
  for (int i = 0; i < 3000; ++i) sample.push_back(pick(rng));
  int bad = 0;
  for (std::int64_t i : sample) {
    const std::int64_t oc = i / (H * W), oh = i / W % H, ow = i % W;
    double ref = bv[oc];
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t kh = 0; kh < 3; ++kh)
        for (std::int64_t kw = 0; kw < 3; ++kw) {
          const std::int64_t h = oh - 1 + kh, w = ow - 1 + kw;
          if (h < 0 || h >= H || w < 0 || w >= W) continue;
          ref += double(xv[(c * H + h) * W + w]) * wv[((oc * C + c) * 3 + kh) * 3 + kw];
        }
    if (!(std::abs(got[i] - ref) <= 1e-4 + 1e-4 * std::abs(ref)) && ++bad <= 10)
      ADD_FAILURE() << "output [0, " << oc << ", " << oh << ", " << ow << "]: " << got[i] << ", expected " << ref;
  }
  EXPECT_EQ(bad, 0) << "of " << sample.size() << " sampled outputs";
}
