// Host-side tensors of the model runtime (internal): constants (initializers, Constant nodes)
// and the small integer tensors of shape subgraphs, evaluated on the CPU. Values are kept as
// double (int64 exactly up to 2^53, which covers shapes and indices) with their ONNX element
// type, so that int64 semantics survive until a value is uploaded (as int32) to the GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor::model {

/// ONNX TensorProto.DataType values used here.
enum Elem : int {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
  kUint4 = 21,  ///< carried widened to uint8 (0..15)
  kInt4 = 22    ///< carried widened to int8 (-8..7)
};

/// "float", "int64", ... (ONNX names).
std::string elem_name(int elem);
/// True for element types gltensor carries (float, float16, bfloat16, int32, int64, uint8, int8,
/// uint4 and int4 widened to 8 bits, bool).
bool elem_supported(int elem);
/// gltensor dtype that carries an ONNX element type (int64 -> i32). Only for supported types.
DType elem_dtype(int elem);
/// The ONNX element type of a gltensor dtype (i32 -> int64 when `int64` is set).
int dtype_elem(DType d, bool int64 = true);
bool elem_is_float(int elem);

struct HostTensor {
  int elem = kFloat;
  Shape shape;
  std::vector<double> v;

  std::int64_t numel() const { return static_cast<std::int64_t>(v.size()); }
  std::vector<std::int64_t> ints() const;
  /// Uploads to the device (int64 -> int32: values must fit, INT64_MAX/MIN clamp to INT32_MAX/MIN
  /// as "to the end" sentinels; LimitError otherwise). f16/bf16 values keep their dtype;
  /// float_dtype is the dtype of float and double values. min_numel (float values only): the
  /// values at the start of a buffer of at least that many, zeros past them (the model's Conv
  /// filters for conv2d's ubo layout: conv_ubo_weight_floats); the result is their view.
  Tensor upload(const Device& dev, DType float_dtype = DType::f32, std::int64_t min_numel = 0) const;
  /// Reads a GPU tensor back; `elem` is the ONNX element type the value has in the graph.
  static HostTensor download(const Tensor& t, int elem);
  static HostTensor scalar(double x, int elem);
  static HostTensor vector(const std::vector<std::int64_t>& x, int elem = kInt64);
  std::size_t bytes() const;
};

}  // namespace gltensor::model
