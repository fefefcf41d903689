// scaled_dot_product_attention: a fused kernel (glsl/attention.comp) without masks or gradients,
// otherwise matmul -> mask -> softmax -> matmul (differentiable by composition).
#include <cmath>
#include <cstdlib>
#include <string>

#include "codegen.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
// The fused kernel applies with no mask, no gradient to record, floating dtypes, head dims
// <= 64 and non-empty L and S. GLTENSOR_ATTENTION=composite forces the composite path.
bool fused_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  const char* env = std::getenv("GLTENSOR_ATTENTION");
  if (env && std::string(env) == "composite") return false;
  if (mask.defined() || autograd::any_requires_grad({&q, &k, &v})) return false;
  for (const Tensor* t : {&q, &k, &v})
    if (!is_floating(t->dtype())) return false;
  return q.size(-1) <= 64 && v.size(-1) <= 64 && q.size(-2) > 0 && k.size(-2) > 0;
}

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  const char* op = "scaled_dot_product_attention";
  DeviceImpl& dev = dev_of(q);
  Enter guard(dev, op);
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
  // 64 query rows per workgroup (44.5 KiB of shared memory) where the device allows it, else 32.
  // GLTENSOR_ATTENTION_BQ=32|64 overrides (both tested; llvmpipe's 32 KiB allow only 32).
  std::int64_t bq = dev.caps.max_shared_memory >= 45 * 1024 ? 64 : 32;
  if (const char* e = std::getenv("GLTENSOR_ATTENTION_BQ"); e && std::atoi(e) == 32) bq = 32;
  // f32 k and v contiguous along the head dim, rows and batches on 4-element boundaries: quads.
  auto quads = [](const Tensor& t) { return t.dtype() == DType::f32 && quad_aligned(t, t.dim() - 1); };
  const bool kv_quads = quads(ek) && quads(ev) && E % 4 == 0 && Ev % 4 == 0;
  std::string h = "#define BD " + std::to_string(bd) + "\n#define BQ " + std::to_string(bq) + "u\n" +
                  operand_glsl(0, od, CT::f32, true) + operand_glsl(1, q.dtype(), CT::f32, false) +
                  operand_glsl(2, k.dtype(), CT::f32, false) + operand_glsl(3, v.dtype(), CT::f32, false);
  if (kv_quads)
    h += "#define KV_QUADS 1\nlayout(std430, binding = 4) readonly buffer QK { vec4 qK[]; };\n"
         "layout(std430, binding = 5) readonly buffer QV { vec4 qV[]; };\n";
  const Program& p = dev.programs.get("attention.comp", h, static_cast<std::uint32_t>(bq * 2));
  auto u = [&](const char* n, std::int64_t x) { p.set_uint(n, static_cast<GLuint>(x)); };
  u("u_L", L);
  u("u_S", S);
  u("u_E", E);
  u("u_Ev", Ev);
  glProgramUniform1uiv(p.id, p.loc("u_bshape"), static_cast<GLsizei>(bd), bl.shape.data());
  glProgramUniform1uiv(p.id, p.loc("u_bstride_q"), static_cast<GLsizei>(bd), bl.strides[0].data());
  glProgramUniform1uiv(p.id, p.loc("u_bstride_k"), static_cast<GLsizei>(bd), bl.strides[1].data());
  glProgramUniform1uiv(p.id, p.loc("u_bstride_v"), static_cast<GLsizei>(bd), bl.strides[2].data());
  u("u_q_off", eq.offset());
  u("u_k_off", ek.offset());
  u("u_v_off", ev.offset());
  u("u_q_sl", eq.strides()[eq.dim() - 2]);
  u("u_q_se", eq.strides()[eq.dim() - 1]);
  u("u_k_ss", ek.strides()[ek.dim() - 2]);
  u("u_k_se", ek.strides()[ek.dim() - 1]);
  u("u_v_ss", ev.strides()[ev.dim() - 2]);
  u("u_v_se", ev.strides()[ev.dim() - 1]);
  glProgramUniform1f(p.id, p.loc("u_scale"), static_cast<float>(scale * 1.4426950408889634));
  glProgramUniform1i(p.id, p.loc("u_causal"), causal ? 1 : 0);
  std::vector<BufferUse> uses = {{out.impl()->storage.get(), true},
                                 {q.impl()->storage.get(), false},
                                 {k.impl()->storage.get(), false},
                                 {v.impl()->storage.get(), false}};
  if (kv_quads) {
    uses.push_back({k.impl()->storage.get(), false});
    uses.push_back({v.impl()->storage.get(), false});
  }
  const std::uint64_t gx = static_cast<std::uint64_t>((L + bq - 1) / bq);
  if (gx > static_cast<std::uint64_t>(dev.caps.max_workgroup_count[0]))
    throw LimitError("gltensor::scaled_dot_product_attention: " + std::to_string(L) +
                     " query rows need more workgroups than the device allows");
  const std::int64_t nbatch = numel_of(batch);
  const std::int64_t ymax = std::max(1, dev.caps.max_workgroup_count[1]);
  for (std::int64_t z0 = 0; z0 < nbatch; z0 += ymax) {
    u("u_zbase", z0);
    dev.dispatch(p, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(std::min(ymax, nbatch - z0)), 1, uses);
  }
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
  if (fused_applies(q, k, v, mask)) return fused_attention(q, k, v, causal, sc);
  Tensor s = matmul_fused(q, k.transpose(-1, -2), Tensor(), sc, 0, Activation::none);  // [..., L, S]
  const std::int64_t L = q.size(-2), S = k.size(-2);
  if (causal) s = where(tril(ones(q.device(), {L, S}, DType::bool_)), s, -INFINITY);
  if (mask.defined()) s = mask.dtype() == DType::bool_ ? where(mask, s, -INFINITY) : add(s, mask);
  return matmul(softmax(s, -1), v);
}

}  // namespace gltensor
