// The planner's internal ops (domain "gltensor"), never read from a file:
//   MulAdd(x, s, b) = x * s + b in one elementwise op (addcmul), for Mul -> Add chains with
//   constant s and b.
//   FusedElementwise(x0, ..., xn) = the node's FusedExpr over its inputs (fuse_elementwise), one
//   generated kernel (ops/fused_elementwise.hpp); float16 where the fused nodes' output was.
//   FusedMlp(x, params) = the node's chain of dense layers (fuse_mlp) over its packed parameters,
//   one dispatch (nn/fused_mlp.hpp).
//   LayerNorm(x, gamma[, beta]; epsilon) = the nodes fuse_layernorm replaced: layer_norm over the
//   last dim (one dispatch) where gamma has its width, else those nodes' broadcast as ops.
//   Attention(q, k, v; scale, axis) = softmax(q k^T * scale) v (fuse_attention): the fused kernels
//   of scaled_dot_product_attention where q, k, v are [B, H, T, E] with the same B and H, else the
//   nodes' matmuls and softmax (their broadcasting; the Softmax's axis where it is not the scores'
//   last, q of rank 5 or more).
//   SqueezeExcite(x, w1, b1, w2, b2; activations, activation_params) = x * act2(conv(act1(conv(
//   GlobalAveragePool(x), w1, b1)), w2, b2)) (fuse_se, 1x1 convs): one dispatch of
//   squeeze_excite where an image's planes fit its plan (nn/squeeze_excite.hpp), else the nodes'
//   ops (mean, two conv2d with their epilogues, mul).
#include <algorithm>

#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "model/ops.hpp"
#include "nn/fused_mlp.hpp"
#include "nn/norm.hpp"
#include "nn/squeeze_excite.hpp"
#include "ops/fused_elementwise.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

void register_fused_ops(Registry& m) {
  m["gltensor.MulAdd"] = OpDef{{}, nullptr, nullptr, [](Args& a) {
                                 const Tensor& x = a.t(0);
                                 Tensor r = addcmul(a.t(2), x, a.t(1));
                                 return Ts{r.dtype() == x.dtype() ? r : r.to(x.dtype())};
                               }};
  m["gltensor.FusedElementwise"] =
      OpDef{{}, nullptr, nullptr, [](Args& a) {
              Ts in;
              for (std::size_t i = 0; i < a.size(); ++i) in.push_back(a.t(i));
              const int elem = a.g.values[a.node.outputs[0]].elem;
              return Ts{detail::fused_elementwise("FusedElementwise", *a.node.fused_expr, *a.node.fused_glsl, in,
                                                  elem == kFloat16 ? DType::f16 : DType::f32)};
            }};
  m["gltensor.FusedMlp"] = OpDef{
      {}, nullptr, nullptr, [](Args& a) {
        const Tensor& x = a.t(0);
        const detail::FusedMlp& mlp = *a.node.mlp;
        if (mlp.gemm_input && x.dim() != 2)  // as the Gemm mapping
          a.fail("Gemm expects 2-D A and B, got " + to_string(x.shape()) + " and [" + std::to_string(mlp.layers[0].K) +
                 ", " + std::to_string(mlp.layers[0].N) + "]");
        const detail::Settings& st = detail::settings();
        // The model's output (issue 21's three-Gemm model): written where to_vector reads it
        // (host memory, no copy before the read) where it is small, as a replay's outputs.
        const std::int64_t K = mlp.layers.front().K, N = mlp.layers.back().N;
        const bool host_out = K > 0 && a.host_output(0, x.numel() / K * N * 4);
        return Ts{detail::fused_mlp("FusedMlp", x, a.t(1), mlp, {st.fused_mlp_rows, st.fused_mlp_split}, host_out)};
      }};
  m["gltensor.LayerNorm"] =
      OpDef{{"epsilon"}, nullptr, nullptr, [](Args& a) {
              const Tensor &x = a.t(0), &gamma = a.t(1);
              const Tensor beta = a.opt(2);
              const double eps = a.attrs.f("epsilon", 1e-5);
              if (x.dim() >= 1 && x.size(-1) == gamma.numel())
                return Ts{detail::layer_norm_out(x, 1, gamma, beta, eps, a.host_output(0, x.numel() * 4))};
              // [.., 1] against a wider gamma: the written-out nodes' broadcast
              const Tensor d = sub(x, mean(x, {-1}, true));
              Tensor y = mul(div(d, sqrt(add(mean(mul(d, d), {-1}, true), eps))), gamma);
              return Ts{beta.defined() ? add(y, beta) : y};
            }};
  m["gltensor.SqueezeExcite"] =
      OpDef{{"activations", "activation_params"}, nullptr, nullptr, [](Args& a) {
              const Tensor &x = a.t(0), &w1 = a.t(1), &b1 = a.t(2), &w2 = a.t(3), &b2 = a.t(4);
              const std::vector<std::int64_t> acts = a.attrs.ints("activations");
              const std::vector<double> p = a.attrs.floats("activation_params");
              if (acts.size() != 2 || p.size() != 4)
                a.fail("activations / activation_params of 2 and 4 values expected");
              const Epilogue e1(static_cast<Activation>(acts[0]), p[0], p[1]),
                  e2(static_cast<Activation>(acts[1]), p[2], p[3]);
              if (x.dim() == 4 && x.dtype() == DType::f32 && w1.dim() == 4) {
                const std::int64_t hw = x.size(2) * x.size(3);
                const bool empty = x.size(0) == 0 || hw == 0;
                if (empty || detail::plan_squeeze_excite(x, w1.size(0)).ok)
                  return Ts{detail::squeeze_excite("SqueezeExcite", x, w1, b1, e1, w2, b2, e2)};
              }
              // planes too large for one workgroup an image: the nodes' ops
              const Tensor h = conv2d(mean(x, {2, 3}, true), w1, b1, {}, e1);
              return Ts{mul(x, conv2d(h, w2, b2, {}, e2))};
            }};
  m["gltensor.Attention"] = OpDef{{"scale", "axis"}, nullptr, nullptr, [](Args& a) {
                                    const Tensor &q = a.t(0), &k = a.t(1), &v = a.t(2);
                                    const double scale = a.attrs.f("scale", 1.0);
                                    // The Softmax's axis not the scores' last (q of rank 5 or
                                    // more, axis 3): the nodes' softmax over it (opset 13), or
                                    // over the dims from it coerced to one (before).
                                    const std::int64_t axis = a.attrs.i("axis", -1);
                                    const std::int64_t rank = std::max<std::int64_t>(q.dim(), k.dim());
                                    if (axis >= 0 && axis != rank - 1) {
                                      const Tensor s = matmul(mul(q, scale), k.transpose(2, 3));
                                      if (s.numel() == 0) return Ts{matmul(s, v)};  // (no rows to normalize)
                                      if (a.opset >= 13) return Ts{matmul(softmax(s, axis), v)};
                                      std::int64_t rows = 1;
                                      for (std::int64_t d = 0; d < axis; ++d) rows *= s.size(d);
                                      const Tensor p = softmax(s.reshape({rows, s.numel() / rows}), 1);
                                      return Ts{matmul(p.reshape(s.shape()), v)};
                                    }
                                    const bool same = q.dim() == 4 && k.dim() == 4 && v.dim() == 4 &&
                                                      q.size(0) == k.size(0) && q.size(0) == v.size(0) &&
                                                      q.size(1) == k.size(1) && q.size(1) == v.size(1) &&
                                                      q.size(3) == k.size(3) && k.size(2) == v.size(2);
                                    if (same) return Ts{scaled_dot_product_attention(q, k, v, Tensor(), false, scale)};
                                    return Ts{matmul(softmax(matmul(mul(q, scale), k.transpose(2, 3)), -1), v)};
                                  }};
}

}  // namespace gltensor::model
