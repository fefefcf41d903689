#include "onnx_io.hpp"

#include <cstring>
#include <fstream>

namespace onnx_test {
using namespace gltensor;

std::string onnx_type_name(int t) {
  static const char* names[] = {"undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
                                "int32",     "int64",  "string",    "bool",       "float16", "double",
                                "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  return t >= 0 && t < 17 ? names[t] : "type " + std::to_string(t);
}

namespace {
// memcpy that accepts empty ranges (whose data() may be null).
void copy_raw(void* dst, const std::string& raw, std::size_t bytes) {
  bytes = std::min(bytes, raw.size());
  if (bytes) std::memcpy(dst, raw.data(), bytes);
}
}  // namespace

Tensor from_proto(const Device& dev, const onnx::TensorProto& t) {
  Shape shape(t.dims().begin(), t.dims().end());
  const std::int64_t n = numel_of(shape);
  const std::string& raw = t.raw_data();
  const bool has_raw = t.has_raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: {
      std::vector<float> v(static_cast<std::size_t>(n));
      if (has_raw)
        copy_raw(v.data(), raw, v.size() * 4);
      else
        std::copy(t.float_data().begin(), t.float_data().end(), v.begin());
      return Tensor::from_host(dev, v, shape);
    }
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64: {
      std::vector<std::int32_t> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t x;
        if (t.data_type() == onnx::TensorProto::INT64) {
          if (has_raw)
            std::memcpy(&x, raw.data() + 8 * i, 8);
          else
            x = t.int64_data(static_cast<int>(i));
        } else {
          std::int32_t y;
          if (has_raw)
            std::memcpy(&y, raw.data() + 4 * i, 4);
          else
            y = t.int32_data(static_cast<int>(i));
          x = y;
        }
        if (x > INT32_MAX || x < INT32_MIN) {
          if (x == INT64_MAX || x == INT64_MIN)
            x = x > 0 ? INT32_MAX : INT32_MIN;  // "to the end" sentinels
          else
            throw Unsupported("int64 value " + std::to_string(x) + " does not fit int32");
        }
        v[i] = static_cast<std::int32_t>(x);
      }
      return Tensor::from_host(dev, std::span<const std::int32_t>(v), shape);
    }
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      std::vector<std::uint16_t> v(static_cast<std::size_t>(n));
      if (has_raw)
        copy_raw(v.data(), raw, v.size() * 2);
      else
        for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<std::uint16_t>(t.int32_data(static_cast<int>(i)));
      return Tensor::from_bytes(dev, v.data(), v.size() * 2, shape,
                                t.data_type() == onnx::TensorProto::FLOAT16 ? DType::f16 : DType::bf16);
    }
    case onnx::TensorProto::INT8: {
      std::vector<std::int8_t> v(static_cast<std::size_t>(n));
      if (has_raw)
        copy_raw(v.data(), raw, v.size());
      else
        for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<std::int8_t>(t.int32_data(static_cast<int>(i)));
      std::vector<std::int32_t> w(v.begin(), v.end());
      return Tensor::from_host(dev, std::span<const std::int32_t>(w), shape, DType::i8);
    }
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: {
      std::vector<std::uint8_t> v(static_cast<std::size_t>(n));
      if (has_raw)
        copy_raw(v.data(), raw, v.size());
      else
        for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(t.int32_data(static_cast<int>(i)));
      return Tensor::from_host(dev, std::span<const std::uint8_t>(v), shape,
                               t.data_type() == onnx::TensorProto::BOOL ? DType::bool_ : DType::u8);
    }
    default:
      throw Unsupported("dtype " + onnx_type_name(t.data_type()));
  }
}

onnx::TensorProto read_tensor_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f)) throw std::runtime_error("cannot parse " + path);
  return t;
}

ProtoValue read_value_file(const std::string& path, ValueKind kind) {
  ProtoValue r;
  if (kind == ValueKind::tensor) {
    r.tensors.push_back(read_tensor_file(path));
    return r;
  }
  std::ifstream f(path, std::ios::binary);
  const auto from_seq = [&](const onnx::SequenceProto& s) {
    if (s.elem_type() != onnx::SequenceProto::TENSOR) throw Unsupported("a sequence of non-tensors in " + path);
    r.tensors.assign(s.tensor_values().begin(), s.tensor_values().end());
  };
  if (kind == ValueKind::sequence) {
    onnx::SequenceProto s;
    if (!f || !s.ParseFromIstream(&f)) throw std::runtime_error("cannot parse " + path);
    from_seq(s);
    return r;
  }
  onnx::OptionalProto o;
  if (!f || !o.ParseFromIstream(&f)) throw std::runtime_error("cannot parse " + path);
  if (o.elem_type() == onnx::OptionalProto::UNDEFINED)
    r.none = true;
  else if (o.has_sequence_value())
    from_seq(o.sequence_value());
  else if (o.has_tensor_value())
    r.tensors.push_back(o.tensor_value());
  else
    r.none = true;
  return r;
}

onnx::ModelProto read_model(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) throw std::runtime_error("cannot parse " + path);
  return m;
}

}  // namespace onnx_test
