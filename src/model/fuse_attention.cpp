// The planner's fuse_attention (planner.hpp): attention written out in ONNX nodes, as exporters
// emit it (paddle2onnx's SVTR blocks in PP-OCRv4 rec; torch.onnx before opset 23's Attention):
// MatMul(Softmax(MatMul(q * scale, Transpose(k))), v) -> one gltensor.Attention node
// (ops_fused.cpp; nn_functional.hpp's scaled_dot_product_attention, the fused kernels).
#include "model/planner.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

namespace {

// Softmax over the last of 4 dims: axis 3 or -1 (before opset 13 the input is flattened to 2-D
// at the axis, default 1, which for the last axis gives the same rows). (Scores of another rank,
// from a q of rank 5 or more, with axis 3: the fused node runs the nodes' softmax.)
bool softmax_of_last(const Graph& g, const Node& n) {
  const std::int64_t axis = n.attrs.i("axis", g.opset >= 13 ? -1 : 1);
  return axis == 3 || axis == -1;
}

// Tries the pattern ending at MatMul node `mm2`; rewrites it in place and returns whether it did.
bool fuse_at(Graph& g, Node& mm2) {
  if (mm2.removed || mm2.op_type != "MatMul" || !mm2.domain.empty() || mm2.inputs.size() != 2) return false;
  Node* sm = sole_producer(g, mm2.inputs[0], "Softmax");
  if (!sm || !softmax_of_last(g, *sm)) return false;
  Node* mm1 = sole_producer(g, sm->inputs[0], "MatMul");
  if (!mm1 || mm1->inputs.size() != 2) return false;
  Node* tr = sole_producer(g, mm1->inputs[1], "Transpose");
  if (!tr || tr->attrs.ints("perm") != std::vector<std::int64_t>{0, 1, 3, 2}) return false;
  int q = mm1->inputs[0];
  double scale = 1.0;
  Node* mul = sole_producer(g, q, "Mul");
  if (mul && mul->inputs.size() == 2) {
    const int side = const_of(g, mul->inputs[1]) ? 1 : const_of(g, mul->inputs[0]) ? 0 : -1;
    const HostTensor* c = side >= 0 ? const_of(g, mul->inputs[side]) : nullptr;
    if (!c || c->numel() != 1 || c->shape.size() > 1 || !elem_is_float(c->elem) || !(c->v[0] > 0)) return false;
    scale = c->v[0];
    q = mul->inputs[1 - side];
  } else {
    mul = nullptr;
  }
  const int k = tr->inputs[0], v = mm2.inputs[1];
  for (int t : {q, k, v})
    if (g.values[t].elem != kFloat) return false;
  for (Node* n : {mul, tr, mm1, sm})
    if (n) n->removed = true;
  const std::int64_t axis = sm->attrs.i("axis", g.opset >= 13 ? -1 : 1);
  rewrite_node(g, mm2, "gltensor.Attention", {q, k, v}, "scale", scale,
               std::string(mul ? "Mul+" : "") + "Transpose+MatMul+Softmax+MatMul");
  // (the Softmax's axis: 3 is the scores' last only where they are 4-D, which q's rank decides
  // at run time; ops_fused.cpp)
  Attr ax;
  ax.type = Attr::kInt, ax.i = axis;
  mm2.attrs.set("axis", ax);
  return true;
}

}  // namespace

void fuse_attention(Graph& g, PlanStats& s) {
  if (!detail::settings().fuse_attention) return;
  g.recount();
  for (Node& n : g.nodes) s.attention += fuse_at(g, n) ? 1 : 0;
}

}  // namespace gltensor::model
