// float64 references of gltensor_precision_error's matmul and conv2d rows: one output element and
// its condition S = sum |products| (the measure of docs/precision.md's tables: |c - exact| / S).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace glt_bench {

struct RefScale {
  double ref = 0, scale = 0;  ///< exact value; sum |products| (1 where all products are 0)
};

/// Output i of a [M, K] @ b [K, N], row-major.
inline RefScale matmul_ref(const std::vector<float>& a, const std::vector<float>& b, std::int64_t K, std::int64_t N,
                           std::int64_t i) {
  const std::int64_t m = i / N, n = i % N;
  RefScale r;
  for (std::int64_t k = 0; k < K; ++k) {
    const double p = double(a[m * K + k]) * b[k * N + n];
    r.ref += p;
    r.scale += std::fabs(p);
  }
  if (r.scale == 0) r.scale = 1;
  return r;
}

/// Output i of conv2d(x [B, C, H, W], w [O, C, 3, 3], padding 1, stride 1) -> [B, O, H, W].
inline RefScale conv3x3_ref(const std::vector<float>& x, const std::vector<float>& w, std::int64_t C, std::int64_t H,
                            std::int64_t W, std::int64_t O, std::int64_t i) {
  const std::int64_t ox = i % W, oy = (i / W) % H, o = (i / (W * H)) % O, bb = i / (W * H * O);
  RefScale r;
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t ky = 0; ky < 3; ++ky)
      for (std::int64_t kx = 0; kx < 3; ++kx) {
        const std::int64_t iy = oy + ky - 1, ix = ox + kx - 1;
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
        const double p = double(x[((bb * C + c) * H + iy) * W + ix]) * w[((o * C + c) * 3 + ky) * 3 + kx];
        r.ref += p;
        r.scale += std::fabs(p);
      }
  if (r.scale == 0) r.scale = 1;
  return r;
}

}  // namespace glt_bench
