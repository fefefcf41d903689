// What the int8 benches (int8_bench.cpp, iconv_forms_bench.cpp) share: random 8-bit tensors and
// the time of one round of back-to-back ops.
#pragma once
#include <chrono>
#include <functional>

#include "gltensor/gltensor.hpp"

namespace int8_bench {

/// Integer values in the dtype's range (uint8 [0, 255], int8 [-127, 127]) as a tensor of `d`.
inline gltensor::Tensor q8(gltensor::Device& dev, gltensor::Generator& g, const gltensor::Shape& s, gltensor::DType d) {
  const double lo = d == gltensor::DType::u8 ? 0 : -127, hi = d == gltensor::DType::u8 ? 255 : 127;
  return gltensor::floor(gltensor::rand(dev, s, g, lo, hi)).to(d);
}

/// Seconds per op of one round: back-to-back ops for at least min_ms, then a synchronize.
inline double round_seconds(gltensor::Device& dev, double min_ms, const std::function<gltensor::Tensor()>& op) {
  using Clock = std::chrono::steady_clock;
  int n = 0;
  gltensor::Tensor keep;
  const auto t0 = Clock::now();
  double el = 0;
  do {
    keep = op();
    ++n;
    if (n % 4 == 0 || n < 4) dev.synchronize();
    el = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  } while (el < min_ms);
  dev.synchronize();
  return std::chrono::duration<double>(Clock::now() - t0).count() / n;
}

}  // namespace int8_bench
