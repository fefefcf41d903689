// The planner's fuse_se (planner.hpp): squeeze-and-excitation blocks, GlobalAveragePool(x) -> 1x1
// Conv (+ activation) -> 1x1 Conv (+ activation) -> Mul(x, .), as MobileNetV3 and PP-LCNet write
// them (PP-OCR's classifier, detector and recognizer) -> one gltensor.SqueezeExcite node
// (ops_fused.cpp; nn/squeeze_excite.hpp: one dispatch where an image's planes are small, else the
// nodes' ops).
#include "model/planner.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

namespace {

// A float32 Conv of one group with a constant 1x1 weight [O, I, 1, 1] and a constant bias (or
// none), no padding, reading `in`, whose output nothing else reads; its epilogue an activation
// without affine (fuse_epilogues'). On a [N, C, 1, 1] input any strides and dilations give the
// same product.
Node* dense_conv(Graph& g, int in, int& weight, int& bias) {
  const int c = sole_consumer(g, in);
  if (c < 0) return nullptr;
  Node& n = g.nodes[static_cast<std::size_t>(c)];
  if (n.op_type != "Conv" || !n.domain.empty() || n.inputs.size() < 2 || n.inputs[0] != in || n.epilogue.affine() ||
      n.outputs.empty() || n.outputs[0] < 0 || g.values[n.outputs[0]].elem != kFloat)
    return nullptr;
  const HostTensor* w = const_of(g, n.inputs[1]);
  if (!w || w->elem != kFloat || w->shape.size() != 4 || w->shape[2] != 1 || w->shape[3] != 1) return nullptr;
  bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (bias >= 0 && (!const_of(g, bias) || g.values[bias].elem != kFloat || const_of(g, bias)->numel() != w->shape[0]))
    return nullptr;
  if (n.attrs.i("group", 1) != 1) return nullptr;
  for (std::int64_t p : n.attrs.ints("pads"))
    if (p != 0) return nullptr;
  const std::string pad = n.attrs.s("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") return nullptr;
  const std::vector<std::int64_t> k = n.attrs.ints("kernel_shape", {1, 1});
  if (k != std::vector<std::int64_t>{1, 1}) return nullptr;
  weight = n.inputs[1];
  return &n;
}

// A bias of zeros where the Conv has none.
int bias_or_zeros(Graph& g, int bias, int weight) {
  if (bias >= 0) return bias;
  const std::int64_t O = const_of(g, weight)->shape[0];
  return new_constant(g, g.values[weight].name + "/zero_bias",
                      HostTensor{kFloat, {O}, std::vector<double>(static_cast<std::size_t>(O), 0.0)});
}

// Tries the block starting at GlobalAveragePool node `pool`; rewrites its Mul in place.
bool fuse_at(Graph& g, Node& pool) {
  if (pool.removed || pool.op_type != "GlobalAveragePool" || !pool.domain.empty() || pool.inputs.size() != 1 ||
      pool.outputs.size() != 1)
    return false;
  const int x = pool.inputs[0];
  if (x < 0 || g.values[x].elem != kFloat) return false;
  int w1 = -1, b1 = -1, w2 = -1, b2 = -1;
  Node* c1 = dense_conv(g, pool.outputs[0], w1, b1);
  Node* c2 = c1 ? dense_conv(g, c1->outputs[0], w2, b2) : nullptr;
  if (!c2) return false;
  const HostTensor &W1 = *const_of(g, w1), &W2 = *const_of(g, w2);
  if (W2.shape[1] != W1.shape[0] || W2.shape[0] != W1.shape[1]) return false;
  const int m = sole_consumer(g, c2->outputs[0]);
  if (m < 0) return false;
  Node& mul = g.nodes[static_cast<std::size_t>(m)];
  if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || mul.attrs.has("broadcast") ||
      mul.outputs.size() != 1 || mul.outputs[0] < 0)
    return false;
  if (!(mul.inputs[0] == x && mul.inputs[1] == c2->outputs[0]) &&
      !(mul.inputs[1] == x && mul.inputs[0] == c2->outputs[0]))
    return false;
  // (a Mul that an elementwise chain continues, x + x * s: the chain's kernel takes the scale with
  // what follows it, as before)
  const int after = sole_consumer(g, mul.outputs[0]);
  if (after >= 0 && elementwise_fusable(g, g.nodes[static_cast<std::size_t>(after)])) return false;
  const Epilogue e1 = c1->epilogue, e2 = c2->epilogue;
  std::string what = "GlobalAveragePool+Conv";
  if (!c1->fused.empty()) what += "+" + c1->fused;
  what += "+Conv";
  if (!c2->fused.empty()) what += "+" + c2->fused;
  what += "+Mul";
  const int bias1 = bias_or_zeros(g, b1, w1), bias2 = bias_or_zeros(g, b2, w2);
  pool.removed = c1->removed = c2->removed = true;
  mul.op_type = "gltensor.SqueezeExcite";
  mul.inputs = {x, w1, bias1, w2, bias2};
  mul.attrs = Attrs();
  Attr acts, params;
  acts.type = Attr::kInts, acts.ints = {static_cast<std::int64_t>(e1.act), static_cast<std::int64_t>(e2.act)};
  params.type = Attr::kFloats, params.floats = {e1.p0, e1.p1, e2.p0, e2.p1};
  mul.attrs.set("activations", acts);
  mul.attrs.set("activation_params", params);
  mul.fused = what;
  g.recount();
  return true;
}

}  // namespace

void fuse_se(Graph& g, bool f16_constants, PlanStats& s) {
  // (as fuse_conv_affine: not with f16_constants, whose convs read their weights rounded to
  // float16; not with GLTENSOR_FUSE_ELEMENTWISE=0, the node-by-node path)
  if (f16_constants || !detail::settings().fuse_elementwise) return;
  g.recount();
  for (Node& n : g.nodes) s.se_blocks += fuse_at(g, n) ? 1 : 0;
}

}  // namespace gltensor::model
