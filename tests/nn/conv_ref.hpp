// conv2d's float64 host reference (tests/nn).
#pragma once
#include <vector>

#include "grad_check.hpp"

namespace glt_test {

using gltensor::Conv2dOptions;
using gltensor::Shape;

// Direct convolution in float64: x [N, C, H, W], w [O, C/G, KH, KW].
inline std::vector<double> ref_conv(const HostT& x, const HostT& w, const std::vector<double>* b,
                                    const Conv2dOptions& o, Shape& out_shape) {
  const std::int64_t N = x.s[0], C = x.s[1], H = x.s[2], W = x.s[3], O = w.s[0], KH = w.s[2], KW = w.s[3], G = o.groups;
  const std::int64_t Cg = C / G, Og = O / G;
  const std::int64_t OH = (H + o.padding[0] + o.padding[2] - o.dilation[0] * (KH - 1) - 1) / o.stride[0] + 1;
  const std::int64_t OW = (W + o.padding[1] + o.padding[3] - o.dilation[1] * (KW - 1) - 1) / o.stride[1] + 1;
  out_shape = {N, O, OH, OW};
  std::vector<double> y(N * O * OH * OW);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < O; ++oc)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double s = b ? (*b)[oc] : 0.0;
          const std::int64_t g = oc / Og;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t h = oh * o.stride[0] - o.padding[0] + kh * o.dilation[0];
                const std::int64_t ww = ow * o.stride[1] - o.padding[1] + kw * o.dilation[1];
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                s += x.v[((n * C + g * Cg + c) * H + h) * W + ww] * w.v[((oc * Cg + c) * KH + kh) * KW + kw];
              }
          y[((n * O + oc) * OH + oh) * OW + ow] = s;
        }
  return y;
}

}  // namespace glt_test
