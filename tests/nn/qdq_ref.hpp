// Helpers of the integer-kernel tests (tests/nn): 8-bit tensors from integers, random 8-bit
// values, ONNX QuantizeLinear in float64, and the requantized forms a QDQ convolution is tested in.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <vector>

#include "nn/quant_int.hpp"
#include "test_util.hpp"

namespace glt_test {

/// Integer values as a tensor of dtype d and shape s.
inline gltensor::Tensor ints(const std::vector<std::int32_t>& v, const gltensor::Shape& s, gltensor::DType d) {
  return gltensor::Tensor::from_host(device(), std::span<const std::int32_t>(v), s, d);
}

/// n random values over d's range (uint8 or int8).
inline std::vector<std::int32_t> q8_values(std::mt19937_64& rng, std::size_t n, gltensor::DType d) {
  return d == gltensor::DType::u8 ? uniform_int(rng, n, 0, 255) : uniform_int(rng, n, -128, 127);
}

/// ONNX QuantizeLinear of one float64 value (round half to even, saturation, NaN -> zero point).
inline int quant_ref_f64(double v, double s, int z, int lo, int hi) {
  if (std::isnan(v / s)) return z;
  return static_cast<int>(std::clamp(std::nearbyint(v / s) + z, static_cast<double>(lo), static_cast<double>(hi)));
}

/// A requantized form of a QDQ convolution's output: uint8 (zero point 7) or int8 (-5), y_scale
/// 1/40, after none / Relu / Clip(-1.5, 2.25).
struct RequantForm {
  gltensor::DType out;
  gltensor::Epilogue act;
  int zy;
  float ys = 1.0f / 40;
  gltensor::detail::IntRequant requant() const {
    return {gltensor::full(device(), {1}, ys), ints({zy}, {1}, out), act, out};
  }
  /// The activation of a float64 value.
  double activate(double v) const {
    if (act.act == gltensor::Activation::relu) return std::max(v, 0.0);
    if (act.act == gltensor::Activation::clip) return std::clamp(v, -1.5, 2.25);
    return v;
  }
  /// QuantizeLinear of the activated float64 value.
  int quantize(double v) const {
    const gltensor::detail::QRange r = gltensor::detail::QRange::of(out);
    return quant_ref_f64(activate(v), ys, zy, r.lo, r.hi);
  }
  std::string name() const { return std::string(gltensor::dtype_name(out)) + " " + act.name(); }
};

/// Both output types after every activation (`every`), else uint8 after Relu.
inline std::vector<RequantForm> requant_forms(bool every) {
  using gltensor::Activation;
  using gltensor::DType;
  using gltensor::Epilogue;
  std::vector<RequantForm> forms;
  for (DType out : {DType::u8, DType::i8})
    for (const Epilogue& act : {Epilogue(), Epilogue(Activation::relu), Epilogue::clip(-1.5, 2.25)})
      if (every || (out == DType::u8 && act.act == Activation::relu))
        forms.push_back({out, act, out == DType::u8 ? 7 : -5});
  return forms;
}

}  // namespace glt_test
