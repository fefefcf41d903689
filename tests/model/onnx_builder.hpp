// Builds small ONNX models in tests (protobuf from Debian's libonnx) and writes them to files.
#pragma once
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gltensor/dtype.hpp"
#include "temp_dir.hpp"

namespace glt_test {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13) {
    m_.set_ir_version(opset >= 21 ? 10 : opset >= 19 ? 9 : 8);  // the IR version each opset came with
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m_.mutable_graph()->set_name("test");
  }
  /// A graph input; -1 dims are symbolic ("d0", "d1", ...).
  OnnxBuilder& input(const std::string& name, std::vector<std::int64_t> shape, int elem = onnx::TensorProto::FLOAT) {
    value(m_.mutable_graph()->add_input(), name, shape, elem);
    return *this;
  }
  OnnxBuilder& output(const std::string& name, std::vector<std::int64_t> shape = {},
                      int elem = onnx::TensorProto::FLOAT) {
    value(m_.mutable_graph()->add_output(), name, shape, elem);
    return *this;
  }
  /// A graph output of unknown shape.
  OnnxBuilder& output_any(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* v = m_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  /// A graph input or output of ONNX kind `kind`: "seq" (a sequence of tensors of `elem`, shapes
  /// unknown), "opt" (an optional tensor) or "optseq" (an optional sequence).
  OnnxBuilder& input_kind(const std::string& name, const std::string& kind, int elem = onnx::TensorProto::FLOAT) {
    typed(m_.mutable_graph()->add_input(), name, kind, elem);
    return *this;
  }
  OnnxBuilder& output_kind(const std::string& name, const std::string& kind, int elem = onnx::TensorProto::FLOAT) {
    typed(m_.mutable_graph()->add_output(), name, kind, elem);
    return *this;
  }
  static void typed(onnx::ValueInfoProto* v, const std::string& name, const std::string& kind, int elem) {
    v->set_name(name);
    onnx::TypeProto* t = v->mutable_type();
    if (kind == "opt" || kind == "optseq") t = t->mutable_optional_type()->mutable_elem_type();
    if (kind == "seq" || kind == "optseq") t = t->mutable_sequence_type()->mutable_elem_type();
    t->mutable_tensor_type()->set_elem_type(elem);
  }
  OnnxBuilder& init(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : shape) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *this;
  }
  /// An initializer of ONNX type `elem` FLOAT16 (values rounded to f16, stored as bits in
  /// int32_data as the spec says) or FLOAT.
  OnnxBuilder& init_typed(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& v,
                          int elem) {
    if (elem == onnx::TensorProto::FLOAT) return init(name, shape, v);
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (auto d : shape) t->add_dims(d);
    for (float x : v) t->add_int32_data(gltensor::f32_to_f16(x));
    return *this;
  }
  OnnxBuilder& init_i64(const std::string& name, std::vector<std::int64_t> shape, const std::vector<std::int64_t>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : shape) t->add_dims(d);
    for (auto x : v) t->add_int64_data(x);
    return *this;
  }
  OnnxBuilder& init_i32(const std::string& name, std::vector<std::int64_t> shape, const std::vector<std::int32_t>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT32);
    for (auto d : shape) t->add_dims(d);
    for (auto x : v) t->add_int32_data(x);
    return *this;
  }
  /// An integer initializer of element type `elem` (UINT8, INT8, INT32, ...), values in int32_data.
  OnnxBuilder& init_int(const std::string& name, std::vector<std::int64_t> shape, const std::vector<std::int32_t>& v,
                        int elem) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (auto d : shape) t->add_dims(d);
    for (auto x : v) t->add_int32_data(x);
    return *this;
  }
  /// Imports another domain's opset (com.microsoft for ONNX Runtime's contrib ops).
  OnnxBuilder& import_domain(const std::string& domain, int version) {
    auto* o = m_.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
    return *this;
  }
  /// Adds a node; attributes through the returned NodeProto.
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(m_.graph().node_size()) : name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return *n;
  }
  static void attr_i(onnx::NodeProto& n, const std::string& k, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(onnx::NodeProto& n, const std::string& k, float v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_s(onnx::NodeProto& n, const std::string& k, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& k, std::vector<std::int64_t> v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_floats(onnx::NodeProto& n, const std::string& k, std::vector<float> v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (auto x : v) a->add_floats(x);
  }
  static void attr_strings(onnx::NodeProto& n, const std::string& k, std::vector<std::string> v) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::STRINGS);
    for (auto& x : v) a->add_strings(x);
  }
  /// A subgraph attribute (If branches, Loop and Scan bodies): the graph another builder holds
  /// (its inputs, outputs, initializers and nodes; its opset is the enclosing model's).
  static void attr_graph(onnx::NodeProto& n, const std::string& k, const OnnxBuilder& sub) {
    auto* a = n.add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = sub.m_.graph();
  }
  /// Writes the model to a temporary file and returns its path.
  std::string save(const std::string& name) const {
    const auto dir = glt_test::temp_dir() / "models";
    std::filesystem::create_directories(dir);
    const auto path = (dir / (name + ".onnx")).string();
    std::ofstream f(path, std::ios::binary);
    m_.SerializeToOstream(&f);
    return path;
  }

 private:
  static void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::int64_t>& shape,
                    int elem) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    int k = 0;
    for (auto d : shape) {
      auto* dim = s->add_dim();
      if (d >= 0)
        dim->set_dim_value(d);
      else
        dim->set_dim_param(std::string("d").append(std::to_string(k++)));
    }
  }
  onnx::ModelProto m_;
};

}  // namespace glt_test
