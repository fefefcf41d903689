#include "model/host_tensor.hpp"

#include <cmath>
#include <limits>

#include "gltensor/errors.hpp"

namespace gltensor::model {

std::string elem_name(int t) {
  static const char* names[] = {"undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
                                "int32",     "int64",  "string",    "bool",       "float16", "double",
                                "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (t == kUint4) return "uint4";
  if (t == kInt4) return "int4";
  return t >= 0 && t < 17 ? names[t] : "type " + std::to_string(t);
}

bool elem_supported(int t) {
  return t == kFloat || t == kFloat16 || t == kBfloat16 || t == kInt32 || t == kInt64 || t == kUint8 || t == kInt8 ||
         t == kBool || t == kUint4 || t == kInt4;
}

bool elem_is_float(int t) { return t == kFloat || t == kFloat16 || t == kBfloat16 || t == kDouble; }

DType elem_dtype(int t) {
  switch (t) {
    case kFloat:
      return DType::f32;
    case kFloat16:
      return DType::f16;
    case kBfloat16:
      return DType::bf16;
    case kInt32:
    case kInt64:
      return DType::i32;
    case kUint8:
    case kUint4:
      return DType::u8;
    case kInt8:
    case kInt4:
      return DType::i8;
    case kBool:
      return DType::bool_;
    default:
      throw ModelError("gltensor::Model: element type " + elem_name(t) + " is not supported", "dtype " + elem_name(t));
  }
}

int dtype_elem(DType d, bool int64) {
  switch (d) {
    case DType::f32:
      return kFloat;
    case DType::f16:
      return kFloat16;
    case DType::bf16:
      return kBfloat16;
    case DType::i32:
      return int64 ? kInt64 : kInt32;
    case DType::u8:
      return kUint8;
    case DType::i8:
      return kInt8;
    case DType::bool_:
      return kBool;
  }
  return kFloat;
}

std::vector<std::int64_t> HostTensor::ints() const {
  std::vector<std::int64_t> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    if (x >= 9.2e18)
      r[i] = std::numeric_limits<std::int64_t>::max();
    else if (x <= -9.2e18)
      r[i] = std::numeric_limits<std::int64_t>::min();
    else
      r[i] = static_cast<std::int64_t>(x);
  }
  return r;
}

Tensor HostTensor::upload(const Device& dev, DType float_dtype, std::int64_t min_numel) const {
  // f16 and bf16 values keep their 16 bits (an f16 model's weights stay half the size); float
  // and double take float_dtype (f32, or f16 with ModelOptions::f16_weights).
  const DType d = elem == kFloat16 || elem == kBfloat16 ? elem_dtype(elem)
                  : elem_is_float(elem)                 ? float_dtype
                                                        : elem_dtype(elem);
  if (is_floating(d)) {
    std::vector<float> f(v.begin(), v.end());
    if (min_numel > numel()) {
      f.resize(static_cast<std::size_t>(min_numel), 0.0f);
      return Tensor::from_host(dev, f, {min_numel}, d).narrow(0, 0, numel()).view(shape);
    }
    return Tensor::from_host(dev, f, shape, d);
  }
  if (d == DType::i32) {
    std::vector<std::int32_t> w(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      double x = v[i];
      if (x > INT32_MAX || x < INT32_MIN) {
        if (std::fabs(x) >= 9.2e18)
          x = x > 0 ? INT32_MAX : INT32_MIN;  // INT64_MAX/MIN: "to the end" sentinels
        else
          throw LimitError("gltensor::Model: int64 value " + std::to_string(static_cast<long long>(x)) +
                           " does not fit the int32 that carries int64 on the GPU");
      }
      w[i] = static_cast<std::int32_t>(x);
    }
    return Tensor::from_host(dev, std::span<const std::int32_t>(w), shape, DType::i32);
  }
  std::vector<std::uint8_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    b[i] = d == DType::bool_ ? (v[i] != 0) : static_cast<std::uint8_t>(static_cast<std::int32_t>(v[i]));
  return Tensor::from_host(dev, std::span<const std::uint8_t>(b), shape, d);
}

HostTensor HostTensor::download(const Tensor& t, int elem) {
  HostTensor h;
  h.elem = elem;
  h.shape = t.shape();
  if (t.dtype() == DType::i32) {
    auto w = t.to_int_vector();
    h.v.assign(w.begin(), w.end());
  } else {
    auto f = t.to_vector();
    h.v.assign(f.begin(), f.end());
  }
  return h;
}

HostTensor HostTensor::scalar(double x, int elem) { return HostTensor{elem, {}, {x}}; }

HostTensor HostTensor::vector(const std::vector<std::int64_t>& x, int elem) {
  HostTensor h{elem, {static_cast<std::int64_t>(x.size())}, {}};
  h.v.assign(x.begin(), x.end());
  return h;
}

std::size_t HostTensor::bytes() const { return v.size() * (elem_supported(elem) ? itemsize(elem_dtype(elem)) : 8); }

}  // namespace gltensor::model
