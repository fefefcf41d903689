// The model runtime's graph IR (internal): values (graph inputs, initializers, constants,
// intermediates) and nodes in topological order, with the planner's annotations.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gltensor/linalg.hpp"
#include "gltensor/model.hpp"
#include "model/host_tensor.hpp"

namespace gltensor::detail {
struct FusedExpr;  // ops/fused_elementwise.hpp
struct FusedMlp;   // nn/fused_mlp.hpp
}  // namespace gltensor::detail

namespace gltensor::model {

struct Graph;

/// One attribute of a node, copied out of the protobuf.
struct Attr {
  enum Type {
    kFloat = 1,
    kInt = 2,
    kString = 3,
    kTensor = 4,
    kGraph = 5,
    kFloats = 6,
    kInts = 7,
    kStrings = 8,
    kTypeProto = 13
  };
  int type = 0;
  double f = 0;
  std::int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<std::int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const HostTensor> t;  // kTensor (null if its dtype is unsupported)
  std::string t_error;                  // why t is null
  std::shared_ptr<Graph> g;             // kGraph: the subgraph (If branches, Loop and Scan bodies)
  // kTypeProto (Optional's `type`): the kind it names and its tensors' element type; tp_error
  // says why it is not one the runtime takes (a map, a sequence of sequences, ...).
  ValueKind tp_kind = ValueKind::tensor;
  int tp_elem = 0;
  std::string tp_error;
  /// The value as written in messages ("SAME_UPPER", "2", "[1, 1]").
  std::string text() const;
};

class Attrs {
 public:
  bool has(const std::string& k) const { return m_.count(k) > 0; }
  std::int64_t i(const std::string& k, std::int64_t def) const { return has(k) ? m_.at(k).i : def; }
  double f(const std::string& k, double def) const { return has(k) ? m_.at(k).f : def; }
  std::string s(const std::string& k, const std::string& def) const { return has(k) ? m_.at(k).s : def; }
  std::vector<std::int64_t> ints(const std::string& k, std::vector<std::int64_t> def = {}) const {
    return has(k) ? m_.at(k).ints : def;
  }
  std::vector<double> floats(const std::string& k, std::vector<double> def = {}) const {
    return has(k) ? m_.at(k).floats : def;
  }
  const Attr* get(const std::string& k) const { return has(k) ? &m_.at(k) : nullptr; }
  const std::map<std::string, Attr>& all() const { return m_; }
  void set(const std::string& k, Attr a) { m_[k] = std::move(a); }
  void erase(const std::string& k) { m_.erase(k); }

 private:
  std::map<std::string, Attr> m_;
};

struct Node {
  int index = 0;  ///< position in the file's graph (for messages)
  std::string name, op_type, domain;
  std::vector<int> inputs;   ///< value ids, -1 for an omitted optional input
  std::vector<int> outputs;  ///< value ids, -1 for an omitted optional output
  Attrs attrs;
  /// Values of this graph that the node's subgraphs read by name (outer scope), nested ones
  /// included: dependencies for the order and the liveness like inputs.
  std::vector<int> implicit;
  bool removed = false;  ///< folded away by the planner
  // Planner annotations (Conv, ConvTranspose, Gemm, MatMul):
  Epilogue epilogue;  ///< activation fused into the op's epilogue
  std::string fused;  ///< what was fused into this node ("BatchNormalization", "Add", ...), for dumps
  /// gltensor.FusedElementwise (fuse_elementwise): the expression over the node's inputs and its
  /// GLSL (render_fused_glsl), made once at planning.
  std::shared_ptr<const detail::FusedExpr> fused_expr;
  std::shared_ptr<const std::string> fused_glsl;
  /// gltensor.FusedMlp (fuse_mlp): the layers over the node's packed parameters (input 1).
  std::shared_ptr<const detail::FusedMlp> mlp;
};

struct Value {
  std::string name;
  int elem = kUndefined;  ///< ONNX element type (inferred at load)
  /// A tensor, or a sequence / optional of tensors of type `elem` (ValueKind; inferred at load,
  /// never a constant): at run time RtValue::seq and RtValue::none (ops_sequence.cpp).
  ValueKind kind = ValueKind::tensor;
  std::shared_ptr<const HostTensor> constant;  ///< initializers and folded constants
  int producer = -1;                           ///< node index in Graph::nodes, -1 for none
  int uses = 0;                                ///< number of node inputs reading it
  bool graph_input = false, graph_output = false;
  bool outer = false;  ///< a subgraph's value read from an enclosing graph (by name)
};

struct Graph {
  std::string file;
  int opset = 0;
  std::vector<Node> nodes;  ///< topological order
  std::vector<Value> values;
  std::map<std::string, int> ids;
  std::vector<int> inputs, outputs;  ///< graph inputs (without initializers) and outputs, value ids
  std::vector<ValueInfo> input_info, output_info;
  bool sub = false;        ///< a subgraph (If branch, Loop or Scan body)
  std::vector<int> outer;  ///< a subgraph's values read from enclosing graphs, value ids

  /// The id of a value, created on first use.
  int value(const std::string& name);
  /// Recounts Value::uses and Value::producer over the nodes that are not removed.
  void recount();
  /// "FILE: node 12 'name' (Conv)".
  std::string where(const Node& n) const;
  /// ModelError "gltensor::Model: FILE: node ... : reason", with reason() = reason.
  [[noreturn]] void fail(const Node& n, const std::string& reason) const;
  /// For an attribute: "attribute NAME=VALUE: why".
  [[noreturn]] void fail_attr(const Node& n, const std::string& attr, const std::string& why) const;
};

/// Reads and validates an ONNX model file into the IR (ModelError on failure).
Graph read_graph(const std::string& path);

}  // namespace gltensor::model
