// ONNX TensorProto <-> gltensor (gltensor-onnx-test).
#pragma once
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <stdexcept>
#include <string>

#include "gltensor/gltensor.hpp"

namespace onnx_test {

/// Thrown for anything the runner does not support; the case is skipped with this reason.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Converts a TensorProto (raw_data or typed fields) to a tensor. int64 becomes int32 (values
/// must fit), double becomes float32 is refused (Unsupported), as are other dtypes.
gltensor::Tensor from_proto(const gltensor::Device& dev, const onnx::TensorProto& t);
onnx::TensorProto read_tensor_file(const std::string& path);
/// A test_data_set file holding a value of `kind` (a TensorProto, SequenceProto or
/// OptionalProto): its tensors in order, `none` for an empty optional.
struct ProtoValue {
  bool none = false;
  std::vector<onnx::TensorProto> tensors;
};
ProtoValue read_value_file(const std::string& path, gltensor::ValueKind kind);
onnx::ModelProto read_model(const std::string& path);
/// ONNX element type name for messages.
std::string onnx_type_name(int type);

}  // namespace onnx_test
