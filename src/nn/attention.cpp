// scaled_dot_product_attention: a fused kernel (glsl/attention.comp) without masks or gradients,
// otherwise matmul -> mask -> softmax -> matmul (differentiable by composition).
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

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
  std::int64_t kchunk;  // split-KV: keys per chunk (0: none)
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
    if (kchunk > 0) u.u32("u_kchunk", kchunk);
  }
};

// Combines split-KV partials P [chunks, nb, L, Ev + 2] (o, m, l per row; attention.comp) into
// [nb, L, Ev]: with M the rows' largest m, out = sum(o exp2(m - M)) / sum(l exp2(m - M)); chunks
// with no key for a row (m = -Inf, o = l = 0) weigh 0, NaN propagates.
Tensor combine_chunks(const Tensor& P, std::int64_t Ev) {
  NoGradGuard ng;
  const Tensor o = P.narrow(-1, 0, Ev), m = P.narrow(-1, Ev, 1), l = P.narrow(-1, Ev + 1, 1);
  const Tensor w = exp2(sub(m, amax(m, {0}, true)));
  return div(sum(mul(o, w), {0}), sum(mul(l, w), {0}));
}

// kchunk > 0: split-KV, the keys in chunks of kchunk (a multiple of the tiling's BKV) computed by
// separate workgroups, then combined (for key sequences longer than one invocation may loop
// over).
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const AttentionTiles& t, std::int64_t kchunk) {
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
  const std::int64_t chunks = kchunk > 0 ? (S + kchunk - 1) / kchunk : 1, nb = numel_of(batch);
  if (numel_of(out_shape) == 0) return alloc(dev, out_shape, od, op);
  Tensor out = kchunk > 0 ? alloc(dev, {chunks, nb, L, Ev + 2}, DType::f32, op) : alloc(dev, out_shape, od, op);
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
                  std::to_string(t.kq) + "\n" + (kchunk > 0 ? "#define SPLIT_KV 1\n" : "") +
                  operand_glsl(0, out.dtype(), CT::f32, true) + operand_glsl(1, q.dtype(), CT::f32, false) +
                  operand_glsl(2, k.dtype(), CT::f32, false) + operand_glsl(3, v.dtype(), CT::f32, false);
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
  launch.params(AttentionParams{L, S, E, Ev, bl, eq, ek, ev, scale, causal, kchunk})
      .loop_iterations(attention_loops(t, kchunk > 0 ? kchunk : S, bd))
      .groups(static_cast<std::uint64_t>((L + bq - 1) / bq), static_cast<std::uint64_t>(nb),
              static_cast<std::uint64_t>(chunks));
  if (kchunk == 0) return out;
  return combine_chunks(out, Ev).reshape(out_shape).to(od);
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
    const std::int64_t S = k.size(-2), bkv = 32 * t.kq;
    if (t.bq > 0 && (limit == 0 || attention_loops(t, S, q.dim()) <= limit))
      return fused_attention(q, k, v, causal, sc, t, 0);
    // Keys past what one invocation may loop over: split-KV, chunks of the most key tiles that fit.
    if (t.bq > 0 && attention_loops(t, bkv, q.dim()) <= limit) {
      std::int64_t lo = 1, hi = (S + bkv - 1) / bkv;  // tiles per chunk: lo fits, hi does not
      while (hi - lo > 1) {
        const std::int64_t mid = (lo + hi) / 2;
        (attention_loops(t, mid * bkv, q.dim()) <= limit ? lo : hi) = mid;
      }
      // The chunks' partials [chunks, batch, L, Ev + 2] past the device's max SSBO block: blocks
      // of query rows (without a causal mask, which the kernel aligns on the first row; with
      // one, the composite path below splits its scores instead).
      const Shape batch = broadcast_shapes(op, broadcast_shapes(op, batch_dims(q), batch_dims(k)), batch_dims(v));
      const std::int64_t L = q.size(-2), chunks = (S + lo * bkv - 1) / (lo * bkv);
      const std::int64_t row_bytes = chunks * numel_of(batch) * (v.size(-1) + 2) * 4;
      const std::int64_t per = dev.ssbo_limit() / std::max<std::int64_t>(row_bytes, 1);
      if (L <= per) return fused_attention(q, k, v, causal, sc, t, lo * bkv);
      if (!causal && per >= 1) {
        std::vector<Tensor> parts;
        for (std::int64_t l0 = 0; l0 < L; l0 += per)
          parts.push_back(fused_attention(q.narrow(-2, l0, std::min(per, L - l0)), k, v, false, sc, t, lo * bkv));
        return concat(parts, -2);
      }
    }
  }
  // Composite: scores [..., L, S] -> mask -> softmax -> matmul, for query rows [l0, l0 + lc).
  const std::int64_t L = q.size(-2), S = k.size(-2);
  auto rows = [&](std::int64_t l0, std::int64_t lc) {
    const Tensor qr = lc == L ? q : q.narrow(-2, l0, lc);
    Tensor s = matmul_fused(qr, k.transpose(-1, -2), Tensor(), sc, 0, Epilogue());  // [..., lc, S]
    if (causal) s = where(tril(ones(q.device(), {lc, S}, DType::bool_), l0), s, -INFINITY);
    if (mask.defined()) {
      const Tensor mr = lc != L && mask.dim() >= 2 && mask.size(-2) == L ? mask.narrow(-2, l0, lc) : mask;
      s = mask.dtype() == DType::bool_ ? where(mr, s, -INFINITY) : add(s, mr);
    }
    return matmul(softmax(s, -1), v);
  };
  // Scores past the device's max SSBO block: blocks of query rows whose scores fit (4-byte
  // floats), concatenated.
  const Shape batch = broadcast_shapes(op, broadcast_shapes(op, batch_dims(q), batch_dims(k)), batch_dims(v));
  const std::int64_t row_bytes = std::max<std::int64_t>(numel_of(batch) * S * 4, 1);
  const std::int64_t per = std::max<std::int64_t>(dev_of(q).ssbo_limit() / row_bytes, 1);
  if (L <= per) return rows(0, L);
  std::vector<Tensor> parts;
  for (std::int64_t l0 = 0; l0 < L; l0 += per) parts.push_back(rows(l0, std::min(per, L - l0)));
  return concat(parts, -2);
}

}  // namespace gltensor
