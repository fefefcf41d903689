// The planner's fuse_mlp (planner.hpp): chains of MatMul / Gemm layers -> gltensor.FusedMlp, the
// fully fused MLP of nn/fused_mlp.hpp (one dispatch for the chain).
#include <algorithm>

#include "model/planner.hpp"
#include "nn/fused_mlp.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

namespace {

using detail::FusedMlp;
using detail::MlpLayer;

// A layer the fused kernel takes: float32 in and out, a constant 2-D float32 weight, a constant
// bias per output column (or none), Gemm without transA; its parameters in `l` (offsets unset)
// and W as [K, N] in `w` (Gemm's transB undone), the bias (N values, zeros for none) in `b`.
bool layer_of(const Graph& g, const Node& n, MlpLayer& l, std::vector<double>& w, std::vector<double>& b) {
  const bool gemm = n.op_type == "Gemm";
  if (n.removed || (!gemm && n.op_type != "MatMul") || !n.domain.empty() || !n.implicit.empty()) return false;
  if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  if (n.inputs[0] < 0 || g.values[n.inputs[0]].elem != kFloat || g.values[n.outputs[0]].elem != kFloat) return false;
  const HostTensor* wt = const_of(g, n.inputs[1]);
  if (!wt || wt->elem != kFloat || wt->shape.size() != 2) return false;
  const bool trans_b = gemm && n.attrs.i("transB", 0) != 0;
  if (gemm && n.attrs.i("transA", 0) != 0) return false;
  l.K = wt->shape[trans_b ? 1 : 0], l.N = wt->shape[trans_b ? 0 : 1];
  if (l.K < 1 || l.N < 1) return false;
  l.act = n.epilogue;
  l.alpha = gemm ? n.attrs.f("alpha", 1.0) : 1.0;
  l.beta = gemm ? n.attrs.f("beta", 1.0) : 1.0;
  w.resize(static_cast<std::size_t>(l.K * l.N));
  for (std::int64_t k = 0; k < l.K; ++k)
    for (std::int64_t j = 0; j < l.N; ++j)
      w[static_cast<std::size_t>(k * l.N + j)] =
          trans_b ? wt->v[static_cast<std::size_t>(j * l.K + k)] : wt->v[static_cast<std::size_t>(k * l.N + j)];
  b.assign(static_cast<std::size_t>(l.N), 0.0);
  if (n.inputs.size() == 3 && n.inputs[2] >= 0) {
    // MatMul: fold_affine's [N] bias; Gemm: C of shape [N], [1, N], [1] or [] (broadcast by rows)
    const HostTensor* c = const_of(g, n.inputs[2]);
    if (!c || c->elem != kFloat || c->shape.size() > 2) return false;
    const std::int64_t last = c->shape.empty() ? 1 : c->shape.back();
    if ((last != 1 && last != l.N) || (c->shape.size() == 2 && c->shape[0] != 1) || (!gemm && c->shape.size() != 1))
      return false;
    for (std::int64_t j = 0; j < l.N; ++j) b[static_cast<std::size_t>(j)] = c->v[last == 1 ? 0 : j];
  }
  return true;
}

}  // namespace

void fuse_mlp(Graph& g, const Device& dev, PlanStats& s) {
  const detail::FusedMlpDevice fd = detail::fused_mlp_device(dev);
  // by default on GPUs only: llvmpipe runs the three-Gemm model's matmul kernels 0.26 ms, the
  // fused kernel 6 ms (bench/RESULTS.md)
  const int on = detail::settings().fused_mlp;
  if (on == 0 || (on < 0 && fd.software)) return;
  g.recount();
  const detail::FusedMlpChoice choice{detail::settings().fused_mlp_rows, detail::settings().fused_mlp_split};
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    // Not by default over an STFT's frames (fuse_stft_power's gltensor.Frames times the DFT matrix):
    // on the H200 logmel_16k's chain in the fused kernel (4 rows a workgroup) ran 0.084-0.169 ms
    // replayed against the two matmul kernels' 0.050-0.056 (bench/RESULTS.md, mel36).
    if (on < 0 && !g.nodes[i].removed && !g.nodes[i].inputs.empty() && g.nodes[i].inputs[0] >= 0) {
      const int pr = g.values[g.nodes[i].inputs[0]].producer;
      if (pr >= 0 && g.nodes[static_cast<std::size_t>(pr)].op_type == "gltensor.Frames") continue;
    }
    FusedMlp mlp;
    std::vector<int> chain;
    std::vector<double> packed, w, b;
    MlpLayer l;
    for (int n = static_cast<int>(i); n >= 0 && chain.size() < detail::kFusedMlpMaxLayers;) {
      const Node& node = g.nodes[static_cast<std::size_t>(n)];
      if (!layer_of(g, node, l, w, b) ||
          (!chain.empty() && (node.inputs[0] != g.nodes[chain.back()].outputs[0] || l.K != mlp.layers.back().N)))
        break;
      MlpLayer& added = mlp.add(l.K, l.N);
      added.act = l.act, added.alpha = l.alpha, added.beta = l.beta;
      packed.insert(packed.end(), w.begin(), w.end());
      packed.insert(packed.end(), b.begin(), b.end());
      chain.push_back(n);
      n = sole_consumer(g, node.outputs[0]);
    }
    // The longest prefix the kernel takes on this device (loop budget), two layers at least.
    while (chain.size() >= 2 && !detail::plan_fused_mlp(mlp, fd, choice).ok) {
      chain.pop_back();
      mlp.layers.pop_back();
    }
    if (chain.size() < 2) continue;
    packed.resize(static_cast<std::size_t>(mlp.numel()));
    mlp.gemm_input = g.nodes[chain[0]].op_type == "Gemm";
    Node& first = g.nodes[chain[0]];
    const int out = g.nodes[chain.back()].outputs[0];
    std::string what;
    for (int n : chain) {
      what += (what.empty() ? "" : "+") + g.nodes[n].op_type + (g.nodes[n].fused.empty() ? "" : "+" + g.nodes[n].fused);
      if (n != chain[0]) g.nodes[n].removed = true;
    }
    const int params = new_constant(g, first.name + "/mlp_params",
                                    HostTensor{kFloat, {static_cast<std::int64_t>(packed.size())}, std::move(packed)});
    first.op_type = "gltensor.FusedMlp";
    first.inputs = {first.inputs[0], params};
    first.outputs = {out};
    first.attrs = Attrs();
    first.epilogue = Epilogue();
    first.fused = what;
    first.mlp = std::make_shared<const FusedMlp>(std::move(mlp));
    ++s.mlp_chains;
    s.mlp_layers += static_cast<int>(chain.size());
    g.recount();
  }
}

}  // namespace gltensor::model
