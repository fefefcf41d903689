#include "model/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "model/ops.hpp"
#include "ops/fused_elementwise.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

std::string PlanStats::summary() const {
  return (ifs ? std::to_string(ifs) + " If folded to a branch, " : std::string()) +
         (qdq_integer || qdq_weights ? std::to_string(qdq_integer) + " QDQ Conv/MatMul as integer ops, " +
                                           std::to_string(qdq_weights) + " 8-bit weights kept, "
                                     : std::string()) +
         (qdq_dequant_out ? std::to_string(qdq_dequant_out) + " output DequantizeLinear in the QDQ conv, "
                          : std::string()) +
         (qdq_quant_in ? std::to_string(qdq_quant_in) + " input QuantizeLinear in the QDQ conv, " : std::string()) +
         std::to_string(folded) + " nodes folded to constants, " + std::to_string(batchnorm) +
         " BatchNormalization and " + std::to_string(affine) + " Mul/Add folded into weights, " +
         std::to_string(hardswish) + " HardSwish patterns, " +
         (layernorm ? std::to_string(layernorm) + " LayerNorm patterns, " : std::string()) +
         (attention ? std::to_string(attention) + " attention patterns, " : std::string()) +
         (stft_power ? std::to_string(stft_power) + " STFT power spectra into their mel MatMul, " : std::string()) +
         (stft_mel ? std::to_string(stft_mel) + " STFT power spectra and mel MatMuls in one kernel, " : std::string()) +
         std::to_string(epilogues) + " fused epilogues, " + std::to_string(muladd) + " Mul+Add chains, " +
         (conv_affine ? std::to_string(conv_affine) + " scalar Mul/Add into conv epilogues, " : std::string()) +
         (se_blocks ? std::to_string(se_blocks) + " squeeze-excitation blocks, " : std::string()) +
         (residual_adds ? std::to_string(residual_adds) + " residual Add into convs, " : std::string()) +
         std::to_string(elementwise_nodes) + " elementwise nodes fused into " + std::to_string(elementwise_groups) +
         " kernels, " +
         (mlp_chains ? std::to_string(mlp_layers) + " MatMul/Gemm layers fused into " + std::to_string(mlp_chains) +
                           " MLP kernels, "
                     : std::string()) +
         std::to_string(dead) + " dead nodes";
}

// ---- checks and element types ----

void check_and_type(Graph& g) {
  const Registry& reg = registry();
  for (auto& n : g.nodes) {
    const bool ms = n.domain == "com.microsoft";
    if (!n.domain.empty() && n.domain != "ai.onnx" && !(ms && microsoft_op(n.op_type)))
      g.fail(n, "domain " + n.domain + (ms ? " op " + n.op_type : std::string()) + " is not supported");
    if (!ms && microsoft_op(n.op_type) && n.op_type.rfind("QLinear", 0) == 0)
      g.fail(n, "op " + n.op_type + " is a com.microsoft op (not in the default domain)");
    auto it = reg.find(n.op_type);
    if (it == reg.end()) g.fail(n, "op " + n.op_type + " is not supported");
    const OpDef& def = it->second;
    if (const int v = op_version(n.op_type, g.opset);
        v && std::find(def.versions.begin(), def.versions.end(), v) == def.versions.end())
      g.fail(n, "op " + n.op_type + " version " + std::to_string(v) + " (opset " + std::to_string(g.opset) +
                    ") is not supported");
    for (const auto& [name, attr] : n.attrs.all())
      if (std::find(def.attrs.begin(), def.attrs.end(), name) == def.attrs.end())
        g.fail_attr(n, name, "not supported by the " + n.op_type + " mapping");
    CheckCtx c{g, n, {}, {}};
    for (int in : n.inputs) {
      const int e = in >= 0 ? g.values[in].elem : kUndefined;
      if (in >= 0 && e != kUndefined && !elem_supported(e))
        g.fail(n, "input '" + g.values[in].name + "': dtype " + elem_name(e) + " is not supported");
      c.in_elems.push_back(e);
      c.in_kinds.push_back(in >= 0 ? g.values[in].kind : ValueKind::tensor);
      if (!def.kinds && c.in_kinds.back() != ValueKind::tensor)
        g.fail(n, "input '" + g.values[in].name + "' is " + kind_name(c.in_kinds.back()) + "; op " + n.op_type +
                      " takes tensors");
    }
    if (def.check) def.check(c);
    const std::vector<ValueKind> kinds = def.kinds ? def.kinds(c) : std::vector<ValueKind>();
    std::vector<int> types = def.types ? def.types(c) : std::vector<int>(n.outputs.size(), c.elem(0));
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] < 0) continue;
      const int e = k < types.size() ? types[k] : c.elem(0);
      if (e != kUndefined && !elem_supported(e))
        g.fail(n, "output '" + g.values[n.outputs[k]].name + "': dtype " + elem_name(e) + " is not supported");
      g.values[n.outputs[k]].elem = e;
      g.values[n.outputs[k]].kind = k < kinds.size() ? kinds[k] : ValueKind::tensor;
    }
  }
}

// ---- constant folding ----

namespace {

// A shape-only stand-in for graph input v when every dim of it is fixed (no values), or null.
std::shared_ptr<const HostTensor> fixed_input_shape(const Graph& g, int v) {
  if (v < 0 || !g.values[v].graph_input || g.sub) return nullptr;
  for (std::size_t k = 0; k < g.inputs.size(); ++k) {
    if (g.inputs[k] != v) continue;
    auto t = std::make_shared<HostTensor>();
    t->elem = g.values[v].elem;
    t->shape = g.input_info[k].shape;
    for (auto d : t->shape)
      if (d < 0) return nullptr;
    return t;
  }
  return nullptr;
}

}  // namespace

void fold_constants(Graph& g, const Device& dev, PlanStats& s) {
  const Registry& reg = registry();
  for (auto& n : g.nodes) {
    if (n.removed || is_control_flow(n)) continue;  // (If with a constant condition: inline_ifs)
    const OpDef& def = reg.at(n.op_type);
    if (def.keep || (!def.run && !def.host)) continue;  // (sequence and optional ops: never constants)
    // Shape and Size of a graph input whose dims are all fixed: constants (its shape stands in
    // for the value, which they do not read).
    const std::shared_ptr<const HostTensor> fixed =
        def.shape_only && !n.inputs.empty() ? fixed_input_shape(g, n.inputs[0]) : nullptr;
    bool all_const = true;
    for (int in : n.inputs) all_const = all_const && (in < 0 || g.values[in].constant);
    if (!all_const && !fixed) continue;
    std::vector<RtValue> slots(n.inputs.size());
    std::vector<RtValue*> ptrs;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] >= 0) slots[i].host = g.values[n.inputs[i]].constant;
      if (i == 0 && fixed && !slots[0].host) slots[0].host = fixed;
      ptrs.push_back(&slots[i]);
    }
    Args a(dev, g, n, ptrs, DType::f32);
    std::vector<HostTensor> outs;
    if (def.host) {
      outs = def.host(a);
    } else {
      Ts t = def.run(a);
      for (std::size_t k = 0; k < t.size() && k < n.outputs.size(); ++k)
        outs.push_back(n.outputs[k] >= 0 ? HostTensor::download(t[k], g.values[n.outputs[k]].elem) : HostTensor{});
    }
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] < 0) continue;
      if (k >= outs.size()) g.fail(n, "produced fewer outputs than the node declares");
      outs[k].elem = g.values[n.outputs[k]].elem;
      g.values[n.outputs[k]].constant = std::make_shared<HostTensor>(std::move(outs[k]));
    }
    n.removed = true;
    ++s.folded;
  }
  g.recount();
}

// ---- If with a constant condition ----

bool is_control_flow(const Node& n) { return n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan"; }

bool inline_ifs(Graph& g, PlanStats& s) {
  bool any = false;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.removed || n.op_type != "If" || n.inputs.empty() || n.inputs[0] < 0) continue;
    const HostTensor* c = g.values[n.inputs[0]].constant.get();
    if (!c || c->v.size() != 1) continue;
    const Attr* a = n.attrs.get(c->v[0] != 0 ? "then_branch" : "else_branch");
    if (!a || !a->g) continue;
    const Graph& b = *a->g;
    // The branch's values keep their names (ONNX names are unique across nested graphs); a name
    // this graph already has (other than the outer values) leaves the If to run time.
    bool clash = false;
    for (std::size_t v = 0; v < b.values.size(); ++v)
      clash = clash || (!b.values[v].outer && g.ids.count(b.values[v].name) > 0);
    if (clash) continue;
    std::vector<int> map(b.values.size(), -1);
    for (std::size_t v = 0; v < b.values.size(); ++v) {
      const Value& bv = b.values[v];
      const int id = g.value(bv.name);
      map[v] = id;
      if (bv.outer) continue;
      g.values[id].elem = bv.elem;
      g.values[id].kind = bv.kind;
      g.values[id].constant = bv.constant;
    }
    std::vector<Node> added;
    for (const Node& bn : b.nodes) {
      if (bn.removed) continue;
      Node m = bn;
      for (int& in : m.inputs) in = in < 0 ? -1 : map[in];
      for (int& o : m.outputs) o = o < 0 ? -1 : map[o];
      for (int& in : m.implicit) in = map[in];
      m.name = n.name + "/" + bn.name;
      added.push_back(std::move(m));
    }
    for (std::size_t k = 0; k < n.outputs.size() && k < b.outputs.size(); ++k) {
      if (n.outputs[k] < 0) continue;
      Node id;
      id.index = n.index;
      id.name = n.name + "/output" + std::to_string(k);
      id.op_type = "Identity";
      id.inputs = {map[b.outputs[k]]};
      id.outputs = {n.outputs[k]};
      added.push_back(std::move(id));
    }
    n.removed = true;
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, added.begin(), added.end());
    ++s.ifs;
    any = true;
  }
  g.recount();
  return any;
}

// ---- helpers for rewrites ----

int sole_consumer(const Graph& g, int v) {
  if (v < 0 || g.values[v].uses != 1 || g.values[v].graph_output) return -1;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].removed) continue;
    for (int in : g.nodes[i].inputs)
      if (in == v) return static_cast<int>(i);
  }
  return -1;
}

Node* sole_producer(Graph& g, int v, const char* op) {
  if (v < 0 || g.values[v].producer < 0 || g.values[v].uses != 1 || g.values[v].graph_output) return nullptr;
  Node& n = g.nodes[static_cast<std::size_t>(g.values[v].producer)];
  return n.removed || n.op_type != op || !n.domain.empty() ? nullptr : &n;
}

void rewrite_node(Graph& g, Node& n, const std::string& op, std::vector<int> inputs, const std::string& attr,
                  double value, const std::string& fused) {
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.attrs = Attrs();
  Attr a;
  a.type = Attr::kFloat, a.f = value;
  n.attrs.set(attr, a);
  n.fused = fused;
  g.recount();
}

const HostTensor* const_of(const Graph& g, int v) { return v >= 0 ? g.values[v].constant.get() : nullptr; }

int new_constant(Graph& g, const std::string& name, HostTensor t) {
  std::string nm = name;
  while (g.ids.count(nm)) nm += "'";
  const int id = g.value(nm);
  g.values[id].elem = t.elem;
  g.values[id].constant = std::make_shared<HostTensor>(std::move(t));
  return id;
}

namespace {

// Per-output-channel values of constant c broadcast against a conv output of rank `rank` with
// `O` channels (dim 1): c must broadcast to [1, O, 1, ...] without growing the output.
bool per_channel(const HostTensor& c, std::size_t rank, std::int64_t O, std::vector<double>& out) {
  if (c.shape.size() > rank || !elem_is_float(c.elem)) return false;
  const std::size_t pad = rank - c.shape.size();
  std::int64_t channels = 1;
  for (std::size_t d = 0; d < c.shape.size(); ++d) {
    const std::size_t full = d + pad;
    if (full == 1)
      channels = c.shape[d];
    else if (c.shape[d] != 1)
      return false;
  }
  if (channels != 1 && channels != O) return false;
  out.resize(static_cast<std::size_t>(O));
  for (std::int64_t o = 0; o < O; ++o) out[static_cast<std::size_t>(o)] = c.v[channels == 1 ? 0 : o];
  return true;
}

// A Conv, or a ConvTranspose of one group (its weight [Cin, Cout, ...]: output channels along
// dim 1), without an epilogue yet.
bool is_conv(const Node& n) {
  if (!n.epilogue.none()) return false;
  return n.op_type == "Conv" || (n.op_type == "ConvTranspose" && n.attrs.i("group", 1) == 1);
}

// Output channels of a Conv / ConvTranspose (is_conv) from its constant weight.
std::int64_t conv_out_channels(const Node& conv, const HostTensor& w) {
  return conv.op_type == "ConvTranspose" ? w.shape[1] : w.shape[0];
}

// Rewrites conv's weight (scaled per output channel) and bias (b' = b * scale + shift).
void set_conv_params(Graph& g, Node& conv, const std::vector<double>& scale, const std::vector<double>& shift) {
  const HostTensor& w = *const_of(g, conv.inputs[1]);
  const std::int64_t O = conv_out_channels(conv, w);
  // Conv [O, C, ...]: blocks of one output channel; ConvTranspose [Cin, O, ...]: Cin rows of O blocks.
  const std::int64_t rows = conv.op_type == "ConvTranspose" ? w.shape[0] : 1;
  const std::size_t per = static_cast<std::size_t>(w.numel() / std::max<std::int64_t>(O * rows, 1));
  HostTensor nw = w;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::size_t k = 0; k < per; ++k) {
        const std::size_t i = static_cast<std::size_t>(r * O + o) * per + k;
        nw.v[i] = static_cast<float>(w.v[i] * scale[o]);
      }
  HostTensor nb{w.elem, {O}, std::vector<double>(static_cast<std::size_t>(O), 0.0)};
  if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) nb.v = const_of(g, conv.inputs[2])->v;
  for (std::int64_t o = 0; o < O; ++o) nb.v[o] = static_cast<float>(nb.v[o] * scale[o] + shift[o]);
  conv.inputs[1] = new_constant(g, g.values[conv.inputs[1]].name + "/folded", std::move(nw));
  if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
  conv.inputs[2] = new_constant(g, g.values[conv.inputs[1]].name + "/bias", std::move(nb));
}

bool conv_foldable(const Graph& g, const Node& conv) {
  const HostTensor* w = const_of(g, conv.inputs.size() > 1 ? conv.inputs[1] : -1);
  if (!w || w->shape.size() < 3 || !elem_is_float(w->elem)) return false;
  return conv.inputs.size() < 3 || conv.inputs[2] < 0 || const_of(g, conv.inputs[2]);
}

// Clip with constant bounds (attributes before opset 11, one-value inputs from it) as an epilogue.
bool constant_clip(const Graph& g, const Node& n, Epilogue& e) {
  const double inf = std::numeric_limits<double>::infinity();
  double lo = -inf, hi = inf;
  if (g.opset < 11) {
    lo = n.attrs.f("min", -inf);
    hi = n.attrs.f("max", inf);
  } else {
    const HostTensor* a = n.inputs.size() > 1 ? const_of(g, n.inputs[1]) : nullptr;
    const HostTensor* b = n.inputs.size() > 2 ? const_of(g, n.inputs[2]) : nullptr;
    if ((n.inputs.size() > 1 && n.inputs[1] >= 0 && (!a || a->numel() != 1)) ||
        (n.inputs.size() > 2 && n.inputs[2] >= 0 && (!b || b->numel() != 1)))
      return false;
    if (a) lo = a->v[0];
    if (b) hi = b->v[0];
  }
  if (lo > hi) return false;
  e = Epilogue::clip(lo, hi);
  return true;
}

void bypass(Graph& g, Node& producer, Node& consumer, const std::string& what) {
  producer.outputs[0] = consumer.outputs[0];
  consumer.removed = true;
  producer.fused += (producer.fused.empty() ? "" : "+") + what;
  g.recount();
}

}  // namespace

void fold_batchnorm(Graph& g, PlanStats& s) {
  for (auto& conv : g.nodes) {
    if (conv.removed || !is_conv(conv) || !conv_foldable(g, conv)) continue;
    const int c = sole_consumer(g, conv.outputs[0]);
    if (c < 0) continue;
    Node& bn = g.nodes[c];
    if (bn.op_type != "BatchNormalization" || bn.inputs[0] != conv.outputs[0]) continue;
    const HostTensor *sc = const_of(g, bn.inputs[1]), *bi = const_of(g, bn.inputs[2]), *mu = const_of(g, bn.inputs[3]),
                     *var = const_of(g, bn.inputs[4]);
    const std::int64_t O = conv_out_channels(conv, *const_of(g, conv.inputs[1]));
    if (!sc || !bi || !mu || !var || sc->numel() != O || bi->numel() != O || mu->numel() != O || var->numel() != O)
      continue;
    const double eps = bn.attrs.f("epsilon", 1e-5);
    std::vector<double> scale(static_cast<std::size_t>(O)), shift(static_cast<std::size_t>(O));
    for (std::int64_t o = 0; o < O; ++o) {
      scale[o] = sc->v[o] / std::sqrt(var->v[o] + eps);
      shift[o] = bi->v[o] - mu->v[o] * scale[o];
    }
    set_conv_params(g, conv, scale, shift);
    bypass(g, conv, bn, "BatchNormalization");
    ++s.batchnorm;
  }
}

void fold_affine(Graph& g, PlanStats& s) {
  for (auto& conv : g.nodes) {
    if (conv.removed) continue;
    if (is_conv(conv)) {
      while (conv_foldable(g, conv)) {
        const int c = sole_consumer(g, conv.outputs[0]);
        if (c < 0) break;
        Node& n = g.nodes[c];
        if ((n.op_type != "Mul" && n.op_type != "Add") || n.inputs.size() != 2) break;
        const int other = n.inputs[0] == conv.outputs[0] ? n.inputs[1] : n.inputs[0];
        const HostTensor* k = const_of(g, other);
        const HostTensor& w = *const_of(g, conv.inputs[1]);
        std::vector<double> v;
        if (!k || !per_channel(*k, w.shape.size(), conv_out_channels(conv, w), v)) break;
        const std::size_t O = static_cast<std::size_t>(conv_out_channels(conv, w));
        if (n.op_type == "Mul")
          set_conv_params(g, conv, v, std::vector<double>(O, 0.0));
        else
          set_conv_params(g, conv, std::vector<double>(O, 1.0), v);
        bypass(g, conv, n, n.op_type);
        ++s.affine;
      }
    } else if (conv.op_type == "MatMul" && conv.inputs.size() == 2) {
      const HostTensor* b = const_of(g, conv.inputs[1]);
      if (!b || b->shape.size() != 2 || !elem_is_float(b->elem)) continue;
      const int c = sole_consumer(g, conv.outputs[0]);
      if (c < 0) continue;
      Node& n = g.nodes[c];
      if (n.op_type != "Add" || n.inputs.size() != 2) continue;
      const int other = n.inputs[0] == conv.outputs[0] ? n.inputs[1] : n.inputs[0];
      const HostTensor* k = const_of(g, other);
      if (!k || !elem_is_float(k->elem)) continue;
      if (k->shape.size() == 1 && k->shape[0] == b->shape[1]) {
        conv.inputs.push_back(other);
      } else if (k->numel() == 1 && k->shape.size() <= 1 && detail::settings().fuse_elementwise) {
        // One value (the log-mel front end's Add(eps) before its Log): the bias [N] of that value,
        // so that the Log after it can be the MatMul's epilogue (fuse_epilogues).
        HostTensor bias{k->elem, {b->shape[1]}, std::vector<double>(static_cast<std::size_t>(b->shape[1]), k->v[0])};
        conv.inputs.push_back(new_constant(g, g.values[other].name + "_bias", std::move(bias)));
      } else {
        continue;
      }
      bypass(g, conv, n, "Add");
      ++s.affine;
    }
  }
}

namespace {

// The frame length n of STFT node st whose signal is a graph input of shape [., ., 1] (a real
// signal, known at load), whose frame_step is a constant and whose window (a constant 1-D, or
// none with a constant frame_length) and frame_length agree; its window's values in `window`
// (empty for none). 0 for any other STFT.
std::int64_t stft_frames_of(const Graph& g, const Node& st, std::vector<double>& window) {
  const int x = st.inputs[0];
  bool real = false;
  for (std::size_t k = 0; k < g.inputs.size() && !g.sub; ++k)
    if (g.inputs[k] == x) real = g.input_info[k].shape.size() == 3 && g.input_info[k].shape[2] == 1;
  const HostTensor* step = st.inputs.size() > 1 ? const_of(g, st.inputs[1]) : nullptr;
  if (!real || !step || step->numel() != 1 || step->v[0] < 1) return 0;
  const bool has_w = st.inputs.size() > 2 && st.inputs[2] >= 0, has_fl = st.inputs.size() > 3 && st.inputs[3] >= 0;
  const HostTensor* w = has_w ? const_of(g, st.inputs[2]) : nullptr;
  const HostTensor* fl = has_fl ? const_of(g, st.inputs[3]) : nullptr;
  if ((has_w && (!w || w->shape.size() != 1 || w->numel() == 0)) || (has_fl && (!fl || fl->numel() != 1)) ||
      (!has_w && !has_fl))
    return 0;
  const std::int64_t n = has_w ? w->numel() : static_cast<std::int64_t>(fl->v[0]);
  if (n < 1 || (has_fl && static_cast<std::int64_t>(fl->v[0]) != n)) return 0;
  if (has_w) window = w->v;
  return n;
}

}  // namespace

void fuse_stft_power(Graph& g, PlanStats& s) {
  if (!detail::settings().fuse_elementwise) return;
  // The one reduced axis of a ReduceSum / ReduceSumSquare (attribute before opset 13 / 18, input
  // from it), keepdims 0: -1 or 3, spec [B, F, m, 2]'s (re, im) axis.
  auto over_pairs = [&](const Node& r, int input_from) {
    if (r.attrs.i("keepdims", 1) != 0) return false;
    std::vector<std::int64_t> axes;
    if (g.opset < input_from) {
      axes = r.attrs.ints("axes");
    } else if (const HostTensor* ax = r.inputs.size() > 1 ? const_of(g, r.inputs[1]) : nullptr) {
      axes = ax->ints();
    }
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == 3);
  };
  for (auto& st : g.nodes) {
    if (st.removed || st.op_type != "STFT" || !st.domain.empty() || st.epilogue.act != Activation::none ||
        st.outputs.empty() || st.outputs[0] < 0 || st.inputs.empty() || st.inputs[0] < 0 ||
        g.values[st.inputs[0]].elem != kFloat)
      continue;
    const int spec = st.outputs[0];
    if (g.values[spec].elem != kFloat || g.values[spec].graph_output) continue;
    // The power: Mul(spec, spec) -> ReduceSum (spec's two uses), or ReduceSumSquare(spec) (its one).
    Node* head = nullptr;  // the node that becomes the Reshape
    Node* red = nullptr;   // the reduction (head itself for ReduceSumSquare)
    if (g.values[spec].uses == 2) {
      for (auto& n : g.nodes)
        if (!n.removed && n.op_type == "Mul" && n.domain.empty() && n.inputs.size() == 2 && n.inputs[0] == spec &&
            n.inputs[1] == spec)
          head = &n;
      const int rs = head ? sole_consumer(g, head->outputs[0]) : -1;
      if (rs >= 0) red = &g.nodes[static_cast<std::size_t>(rs)];
      if (red && (red->op_type != "ReduceSum" || !red->domain.empty() || red->inputs.empty() ||
                  red->inputs[0] != head->outputs[0] || !over_pairs(*red, 13)))
        red = nullptr;
    } else if (const int c = sole_consumer(g, spec); c >= 0) {
      Node& n = g.nodes[static_cast<std::size_t>(c)];
      if (n.op_type == "ReduceSumSquare" && n.domain.empty() && n.inputs[0] == spec && over_pairs(n, 18))
        head = red = &n;
    }
    if (!red) continue;
    const int pw = red->outputs[0], mm = sole_consumer(g, pw);
    if (mm < 0) continue;
    Node& mat = g.nodes[static_cast<std::size_t>(mm)];
    if (mat.op_type != "MatMul" || !mat.domain.empty() || mat.inputs.size() != 2 || mat.inputs[0] != pw) continue;
    const HostTensor* w = const_of(g, mat.inputs[1]);
    if (!w || w->shape.size() != 2 || !elem_is_float(w->elem)) continue;
    // The weight's rows twice: row k of w as rows 2k and 2k + 1, against re^2 and im^2.
    const std::int64_t m = w->shape[0], N = w->shape[1];
    HostTensor w2{w->elem, {2 * m, N}, std::vector<double>(static_cast<std::size_t>(2 * m * N))};
    for (std::int64_t r = 0; r < 2 * m; ++r)
      for (std::int64_t c = 0; c < N; ++c)
        w2.v[static_cast<std::size_t>(r * N + c)] = w->v[static_cast<std::size_t>((r / 2) * N + c)];
    const int w2_id = new_constant(g, g.values[mat.inputs[1]].name + "_pairs", std::move(w2));
    mat.inputs[1] = w2_id;  // (its input 0 below)
    const int flat = head->outputs[0];
    head->attrs = Attrs();
    if (red != head) red->removed = true;
    const std::string what = head == red ? "ReduceSumSquare" : "Mul+ReduceSum";
    // A real signal of a known shape [., ., 1] and the STFT's sizes and window constants: the STFT
    // as its frames (a view) times the windowed DFT matrix, a constant made here: a MatMul that
    // fuse_mlp can chain with the mel MatMul (one dispatch), else the two matmuls.
    std::vector<double> window;
    const std::int64_t n = stft_frames_of(g, st, window);
    const std::int64_t m_bins = st.attrs.i("onesided", 1) ? n / 2 + 1 : n;
    if (n > 0 && m_bins == m && n * 2 * m_bins <= (std::int64_t{1} << 22)) {
      const std::int64_t step = static_cast<std::int64_t>(const_of(g, st.inputs[1])->v[0]);
      HostTensor d{kFloat, {n, 2 * m_bins}, stft_matrix(n, m_bins, window)};
      const int d_id = new_constant(g, st.name + "_dft", std::move(d));
      st.op_type = "gltensor.Frames";
      st.inputs = {st.inputs[0]};
      st.attrs = Attrs();
      Attr a;
      a.type = Attr::kInt, a.i = step;
      st.attrs.set("frame_step", a);
      a.i = n;
      st.attrs.set("frame_length", a);
      st.fused = "STFT";
      head->op_type = "MatMul";
      head->inputs = {spec, d_id};
      head->epilogue = Epilogue(Activation::square);
      head->fused = "STFT+" + what;
      mat.inputs[0] = flat;
      g.recount();
      ++s.stft_power;
      continue;
    }
    const int shape_id = new_constant(g, g.values[spec].name + "_pairs_shape", HostTensor{kInt64, {3}, {0, 0, -1}});
    st.epilogue = Epilogue(Activation::square);
    st.fused += (st.fused.empty() ? "" : "+") + std::string("square");
    // The power's first node -> Reshape(spec, [0, 0, -1]): [B, F, m, 2] as [B, F, 2 m] (a view)
    head->fused = what;
    head->op_type = "Reshape";
    head->inputs = {spec, shape_id};
    mat.inputs[0] = flat;
    g.recount();
    ++s.stft_power;
  }
}

void fuse_stft_mel(Graph& g, const Device& dev, bool f16_constants, PlanStats& s) {
  const detail::Settings& st = detail::settings();
  // by default on GPUs only: on llvmpipe (2 cores) logmel_16k's two matmul kernels ran a replay in
  // 2.1-8 ms, the one kernel in 3.9-21 ms (its twiddles and frames gathered lane by lane)
  if (f16_constants || st.stft_mel == 0 || (st.stft_mel < 0 && dev.adapter().software) || !st.fuse_elementwise) return;
  for (auto& fr : g.nodes) {
    if (fr.removed || fr.op_type != "gltensor.Frames" || fr.outputs.size() != 1 || fr.outputs[0] < 0) continue;
    const int frames = fr.outputs[0];
    const int h = sole_consumer(g, frames);
    if (h < 0 || g.values[frames].graph_output) continue;
    Node& head = g.nodes[static_cast<std::size_t>(h)];
    if (head.op_type != "MatMul" || head.inputs.size() != 2 || head.inputs[0] != frames ||
        head.epilogue.act != Activation::square || head.epilogue.affine() || head.outputs.size() != 1 ||
        head.outputs[0] < 0 || g.values[head.outputs[0]].graph_output)
      continue;
    const int mm = sole_consumer(g, head.outputs[0]);
    if (mm < 0) continue;
    Node& mat = g.nodes[static_cast<std::size_t>(mm)];
    if (mat.op_type != "MatMul" || mat.inputs.size() < 2 || mat.inputs.size() > 3 || mat.inputs[0] != head.outputs[0] ||
        mat.epilogue.affine() || mat.outputs.size() != 1 || mat.outputs[0] < 0 ||
        g.values[mat.outputs[0]].elem != kFloat)
      continue;
    const HostTensor* D = const_of(g, head.inputs[1]);
    const HostTensor* w2 = const_of(g, mat.inputs[1]);
    const HostTensor* bias = mat.inputs.size() == 3 ? const_of(g, mat.inputs[2]) : nullptr;
    const std::int64_t n = fr.attrs.i("frame_length", 0), step = fr.attrs.i("frame_step", 0);
    if (!D || !w2 || (mat.inputs.size() == 3 && !bias) || n < 1 || step < 1 || D->shape.size() != 2 ||
        D->shape[0] != n || D->shape[1] % 2 != 0 || w2->shape.size() != 2 || w2->shape[0] != D->shape[1])
      continue;
    const std::int64_t m = D->shape[1] / 2, N = w2->shape[1];
    if (bias && (bias->numel() != N || bias->shape.size() != 1)) continue;
    // The window: the DFT matrix's column 0 (cos 0 times w[j]), checked by making the matrix again.
    std::vector<double> window(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j)
      window[static_cast<std::size_t>(j)] = D->v[static_cast<std::size_t>(j * 2 * m)];
    if (stft_matrix(n, m, window) != D->v) continue;
    // The mel weight: w2's rows 2k and 2k + 1 (fuse_stft_power's pairs), equal.
    HostTensor M{kFloat, {m, N}, std::vector<double>(static_cast<std::size_t>(m * N))};
    bool pairs = true;
    for (std::int64_t k = 0; k < m && pairs; ++k)
      for (std::int64_t c = 0; c < N; ++c) {
        const double v = w2->v[static_cast<std::size_t>(2 * k * N + c)];
        pairs = pairs && v == w2->v[static_cast<std::size_t>((2 * k + 1) * N + c)];
        M.v[static_cast<std::size_t>(k * N + c)] = v;
      }
    if (!pairs) continue;
    HostTensor tw{kFloat, {n, 2}, std::vector<double>(static_cast<std::size_t>(2 * n))};
    for (std::int64_t t = 0; t < n; ++t) {
      const double a = 2.0 * M_PI * static_cast<double>(t) / static_cast<double>(n);
      tw.v[static_cast<std::size_t>(2 * t)] = std::cos(a), tw.v[static_cast<std::size_t>(2 * t + 1)] = -std::sin(a);
    }
    const std::string base = fr.name.empty() ? g.values[frames].name : fr.name;
    const int bias_id =
        bias ? mat.inputs[2]
             : new_constant(g, base + "_mel_zero_bias",
                            HostTensor{kFloat, {N}, std::vector<double>(static_cast<std::size_t>(N), 0.0)});
    const int window_id = new_constant(g, base + "_window", HostTensor{kFloat, {n}, window});
    const int tw_id = new_constant(g, base + "_twiddles", std::move(tw));
    const int M_id = new_constant(g, base + "_mel", std::move(M));
    mat.inputs = {fr.inputs[0], head.inputs[1], mat.inputs[1], bias_id, window_id, tw_id, M_id};
    mat.op_type = "gltensor.StftMel";
    mat.attrs = fr.attrs;
    mat.fused = head.fused + "+" + (mat.fused.empty() ? std::string("MatMul") : "MatMul+" + mat.fused);
    fr.removed = head.removed = true;
    g.recount();
    ++s.stft_mel;
  }
}

void fuse_hardswish(Graph& g, PlanStats& s) {
  auto scalar = [&](int v, double want) {
    const HostTensor* c = const_of(g, v);
    return c && c->numel() == 1 && std::fabs(c->v[0] - want) < 1e-6;
  };
  auto clip_0_6 = [&](const Node& n) {
    if (n.op_type != "Clip") return false;
    if (g.opset < 11) return n.attrs.f("min", -1) == 0 && n.attrs.f("max", -1) == 6;
    return n.inputs.size() == 3 && scalar(n.inputs[1], 0) && scalar(n.inputs[2], 6);
  };
  for (auto& last : g.nodes) {
    if (last.removed) continue;
    // last: Div(m, 6) or Mul(m, 1/6)
    int m = -1;
    if (last.op_type == "Div" && scalar(last.inputs[1], 6)) m = last.inputs[0];
    if (last.op_type == "Mul" && scalar(last.inputs[1], 1.0 / 6)) m = last.inputs[0];
    if (last.op_type == "Mul" && scalar(last.inputs[0], 1.0 / 6)) m = last.inputs[1];
    if (m < 0 || g.values[m].uses != 1 || g.values[m].graph_output || g.values[m].producer < 0) continue;
    Node& mul = g.nodes[g.values[m].producer];
    if (mul.op_type != "Mul") continue;
    for (int side = 0; side < 2; ++side) {
      const int x = mul.inputs[side], cl = mul.inputs[1 - side];
      if (g.values[cl].producer < 0 || g.values[cl].uses != 1 || g.values[cl].graph_output) continue;
      Node& clip = g.nodes[g.values[cl].producer];
      if (!clip_0_6(clip)) continue;
      const int ad = clip.inputs[0];
      if (g.values[ad].producer < 0 || g.values[ad].uses != 1 || g.values[ad].graph_output) continue;
      Node& add = g.nodes[g.values[ad].producer];
      if (add.op_type != "Add" ||
          !((add.inputs[0] == x && scalar(add.inputs[1], 3)) || (add.inputs[1] == x && scalar(add.inputs[0], 3))))
        continue;
      if (!elem_is_float(g.values[x].elem)) continue;
      // Rewrite: last becomes HardSwish(x).
      add.removed = clip.removed = mul.removed = true;
      last.op_type = "HardSwish";
      last.inputs = {x};
      last.attrs = Attrs();
      last.fused = "Add+Clip+Mul+Div";
      ++s.hardswish;
      g.recount();
      break;
    }
  }
}

void fuse_epilogues(Graph& g, PlanStats& s) {
  for (auto& p : g.nodes) {
    if (p.removed || p.epilogue.act != Activation::none) continue;
    if (p.op_type != "Conv" && p.op_type != "ConvTranspose" && p.op_type != "Gemm" && p.op_type != "MatMul") continue;
    const int c = sole_consumer(g, p.outputs[0]);
    if (c < 0) continue;
    Node& n = g.nodes[c];
    if (n.inputs.empty() || n.inputs[0] != p.outputs[0]) continue;
    Epilogue e;
    const std::string& op = n.op_type;
    if (op == "Relu") {
      e = Epilogue(Activation::relu);
    } else if (op == "Sigmoid") {
      e = Epilogue(Activation::sigmoid);
    } else if (op == "Tanh") {
      e = Epilogue(Activation::tanh);
    } else if (op == "HardSwish") {
      e = Epilogue::hardswish();
    } else if (op == "HardSigmoid") {
      e = Epilogue::hardsigmoid(n.attrs.f("alpha", 0.2), n.attrs.f("beta", 0.5));
    } else if (op == "LeakyRelu") {
      e = Epilogue::leaky_relu(n.attrs.f("alpha", 0.01));
    } else if (op == "Clip") {
      if (!constant_clip(g, n, e)) continue;
    } else if (op == "Log" && (p.op_type == "MatMul" || p.op_type == "Gemm") && detail::settings().fuse_elementwise &&
               g.values[n.outputs[0]].elem == kFloat) {  // (the matmul kernels' log: test_matmul; not the convs')
      e = Epilogue(Activation::log);
    } else {
      continue;
    }
    p.epilogue = e;
    bypass(g, p, n, op);
    ++s.epilogues;
  }
}

void fuse_muladd(Graph& g, PlanStats& s) {
  for (auto& m : g.nodes) {
    if (m.removed || m.op_type != "Mul" || m.inputs.size() != 2) continue;
    const int side = const_of(g, m.inputs[1]) ? 1 : const_of(g, m.inputs[0]) ? 0 : -1;
    if (side < 0 || const_of(g, m.inputs[1 - side])) continue;
    const int x = m.inputs[1 - side], sc = m.inputs[side];
    if (!elem_is_float(g.values[x].elem) || !elem_is_float(g.values[sc].elem)) continue;
    const int c = sole_consumer(g, m.outputs[0]);
    if (c < 0) continue;
    Node& add = g.nodes[c];
    if (add.op_type != "Add" || add.inputs.size() != 2) continue;
    const int b = add.inputs[0] == m.outputs[0] ? add.inputs[1] : add.inputs[0];
    if (!const_of(g, b) || !elem_is_float(g.values[b].elem)) continue;
    m.op_type = "gltensor.MulAdd";
    m.inputs = {x, sc, b};
    bypass(g, m, add, "Mul+Add");
    ++s.muladd;
  }
}

void fuse_conv_affine(Graph& g, bool f16_constants, PlanStats& s) {
  // (not with f16_constants: the unfused ops would read the constants rounded to float16; not
  // with GLTENSOR_FUSE_ELEMENTWISE=0, the node-by-node path)
  if (f16_constants || !detail::settings().fuse_elementwise) return;
  // A one-element float constant of at most `rank` dims (a higher rank would broadcast the
  // output to it: Mul([1, O, H, W], [1, 1, 1, 1, 1]) is [1, 1, O, H, W]).
  auto scalar = [&](int v, std::size_t rank, double& out) {
    const HostTensor* c = const_of(g, v);
    if (!c || c->numel() != 1 || c->shape.size() > rank || !elem_is_float(g.values[v].elem)) return false;
    out = c->v[0];
    return true;
  };
  for (auto& conv : g.nodes) {
    if (conv.removed || conv.op_type != "Conv" || conv.outputs.empty() || conv.outputs[0] < 0) continue;
    // The output's rank: the weight's (ONNX: W has X's rank); 3 (1-D, the least) where W is not
    // a constant.
    const HostTensor* w = conv.inputs.size() > 1 ? const_of(g, conv.inputs[1]) : nullptr;
    const std::size_t rank = w ? w->shape.size() : 3;
    while (g.values[conv.outputs[0]].elem == kFloat) {
      const int c = sole_consumer(g, conv.outputs[0]);
      if (c < 0) break;
      Node& n = g.nodes[c];
      const std::string op = n.op_type;
      double a = 1, b = 0;
      if (op == "gltensor.MulAdd") {
        if (n.inputs.size() != 3 || n.inputs[0] != conv.outputs[0] || !scalar(n.inputs[1], rank, a) ||
            !scalar(n.inputs[2], rank, b))
          break;
      } else if ((op == "Mul" || op == "Add") && n.inputs.size() == 2) {
        const int other = n.inputs[0] == conv.outputs[0] ? n.inputs[1] : n.inputs[0];
        if (other == conv.outputs[0] || !scalar(other, rank, op == "Mul" ? a : b)) break;
      } else {
        break;
      }
      // (y * scale + shift) * a + b
      Epilogue& e = conv.epilogue;
      e.scale = static_cast<float>(e.scale * a), e.shift = static_cast<float>(e.shift * a + b);
      bypass(g, conv, n, op == "gltensor.MulAdd" ? "Mul+Add" : op);
      s.conv_affine += op == "gltensor.MulAdd" ? 2 : 1;  // ONNX nodes
    }
  }
}

void fuse_residual(Graph& g, PlanStats& s) {
  // (not with GLTENSOR_FUSE_ELEMENTWISE=0, the node-by-node path)
  if (!detail::settings().fuse_elementwise) return;
  g.recount();
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    if (conv.removed || conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 ||
        conv.inputs.size() > 3 || conv.outputs.size() != 1 || conv.outputs[0] < 0 ||
        g.values[conv.outputs[0]].elem != kFloat)
      continue;
    const HostTensor* w = const_of(g, conv.inputs[1]);
    if (!w || w->shape.size() != 4) continue;  // 2-D convolutions (conv2d_add)
    const int c = sole_consumer(g, conv.outputs[0]);
    if (c < 0) continue;
    Node& add = g.nodes[static_cast<std::size_t>(c)];
    if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 || add.attrs.has("broadcast") ||
        add.attrs.has("axis") || add.outputs.size() != 1 || add.outputs[0] < 0 ||
        g.values[add.outputs[0]].elem != kFloat)
      continue;
    const int r = add.inputs[0] == conv.outputs[0] ? add.inputs[1] : add.inputs[0];
    // (r made before the conv in the nodes' order, which stays topological)
    const int rp = r >= 0 ? g.values[r].producer : -1;
    if (r < 0 || r == conv.outputs[0] || g.values[r].elem != kFloat || g.values[r].kind != ValueKind::tensor ||
        rp >= static_cast<int>(i))
      continue;
    conv.inputs.resize(3, -1);
    conv.inputs.push_back(r);
    bypass(g, conv, add, "Add");
    ++s.residual_adds;
  }
}

// ---- elementwise chains -> gltensor.FusedElementwise ----

namespace {

using detail::FusedExpr;
using detail::FusedOp;
using detail::FusedStep;

// Compute class of an element type: 1 = float32, 2 = float16 (intermediates rounded to f16), 0 =
// not fused (integers, bfloat16).
int float_class(int elem) { return elem == kFloat ? 1 : elem == kFloat16 ? 2 : 0; }

// A constant of one element and rank <= 1 becomes a literal of the expression (its rank, when
// 1, kept through FusedExpr::min_rank).
bool literal_input(const Graph& g, int v) {
  const HostTensor* c = const_of(g, v);
  return c && c->numel() == 1 && c->shape.size() <= 1 && float_class(c->elem) != 0;
}

// Clip's bounds as the unfused mapping takes them (ops_elementwise.cpp): attributes before opset
// 11, else constant one-element inputs; false where they are not constants or min > max.
bool clip_bounds(const Graph& g, const Node& n, double& lo, double& hi) {
  const double inf = std::numeric_limits<double>::infinity();
  lo = -inf, hi = inf;
  if (g.opset < 11) {
    lo = n.attrs.f("min", -inf);
    hi = n.attrs.f("max", inf);
  } else {
    for (std::size_t k = 1; k < 3 && k < n.inputs.size(); ++k) {
      if (n.inputs[k] < 0) continue;
      const HostTensor* b = const_of(g, n.inputs[k]);
      if (!b || b->numel() != 1) return false;
      (k == 1 ? lo : hi) = b->v[0];
    }
  }
  return lo <= hi;
}

// The tensor operands of an elementwise node (Clip's bounds are parameters), or {} if the node
// is not one that fuse_elementwise takes.
std::vector<int> fusable_operands(const Graph& g, const Node& n) {
  static const std::set<std::string> unary = {"Relu", "Sigmoid", "Tanh",      "HardSwish",   "Neg", "Abs",
                                              "Exp",  "Erf",     "LeakyRelu", "HardSigmoid", "Clip"},
                                     binary = {"Add", "Sub", "Mul", "Div"};
  if (n.removed || n.outputs.size() != 1 || n.outputs[0] < 0 || !n.implicit.empty()) return {};
  const int cls = float_class(g.values[n.outputs[0]].elem);
  if (!cls) return {};
  std::vector<int> ops;
  if (unary.count(n.op_type)) {
    double lo = 0, hi = 0;
    if (n.op_type == "Clip" && !clip_bounds(g, n, lo, hi)) return {};
    ops = {n.inputs.empty() ? -1 : n.inputs[0]};
  } else if (binary.count(n.op_type) && n.inputs.size() == 2 && !n.attrs.has("broadcast") && !n.attrs.has("axis")) {
    ops = n.inputs;
  } else if (n.op_type == "gltensor.MulAdd" && n.inputs.size() == 3) {
    ops = n.inputs;
  } else {
    return {};
  }
  for (int v : ops)
    if (v < 0 || float_class(g.values[v].elem) != cls) return {};
  return ops;
}

// A group of nodes being fused: a tree whose root's output is the only value read outside it.
struct FuseGroup {
  std::vector<int> nodes;   // node indices, in graph order
  std::vector<int> inputs;  // the values it reads from outside (literals not counted)
};

class ExprBuilder {
 public:
  // f16_constants: float32 constants are float16 on the GPU (ModelOptions::f16_weights): literals
  // take the value the unfused op reads.
  ExprBuilder(const Graph& g, const std::vector<int>& members, bool f16_constants)
      : g_(g), members_(members.begin(), members.end()), f16_constants_(f16_constants) {}

  FusedExpr build(int root) {
    emit(root);
    return std::move(e_);
  }
  const std::vector<int>& inputs() const { return inputs_; }

 private:
  int step(FusedStep s) {
    s.round_f16 = f16_;
    return e_.add(s);
  }

  // The step holding value v: a member's result, a literal, or a tensor input.
  int value(int v) {
    if (auto it = steps_.find(v); it != steps_.end()) return it->second;
    int k = -1;
    const int p = g_.values[v].producer;
    if (p >= 0 && members_.count(p)) {
      k = emit(p);
    } else if (literal_input(g_, v)) {
      const HostTensor& c = *const_of(g_, v);
      e_.min_rank = std::max<int>(e_.min_rank, static_cast<int>(c.shape.size()));
      float x = static_cast<float>(c.v[0]);
      if (f16_constants_ && c.elem == kFloat) x = f16_to_f32(f32_to_f16(x));
      k = e_.add({FusedOp::constant, -1, -1, -1, x});
    } else {
      k = e_.add({FusedOp::input, static_cast<int>(inputs_.size())});
      inputs_.push_back(v);
      e_.inputs = static_cast<int>(inputs_.size());
    }
    steps_[v] = k;
    return k;
  }

  // Node i's steps (its operands first); returns the step of its output.
  int emit(int i) {
    const Node& n = g_.nodes[i];
    std::vector<int> a;
    for (int v : fusable_operands(g_, n)) a.push_back(value(v));
    f16_ = float_class(g_.values[n.outputs[0]].elem) == 2;
    const std::string& op = n.op_type;
    auto k = [&](double x) { return e_.add({FusedOp::constant, -1, -1, -1, static_cast<float>(x)}); };
    int r = -1;
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      const FusedOp f = op == "Add"   ? FusedOp::add
                        : op == "Sub" ? FusedOp::sub
                        : op == "Mul" ? FusedOp::mul
                                      : FusedOp::div;
      r = step({f, a[0], a[1]});
    } else if (op == "gltensor.MulAdd") {  // addcmul(b, x, s)
      r = step({FusedOp::muladd, a[2], a[0], a[1]});
    } else if (op == "LeakyRelu") {
      r = step({FusedOp::leaky_relu, a[0], -1, -1, static_cast<float>(n.attrs.f("alpha", 0.01))});
    } else if (op == "HardSigmoid") {  // apply_epilogue: clamp(x * alpha + beta, 0, 1), three ops
      const int m = step({FusedOp::mul, a[0], k(static_cast<float>(n.attrs.f("alpha", 0.2)))});
      const int s = step({FusedOp::add, m, k(static_cast<float>(n.attrs.f("beta", 0.5)))});
      r = step({FusedOp::clip, s, -1, -1, 0.0f, 1.0f});
    } else if (op == "Clip") {
      double lo = 0, hi = 0;
      clip_bounds(g_, n, lo, hi);
      r = step({FusedOp::clip, a[0], -1, -1, static_cast<float>(lo), static_cast<float>(hi)});
    } else {
      static const std::map<std::string, FusedOp> unary = {
          {"Relu", FusedOp::relu}, {"Sigmoid", FusedOp::sigmoid},     {"Tanh", FusedOp::tanh}, {"Neg", FusedOp::neg},
          {"Abs", FusedOp::abs},   {"HardSwish", FusedOp::hardswish}, {"Exp", FusedOp::exp},   {"Erf", FusedOp::erf}};
      r = step({unary.at(op), a[0]});
    }
    steps_[n.outputs[0]] = r;
    return r;
  }

  const Graph& g_;
  std::set<int> members_;
  FusedExpr e_;
  std::map<int, int> steps_;  // value id -> step
  std::vector<int> inputs_;
  bool f16_ = false;
  bool f16_constants_ = false;
};

// A Conv/ConvTranspose/Gemm/MatMul whose fused epilogue (fuse_epilogues) feeds an elementwise
// node gives the activation back to its node, which the chain then takes: the depthwise path
// and ConvTranspose apply epilogues as a dispatch of their own (one fewer), conv_direct and the
// matmul kernels in their epilogue (the same count, the same traffic). float32 only: with float16 the kernel's
// epilogue acts before the output's rounding, a separate node after it.
void release_epilogues(Graph& g, PlanStats& s) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& p = g.nodes[i];
    // (not with an affine after the activation: its nodes stay in the epilogue)
    if (p.removed || p.epilogue.act == Activation::none || p.epilogue.affine() || p.outputs.empty() ||
        p.outputs[0] < 0 || g.values[p.outputs[0]].elem != kFloat)
      continue;
    const int c = sole_consumer(g, p.outputs[0]);
    if (c < 0 || fusable_operands(g, g.nodes[c]).empty()) continue;
    // The activation node fuse_epilogues bypassed: removed, after p, writing p's output.
    for (std::size_t j = i + 1; j < static_cast<std::size_t>(c); ++j) {
      Node& n = g.nodes[j];
      if (!n.removed || n.outputs.size() != 1 || n.outputs[0] != p.outputs[0] || n.inputs.empty()) continue;
      n.removed = false;
      const int raw = n.inputs[0];
      p.outputs[0] = raw;
      g.recount();
      if (fusable_operands(g, n).empty()) {  // not one the chain takes: as it was
        n.removed = true;
        p.outputs[0] = n.outputs[0];
        g.recount();
        break;
      }
      p.epilogue = Epilogue();
      const std::size_t plus = p.fused.rfind('+');
      p.fused = plus == std::string::npos ? std::string() : p.fused.substr(0, plus);
      --s.epilogues;
      break;
    }
  }
}

}  // namespace

bool elementwise_fusable(const Graph& g, const Node& n) { return !fusable_operands(g, n).empty(); }

void fuse_elementwise(Graph& g, const Device& dev, bool f16_constants, PlanStats& s) {
  if (!detail::settings().fuse_elementwise) return;
  g.recount();
  release_epilogues(g, s);
  const int max_inputs = std::min(detail::kFusedMaxInputs, dev.caps().max_ssbo_bindings - 1);
  std::vector<int> group_of(g.nodes.size(), -1);  // node -> index in groups
  std::vector<FuseGroup> groups;
  auto is_input = [&](int v) { return !literal_input(g, v); };
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const std::vector<int> ops = fusable_operands(g, g.nodes[i]);
    if (ops.empty()) continue;
    FuseGroup grp{{static_cast<int>(i)}, {}};
    for (int v : ops)
      if (is_input(v) && std::find(grp.inputs.begin(), grp.inputs.end(), v) == grp.inputs.end())
        grp.inputs.push_back(v);
    // Merge the groups of producers whose output only this node reads (a tree: each merged
    // group's root output has no other reader), while the inputs stay within the limit.
    for (int v : std::vector<int>(grp.inputs)) {
      const int p = g.values[v].producer;
      if (p < 0 || group_of[p] < 0 || g.values[v].graph_output) continue;
      const int reads = static_cast<int>(std::count(ops.begin(), ops.end(), v));
      if (g.values[v].uses != reads) continue;
      FuseGroup& pg = groups[group_of[p]];
      std::vector<int> merged;
      for (int u : grp.inputs)
        if (u != v) merged.push_back(u);
      for (int u : pg.inputs)
        if (std::find(merged.begin(), merged.end(), u) == merged.end()) merged.push_back(u);
      if (static_cast<int>(merged.size()) > max_inputs) continue;
      grp.inputs = std::move(merged);
      grp.nodes.insert(grp.nodes.begin(), pg.nodes.begin(), pg.nodes.end());
      pg.nodes.clear();
    }
    if (static_cast<int>(grp.inputs.size()) > max_inputs) continue;
    std::sort(grp.nodes.begin(), grp.nodes.end());
    for (int n : grp.nodes) group_of[n] = static_cast<int>(groups.size());
    groups.push_back(std::move(grp));
  }
  for (FuseGroup& grp : groups) {
    if (grp.nodes.size() < 2) continue;
    const int root = grp.nodes.back();
    ExprBuilder b(g, grp.nodes, f16_constants);
    auto expr = std::make_shared<FusedExpr>(b.build(root));
    Node& r = g.nodes[root];
    std::string what;
    for (int n : grp.nodes) {
      what += (what.empty() ? "" : "+") + g.nodes[n].op_type;
      if (n != root) g.nodes[n].removed = true;
    }
    r.op_type = "gltensor.FusedElementwise";
    r.domain.clear();
    r.inputs = b.inputs();
    r.attrs = Attrs();
    r.fused = what;
    r.fused_glsl = std::make_shared<const std::string>(detail::render_fused_glsl(*expr));
    r.fused_expr = std::move(expr);
    ++s.elementwise_groups;
    s.elementwise_nodes += static_cast<int>(grp.nodes.size());
  }
  g.recount();
}

namespace {

// The DequantizeLinear producing value v, or null.
Node* dq_producer(Graph& g, int v) {
  if (v < 0 || g.values[v].producer < 0) return nullptr;
  Node& d = g.nodes[g.values[v].producer];
  return !d.removed && d.op_type == "DequantizeLinear" && !d.inputs.empty() ? &d : nullptr;
}

// 8-bit on the GPU: uint8, int8, and uint4 / int4 (carried widened).
bool is_8bit(int elem) { return elem == kUint8 || elem == kInt8 || elem == kUint4 || elem == kInt4; }

// A DequantizeLinear of a constant 8-bit tensor with constant parameters, not blocked.
bool constant_q8(const Graph& g, const Node& d) {
  if (!const_of(g, d.inputs[0]) || !is_8bit(g.values[d.inputs[0]].elem)) return false;
  if (d.inputs.size() < 2 || !const_of(g, d.inputs[1]) || d.attrs.i("block_size", 0) != 0) return false;
  return d.inputs.size() < 3 || d.inputs[2] < 0 || const_of(g, d.inputs[2]);
}

// Per tensor: one scale and zero point (constants or not), 8-bit input, float32 scale.
bool per_tensor_q8(const Graph& g, const Node& d) {
  if (!is_8bit(g.values[d.inputs[0]].elem) || d.inputs.size() < 2 || d.attrs.i("block_size", 0) != 0) return false;
  const HostTensor* s = const_of(g, d.inputs[1]);
  const HostTensor* z = d.inputs.size() > 2 ? const_of(g, d.inputs[2]) : nullptr;
  const bool z_ok = d.inputs.size() < 3 || d.inputs[2] < 0 || (z && z->numel() == 1);
  return s && s->numel() == 1 && s->elem == kFloat && z_ok;
}

// The weight's parameters are one value or one per `channels` along `axis` of a rank-`rank` weight.
bool weight_params_fit(const Graph& g, const Node& d, std::int64_t axis, std::int64_t channels, std::size_t rank) {
  const HostTensor* s = const_of(g, d.inputs[1]);
  if (s->elem != kFloat) return false;
  if (s->numel() == 1) return true;
  std::int64_t a = d.attrs.i("axis", 1);
  if (a < 0) a += static_cast<std::int64_t>(rank);
  return a == axis && s->shape.size() == 1 && s->numel() == channels;
}

// A QConv's optional Relu or Clip (constant bounds) and per-tensor QuantizeLinear to uint8 / int8
// with constant parameters: the QConv writes the 8-bit output itself (inputs 7, 8: y_scale,
// y_zero_point; the activation in Node::epilogue).
void fuse_requant(Graph& g, Node& p) {
  int c = sole_consumer(g, p.outputs[0]);
  if (c < 0) return;
  Node* act = &g.nodes[c];
  Epilogue e;
  if (act->op_type == "Relu" || act->op_type == "Clip") {
    if (act->inputs.empty() || act->inputs[0] != p.outputs[0]) return;
    if (act->op_type == "Relu")
      e = Epilogue(Activation::relu);
    else if (!constant_clip(g, *act, e))
      return;
    c = sole_consumer(g, act->outputs[0]);
    if (c < 0) return;
  } else {
    act = nullptr;
  }
  Node& q = g.nodes[c];
  if (q.op_type != "QuantizeLinear" || q.inputs.size() < 2 || q.inputs[0] != (act ? act->outputs[0] : p.outputs[0]))
    return;
  const int out = g.values[q.outputs[0]].elem, zi = q.inputs.size() > 2 ? q.inputs[2] : -1;
  const HostTensor *scale = const_of(g, q.inputs[1]), *zp = const_of(g, zi);
  if ((out != kUint8 && out != kInt8) || !scale || scale->numel() != 1 || scale->elem != kFloat ||
      (zi >= 0 && (!zp || zp->numel() != 1)) || q.attrs.i("block_size", 0) != 0)
    return;  // (uint4 / int4: their own range)
  p.inputs.push_back(q.inputs[1]);
  p.inputs.push_back(zi);
  p.epilogue = e;
  if (act) bypass(g, p, *act, act->op_type);
  bypass(g, p, q, "QuantizeLinear");
}

// The same one-element constant (or both absent: -1).
bool same_param(const Graph& g, int a, int b) {
  if (a == b) return true;
  const HostTensor *x = const_of(g, a), *y = const_of(g, b);
  return x && y && x->numel() == 1 && y->numel() == 1 && x->elem == y->elem && x->shape == y->shape && x->v == y->v;
}

// A requantizing QConv (fuse_requant) whose 8-bit output only a DequantizeLinear of the same
// scale and zero point reads (float32 output; run after the QConvs took their inputs' 8-bit
// values, so that a DequantizeLinear feeding the next QConv is gone): the QConv writes that float32 value itself
// (float(q - zero_point) * scale of its 8-bit q, bit for bit the two nodes'), the 8-bit type
// kept in the attribute dequantize_output.
bool fuse_dequant_out(Graph& g, Node& p) {
  if (!detail::settings().fuse_qdq_output || p.inputs.size() < 9) return false;
  const int c = sole_consumer(g, p.outputs[0]);
  if (c < 0) return false;
  Node& d = g.nodes[c];
  if (d.op_type != "DequantizeLinear" || d.inputs.size() < 2 || d.inputs[0] != p.outputs[0] ||
      d.attrs.i("block_size", 0) != 0 || g.values[d.outputs[0]].elem != kFloat)
    return false;
  const int dz = d.inputs.size() > 2 ? d.inputs[2] : -1;
  if (!same_param(g, d.inputs[1], p.inputs[7]) || !same_param(g, dz, p.inputs[8])) return false;
  Attr out;
  out.type = Attr::kInt;
  out.i = g.values[p.outputs[0]].elem;
  p.attrs.set("dequantize_output", out);
  bypass(g, p, d, "DequantizeLinear");
  return true;
}

// On by default (GLTENSOR_FUSE_QDQ_INPUT=0: off; Settings::fuse_qdq_input). Where the QDQ warp path
// takes the conv (the GPUs' large layers, and the K-split ones), integer_conv leaves the
// quantization to a QuantizeLinear op first: the fused load (four float32 reads and divisions per
// word of every K tile) had cost the wide QDQ net at 112x112 about 5% on the H100 (bench/RESULTS.md,
// int8n), and later kept its first conv off the warp path (int8aa). Since (int8ab, H100): the wide
// net at 112x112 and 56x56 unchanged (0.997-0.999 against 0.995-0.998 ms; 0.458-0.459 against
// 0.458-0.459), the narrow net 0.137 against 0.145 at 56x56 and 0.238 against 0.246-0.247 at 112x112.
// A QConv whose 8-bit input only a per-tensor QuantizeLinear of x_scale and x_zero_point (the
// same constants; the zero point present) writes, from float32: the QConv reads that float input
// and quantizes it as it loads it (attribute quantize_input: the 8-bit type), bit for bit the
// QuantizeLinear's values; the QuantizeLinear node is gone (one dispatch fewer).
bool fuse_quant_in(Graph& g, Node& p) {
  if (!detail::settings().fuse_qdq_input || p.inputs.size() < 7 || p.inputs[0] < 0 || p.inputs[2] < 0) return false;
  const int v = p.inputs[0], pi = g.values[v].producer;
  if (pi < 0 || g.values[v].uses != 1 || g.values[v].graph_output) return false;
  Node& q = g.nodes[pi];
  if (q.removed || q.op_type != "QuantizeLinear" || q.inputs.size() < 3 || q.attrs.i("block_size", 0) != 0 ||
      q.attrs.has("saturate"))
    return false;
  const int out = g.values[v].elem;
  if ((out != kUint8 && out != kInt8) || g.values[q.inputs[0]].elem != kFloat) return false;
  if (!same_param(g, q.inputs[1], p.inputs[1]) || !same_param(g, q.inputs[2], p.inputs[2]) || !const_of(g, p.inputs[1]))
    return false;
  Attr t;
  t.type = Attr::kInt;
  t.i = out;
  p.attrs.set("quantize_input", t);
  p.inputs[0] = q.inputs[0];
  q.removed = true;
  p.fused = "QuantizeLinear+" + p.fused;
  g.recount();
  return true;
}

}  // namespace

void fuse_qdq(Graph& g, PlanStats& s) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& p = g.nodes[i];
    if (p.removed) continue;
    const bool conv = p.op_type == "Conv", matmul = p.op_type == "MatMul";
    if (!conv && !matmul && p.op_type != "ConvTranspose" && p.op_type != "Gemm") continue;
    if (p.inputs.size() < 2) continue;
    Node* dw = dq_producer(g, p.inputs[1]);
    if (!dw || !constant_q8(g, *dw)) continue;
    const HostTensor& w = *const_of(g, dw->inputs[0]);
    Node* dx = dq_producer(g, p.inputs[0]);
    const bool integer = dx && per_tensor_q8(g, *dx) &&
                         ((conv && (w.shape.size() == 3 || w.shape.size() == 4) &&
                           weight_params_fit(g, *dw, 0, w.shape[0], w.shape.size())) ||
                          (matmul && w.shape.size() == 2 && weight_params_fit(g, *dw, 1, w.shape[1], 2)));
    if (integer) {
      const auto param = [](const Node& d, std::size_t k) { return k < d.inputs.size() ? d.inputs[k] : -1; };
      const int bias = conv && p.inputs.size() > 2 ? p.inputs[2] : -1;
      // A weight zero point of zeros (quantize_static's symmetric int8 weights) is no zero point:
      // the integer kernels then read none (the QConv's warp path: no per-row loads in its A loads).
      int wz = param(*dw, 2);
      if (const HostTensor* z = const_of(g, wz);
          z && std::all_of(z->v.begin(), z->v.end(), [](double d) { return d == 0; }))
        wz = -1;
      p.inputs = {dx->inputs[0], param(*dx, 1), param(*dx, 2), dw->inputs[0], param(*dw, 1), wz, bias};
      p.op_type = conv ? "gltensor.QConv" : "gltensor.QMatMul";
      p.fused += std::string(p.fused.empty() ? "" : "+") + "DequantizeLinear x2";
      ++s.qdq_integer;
      if (conv) fuse_requant(g, p);
    } else if (g.values[dw->outputs[0]].uses == 1) {
      dw->op_type = "gltensor.DequantizeWeight";
      ++s.qdq_weights;
    }
    g.recount();
  }
  // DequantizeLinear nodes that nothing reads any more: gone before fold_constants folds them.
  for (auto& n : g.nodes)
    if (!n.removed && n.op_type == "DequantizeLinear" && !g.values[n.outputs[0]].graph_output &&
        g.values[n.outputs[0]].uses == 0)
      n.removed = true;
  g.recount();
  // Then the requantizing QConvs whose 8-bit output only a DequantizeLinear reads (not a next
  // QConv: its DequantizeLinear is gone by now).
  for (auto& n : g.nodes)
    if (!n.removed && n.op_type == "gltensor.QConv") s.qdq_dequant_out += fuse_dequant_out(g, n);
  // And a QConv's input QuantizeLinear (the model's first conv).
  for (auto& n : g.nodes)
    if (!n.removed && n.op_type == "gltensor.QConv") s.qdq_quant_in += fuse_quant_in(g, n);
}

void remove_dead(Graph& g, PlanStats& s) {
  bool changed = true;
  while (changed) {
    changed = false;
    g.recount();
    for (auto& n : g.nodes) {
      if (n.removed) continue;
      bool used = false;
      for (int o : n.outputs) used = used || (o >= 0 && (g.values[o].uses > 0 || g.values[o].graph_output));
      if (!used) {
        n.removed = true;
        ++s.dead;
        changed = true;
      }
    }
  }
  g.recount();
}

}  // namespace gltensor::model
