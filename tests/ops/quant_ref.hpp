// Host decoding of quantized weights from the byte layout documented in gltensor/quant.hpp
// (independent of the kernels): dequant(W) in float64, for the quantization and LoRA tests.
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/quant.hpp"

namespace glt_test {

struct HostQuant {
  std::vector<double> w;       // dequant(W) [N, K], row-major
  std::vector<double> scales;  // [N] (int8) or [N, Kb] (int4)
  std::vector<int> q;          // [N, Kp]: the quantized values, pads included
};

inline HostQuant decode(const gltensor::QuantizedWeight& qw) {
  const std::int64_t N = qw.out_features, K = qw.in_features, Kp = qw.padded_in(), Kb = Kp / 32;
  const auto bytes = qw.data.to_bytes();
  const auto sb = qw.scales.to_bytes();
  HostQuant h;
  for (std::size_t i = 0; i + 1 < sb.size(); i += 2)
    h.scales.push_back(gltensor::f16_to_f32(static_cast<std::uint16_t>(sb[i] | (sb[i + 1] << 8))));
  h.q.assign(static_cast<std::size_t>(N * Kp), 0);
  h.w.assign(static_cast<std::size_t>(N * K), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < Kp; ++k) {
      int q;
      double d;
      if (qw.format == gltensor::QuantFormat::int8) {
        q = static_cast<std::int8_t>(bytes[static_cast<std::size_t>(n * Kp + k)]);
        d = h.scales[static_cast<std::size_t>(n)];
      } else {
        const std::int64_t b = k / 32, c = k % 32;
        const std::uint8_t byte = bytes[static_cast<std::size_t>((n * Kb + b) * 16 + c % 16)];
        q = (c < 16 ? byte & 0xf : byte >> 4) - 8;
        d = h.scales[static_cast<std::size_t>(n * Kb + b)];
      }
      h.q[static_cast<std::size_t>(n * Kp + k)] = q;
      if (k < K) h.w[static_cast<std::size_t>(n * K + k)] = q * d;
    }
  return h;
}

/// y [M, N] = x [M, K] @ w^T [+ bias] in float64 (NaN/Inf propagate as IEEE products and sums).
inline std::vector<double> linear_ref(const std::vector<double>& x, const std::vector<double>& w,
                                      const std::vector<double>& bias, std::int64_t M, std::int64_t N, std::int64_t K) {
  std::vector<double> y(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(n)];
      for (std::int64_t k = 0; k < K; ++k)
        s += x[static_cast<std::size_t>(m * K + k)] * w[static_cast<std::size_t>(n * K + k)];
      y[static_cast<std::size_t>(m * N + n)] = s;
    }
  return y;
}

}  // namespace glt_test
