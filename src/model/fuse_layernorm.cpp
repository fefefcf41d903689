// The planner's fuse_layernorm (planner.hpp): LayerNorm written out in ONNX nodes, as exporters
// that predate opset 17's LayerNormalization (paddle2onnx, torch.onnx at older opsets) emit it ->
// one gltensor.LayerNorm node (ops_fused.cpp; nn_functional.hpp's layer_norm: one dispatch
// instead of seven).
#include <cmath>

#include "model/planner.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

namespace {

// A one-element float constant's value, or NaN; of rank 0 or 1 only (x's rank is unknown when
// planning, and at least 1: a constant of a higher rank could broadcast the nodes' result to its
// own, e.g. eps [1, 1, 1] with x [3, 120] gives y [1, 3, 120]).
double scalar_of(const Graph& g, int v) {
  const HostTensor* c = const_of(g, v);
  return c && c->numel() == 1 && c->shape.size() <= 1 && elem_is_float(c->elem) ? c->v[0] : std::nan("");
}

// ReduceMean over the last axis only, dims kept: axes [-1] as an attribute (opset < 18) or a
// constant second input (opset 18 on).
bool mean_of_last(const Graph& g, const Node& n) {
  if (n.op_type != "ReduceMean" || n.attrs.i("keepdims", 1) != 1) return false;
  std::vector<std::int64_t> axes = n.attrs.ints("axes");
  if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
    const HostTensor* c = const_of(g, n.inputs[1]);
    if (!c || !axes.empty()) return false;
    for (double a : c->v) axes.push_back(static_cast<std::int64_t>(a));
  }
  return axes == std::vector<std::int64_t>{-1};
}

// The other input of binary node n (whose inputs are v and that other), or -1.
int other_input(const Node& n, int v) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : -1;
}

// A per-feature constant: float32, rank 1, more than one element (a one-element gamma is a
// scale, not per feature).
const HostTensor* feature_vector(const Graph& g, int v) {
  const HostTensor* c = const_of(g, v);
  return c && c->elem == kFloat && c->shape.size() == 1 && c->shape[0] > 1 ? c : nullptr;
}

// Tries the pattern ending at Div node `div` (y = d / Sqrt(ReduceMean(Pow(d, 2)) + eps), d = x -
// ReduceMean(x), then * gamma and + beta); rewrites it in place and returns whether it did.
bool fuse_at(Graph& g, Node& div) {
  if (div.removed || div.op_type != "Div" || !div.domain.empty() || div.inputs.size() != 2) return false;
  const int d = div.inputs[0];
  Node* sqrt = sole_producer(g, div.inputs[1], "Sqrt");
  Node* sub = d >= 0 && g.values[d].producer >= 0 ? &g.nodes[static_cast<std::size_t>(g.values[d].producer)] : nullptr;
  if (!sqrt || !sub || sub->removed || sub->op_type != "Sub" || g.values[d].uses != 2 || g.values[d].graph_output)
    return false;
  Node* add_eps = sole_producer(g, sqrt->inputs[0], "Add");
  if (!add_eps || add_eps->inputs.size() != 2) return false;
  const int var = const_of(g, add_eps->inputs[1]) ? add_eps->inputs[0] : add_eps->inputs[1];
  const double eps = scalar_of(g, other_input(*add_eps, var));
  if (!(eps > 0)) return false;
  Node* var_mean = sole_producer(g, var, "ReduceMean");
  if (!var_mean || !mean_of_last(g, *var_mean)) return false;
  Node* pow = sole_producer(g, var_mean->inputs[0], "Pow");
  if (!pow || pow->inputs.size() != 2 || pow->inputs[0] != d || scalar_of(g, pow->inputs[1]) != 2.0) return false;
  const int x = sub->inputs[0];
  Node* mean = sole_producer(g, sub->inputs[1], "ReduceMean");
  if (!mean || !mean_of_last(g, *mean) || mean->inputs[0] != x || g.values[x].elem != kFloat) return false;
  // gamma: the Div's only reader Mul(., gamma); beta: then Add(., beta), if there
  const int mc = sole_consumer(g, div.outputs[0]);
  if (mc < 0) return false;
  Node& mul = g.nodes[static_cast<std::size_t>(mc)];
  const int gamma = mul.op_type == "Mul" ? other_input(mul, div.outputs[0]) : -1;
  const HostTensor* gv = feature_vector(g, gamma);
  if (!gv) return false;
  Node* last = &mul;
  int beta = -1;
  if (const int ac = sole_consumer(g, mul.outputs[0]); ac >= 0) {
    Node& add = g.nodes[static_cast<std::size_t>(ac)];
    const int b = add.op_type == "Add" ? other_input(add, mul.outputs[0]) : -1;
    const HostTensor* bv = feature_vector(g, b);
    if (bv && bv->shape == gv->shape) last = &add, beta = b;
  }
  for (Node* n : {mean, sub, pow, var_mean, add_eps, sqrt, &div, &mul}) n->removed = n != last;
  std::vector<int> inputs{x, gamma};
  if (beta >= 0) inputs.push_back(beta);
  rewrite_node(g, *last, "gltensor.LayerNorm", inputs, "epsilon", eps,
               std::string("ReduceMean+Sub+Pow+ReduceMean+Add+Sqrt+Div+Mul") + (beta >= 0 ? "+Add" : ""));
  return true;
}

}  // namespace

void fuse_layernorm(Graph& g, PlanStats& s) {
  if (!detail::settings().fuse_layernorm) return;
  g.recount();
  for (Node& n : g.nodes) s.layernorm += fuse_at(g, n) ? 1 : 0;
}

}  // namespace gltensor::model
