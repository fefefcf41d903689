// scaled_dot_product_attention: a fused kernel (glsl/attention.comp) without masks or gradients,
// otherwise matmul -> mask -> softmax -> matmul (differentiable by composition).
#include <cmath>
#include <cstdlib>
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/attention_plan.hpp"
#include "ops/batched.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
// The fused kernel applies with no mask, no gradient to record, floating dtypes, head dims
// <= 64 and non-empty L and S (and where one of its tilings fits the device's shared memory).
// GLTENSOR_ATTENTION=composite forces the composite path.
bool fused_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  if (settings().attention_composite) return false;
  if (mask.defined() || autograd::any_requires_grad({&q, &k, &v})) return false;
  for (const Tensor* t : {&q, &k, &v})
    if (!is_floating(t->dtype())) return false;
  return q.size(-1) <= 64 && v.size(-1) <= 64 && q.size(-2) > 0 && k.size(-2) > 0;
}

// Uniforms of glsl/nn/attention.comp.
struct AttentionParams {
  std::int64_t L, S, E, Ev;
  const BatchLayout& bl;
  const Tensor &q, &k, &v;  // expanded to the batch
  double scale;
  bool causal;
  void set(Uniforms& u) const {
    u.u32("u_L", L);
    u.u32("u_S", S);
    u.u32("u_E", E);
    u.u32("u_Ev", Ev);
    u.u32s("u_bshape", bl.shape);
    u.u32s("u_bstride_q", bl.strides[0]);
    u.u32s("u_bstride_k", bl.strides[1]);
    u.u32s("u_bstride_v", bl.strides[2]);
    u.u32("u_q_off", q.offset());
    u.u32("u_k_off", k.offset());
    u.u32("u_v_off", v.offset());
    u.u32("u_q_sl", q.strides()[q.dim() - 2]);
    u.u32("u_q_se", q.strides()[q.dim() - 1]);
    u.u32("u_k_ss", k.strides()[k.dim() - 2]);
    u.u32("u_k_se", k.strides()[k.dim() - 1]);
    u.u32("u_v_ss", v.strides()[v.dim() - 2]);
    u.u32("u_v_se", v.strides()[v.dim() - 1]);
    u.f32("u_scale", scale * 1.4426950408889634);
    u.i32("u_causal", causal ? 1 : 0);
  }
};

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const AttentionTiles& t) {
  const char* op = "scaled_dot_product_attention";
  DeviceImpl& dev = dev_of(q);
  Launch launch(dev, op);
  const std::int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1), Ev = v.size(-1);
  const Shape batch = broadcast_shapes(op, broadcast_shapes(op, batch_dims(q), batch_dims(k)), batch_dims(v));
  const Tensor eq = expand_batch(q, batch), ek = expand_batch(k, batch), ev = expand_batch(v, batch);
  Shape out_shape = batch;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  const DType od = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
  Tensor out = alloc(dev, out_shape, od, op);
  if (out.numel() == 0) return out;
  const BatchLayout bl = collapse_batch(batch, {&eq, &ek, &ev});
  const std::size_t bd = bl.shape.size();
  const std::int64_t bq = t.bq;
  // f32 k and v contiguous along the head dim, rows and batches on 4-element boundaries: quads.
  auto quads = [](const Tensor& t) { return t.dtype() == DType::f32 && quad_aligned(t, t.dim() - 1); };
  // (7 bindings with all three; GLES 3.1 guarantees 4, so the quads go where the device has fewer.)
  const bool quad_bindings = dev.caps.max_ssbo_bindings >= 7;
  const bool kv_quads = quad_bindings && quads(ek) && quads(ev) && E % 4 == 0 && Ev % 4 == 0;
  const bool q_quads = quad_bindings && quads(eq) && E % 4 == 0;
  std::string h = "#define BD " + std::to_string(bd) + "\n#define BQ " + std::to_string(bq) + "u\n#define KQ " +
                  std::to_string(t.kq) + "\n" + operand_glsl(0, od, CT::f32, true) +
                  operand_glsl(1, q.dtype(), CT::f32, false) + operand_glsl(2, k.dtype(), CT::f32, false) +
                  operand_glsl(3, v.dtype(), CT::f32, false);
  if (t.subgroup)
    h = "#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_shuffle : require\n"
        "#define SUBGROUP 1\n" +
        h;
  // Quad views of q, k, v take the bindings after the four operands, in that order.
  launch.write(out).read(q).read(k).read(v);
  int binding = 4;
  auto quad_view = [&](const char* name, const Tensor& x) {
    h += "layout(std430, binding = " + std::to_string(binding++) + ") readonly buffer Quads_" + name + " { vec4 " +
         name + "[]; };\n";
    launch.read(x);
  };
  if (q_quads) {
    h += "#define Q_QUADS 1\n";
    quad_view("qQ", q);
  }
  if (kv_quads) {
    h += "#define KV_QUADS 1\n";
    quad_view("qK", k);
    quad_view("qV", v);
  }
  launch.program("attention.comp", h, {static_cast<std::uint32_t>(bq * 2)});
  launch.params(AttentionParams{L, S, E, Ev, bl, eq, ek, ev, scale, causal})
      .loop_iterations(attention_loops(t, S, bd))
      .groups(static_cast<std::uint64_t>((L + bq - 1) / bq), static_cast<std::uint64_t>(numel_of(batch)));
  return out;
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                                    double scale) {
  const char* op = "scaled_dot_product_attention";
  check_same_device(op, {&q, &k, &v});
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2 || q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
    throw ShapeError("gltensor::scaled_dot_product_attention: q " + to_string(q.shape()) + ", k " +
                     to_string(k.shape()) + ", v " + to_string(v.shape()) +
                     " do not fit q [..., L, E], k [..., S, E], v [..., S, Ev]");
  const double sc = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  if (fused_applies(q, k, v, mask)) {
    const DeviceImpl& dev = dev_of(q);
    const AttentionDevice ad{dev.subgroup_features(GL_SUBGROUP_FEATURE_SHUFFLE_BIT_KHR), dev.caps.subgroup_size,
                             dev.caps.max_shared_memory};
    const AttentionTiles t = plan_attention_tiles(ad, settings());
    const std::uint64_t limit = dev_of(q).loop_limit();
    if (t.bq > 0 && (limit == 0 || attention_loops(t, k.size(-2), q.dim()) <= limit))
      return fused_attention(q, k, v, causal, sc, t);
  }
  Tensor s = matmul_fused(q, k.transpose(-1, -2), Tensor(), sc, 0, Epilogue());  // [..., L, S]
  const std::int64_t L = q.size(-2), S = k.size(-2);
  if (causal) s = where(tril(ones(q.device(), {L, S}, DType::bool_)), s, -INFINITY);
  if (mask.defined()) s = mask.dtype() == DType::bool_ ? where(mask, s, -INFINITY) : add(s, mask);
  return matmul(softmax(s, -1), v);
}

}  // namespace gltensor
