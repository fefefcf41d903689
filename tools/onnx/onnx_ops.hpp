// ONNX operators mapped to gltensor ops (gltensor-onnx-test). Each entry follows the operator's
// ONNX semantics for the opsets in the backend test data; what it does not cover throws
// Unsupported (the case is skipped, with the reason).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "onnx_io.hpp"

namespace onnx_test {

class Attrs {
 public:
  explicit Attrs(const onnx::NodeProto& n);
  bool has(const std::string& k) const { return m_.count(k) > 0; }
  std::int64_t i(const std::string& k, std::int64_t def) const;
  float f(const std::string& k, float def) const;
  std::string s(const std::string& k, const std::string& def) const;
  std::vector<std::int64_t> ints(const std::string& k, std::vector<std::int64_t> def = {}) const;
  const onnx::TensorProto* t(const std::string& k) const;

 private:
  std::map<std::string, const onnx::AttributeProto*> m_;
};

struct OpContext {
  const gltensor::Device& dev;
  const Attrs& attrs;
  int opset;
  std::size_t n_outputs;
};

using OpFn = std::function<std::vector<gltensor::Tensor>(const std::vector<gltensor::Tensor>&, const OpContext&)>;
const std::map<std::string, OpFn>& op_table();

}  // namespace onnx_test
