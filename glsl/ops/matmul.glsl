// The matmul kernels' shared part (glsl/ops/matmul_*.comp, one file per kernel; the host's
// MatmulVariant, src/ops/matmul_variant.hpp, picks the file and its defines): batched
// C = act(alpha * A @ B + beta * D).
// A [M, K], B [K, N] and the addend D [M, N] are read through strides, so transposed and
// broadcast operands need no copy; batch dims (BD of them, broadcast) address each operand's
// batch offset. C is contiguous [batch..., M, N].
// ACT(x): the epilogue's activation, an expression over glsl/common/activations.glsl (absent:
// none), with parameters u_act_p0 / u_act_p1, and the affine after it (u_act_scale, u_act_shift)
// where the host's expression has it (src/ops/activation.hpp, epilogue_glsl).
// SPLIT_K (split-K, for long K and few output tiles): grid z = batch * u_nsplit; split s of a
// batch entry sums K range [s * u_kchunk, min(K, (s + 1) * u_kchunk)) and writes its raw partial
// product (no alpha, addend or activation) to C[s][batch][M][N]; the host sums the splits and
// applies the epilogue (so no invocation loops over all of a long K: llvmpipe stops loops after
// 65535 iterations, and few tiles leave a GPU idle).
// Kernels: matmul_vec4.comp (quad loads, whole tiles only), matmul_tile64.comp /
// matmul_tile128.comp (scalar loads, any strides and sizes) and matmul_reg.comp (no shared
// memory, any strides and sizes).
// F16_MATH (Precision::f16_allowed on a device with fp16 arithmetic; the host adds the #extension
// for float16_t; not with REG): every kernel reads its shared-memory operands as f16 vectors and
// forms the products and partial sums in f16 (hacc, f16vec4 FMAs) over F16_BLOCK values of K (a
// multiple of the K-tile), then adds each block's partial sum into the f32 accumulators (acc), so
// that the f16 rounding error grows with the block, not with K (docs/precision.md).
// Included after the kernel's layout line.
uniform uint u_M;
uniform uint u_N;
uniform uint u_K;
uniform uint u_bshape[BD];
uniform uint u_bstride_a[BD];
uniform uint u_bstride_b[BD];
uniform uint u_bstride_d[BD];
uniform uint u_a_off;
uniform uint u_b_off;
uniform uint u_d_off;
uniform uint u_a_sm;
uniform uint u_a_sk;
uniform uint u_b_sk;
uniform uint u_b_sn;
uniform uint u_d_sm;
uniform uint u_d_sn;
uniform float u_alpha;
uniform float u_beta;
uniform float u_act_p0;  // activation parameters (ACT's expression may use them)
uniform float u_act_p1;
uniform float u_act_scale;  // the epilogue's affine after the activation (ACT's expression may use them)
uniform float u_act_shift;
uniform uint u_kchunk;  // SPLIT_K: K per split (a multiple of the K-tile)
uniform uint u_nsplit;  // SPLIT_K: splits per batch entry

#include "activations.glsl"
#ifndef ACT
#define ACT(x) (x)
#endif

#ifdef F16_MATH
// f32 -> f16 through packHalf2x16 / unpackFloat2x16: NVIDIA's compiler folds a plain
// f16vec4(shared f32 value) into a shared-memory load straight into a half register without the
// conversion (LDS.F32 H0.x, ...: garbage operands; docs/precision.md), so the conversion is
// done on 32-bit registers and the halves are moved in as bits.
f16vec4 to_h4(vec4 v) { return f16vec4(unpackFloat2x16(packHalf2x16(v.xy)), unpackFloat2x16(packHalf2x16(v.zw))); }
float16_t to_h1(float v) { return unpackFloat2x16(packHalf2x16(vec2(v, 0.0))).x; }
#define HVEC f16vec4
#define TO_H(v) to_h4(v)
#define HACC hacc
#else
#define HVEC vec4
#define TO_H(v) (v)
#define HACC acc
#endif

// This workgroup's batch entry, its K range and its output's first element.
struct Part {
  uint z, k0, k1, c_off;
};
Part part() {
  Part p;
#ifdef SPLIT_K
  uint zs = WORKGROUP_ID.z;
  p.z = zs / u_nsplit;
  uint s = zs - p.z * u_nsplit;
  p.k0 = s * u_kchunk;
  p.k1 = min(u_K, p.k0 + u_kchunk);
  p.c_off = (s * (u_grid.z / u_nsplit) + p.z) * u_M * u_N;
#else
  p.z = WORKGROUP_ID.z;
  p.k0 = 0u;
  p.k1 = u_K;
  p.c_off = p.z * u_M * u_N;
#endif
  return p;
}

// A[gm][gk] (A's elements from a_off) where gm < u_M and gk < kend, else 0; B[gk][gn] where gk <
// kend and gn < u_N, else 0 (the tiled kernels' edge tiles and their last prefetch). The loads'
// indices are clamped into the operand (its last row or column, the K range's last k) and the
// values past them replaced by a boolean mix (a select): no load past an operand's end, even one
// that a ternary would discard (GLSL evaluates only the chosen side of ?:, but a compiler may
// flatten it into a select that loads anyway: docs/ARCHITECTURE.md). The K range must not be
// empty (kend - 1 would wrap; plan_matmul runs K = 0 in REG). Macros: only the kernels that read
// A and B by elements (load1, load2) expand them.
#define A_ELEM(a_off, gm, gk, kend)                                                                    \
  mix(0.0, float(load1((a_off) + min(gm, u_M - 1u) * u_a_sm + min(gk, (kend) - 1u) * u_a_sk)), \
      (gm) < u_M && (gk) < (kend))
#define B_ELEM(b_off, gk, gn, kend)                                                                    \
  mix(0.0, float(load2((b_off) + min(gk, (kend) - 1u) * u_b_sk + min(gn, u_N - 1u) * u_b_sn)), \
      (gk) < (kend) && (gn) < u_N)

// Element offsets of this workgroup's batch in A (x), B (y) and the addend D (z). NO_BATCH (one
// batch, the host's choice): the offsets are uniforms, known to be the same for the whole
// workgroup; the VEC4 kernel ran 23% faster so on an H100 (bench/RESULTS.md).
uvec3 batch_offsets(uint z) {
#ifdef NO_BATCH
  return uvec3(u_a_off, u_b_off, u_d_off);
#else
  uint zz = z;
  uvec3 off = uvec3(u_a_off, u_b_off, u_d_off);
  for (int d = BD - 1; d > 0; --d) {
    uint i = zz % u_bshape[d];
    zz /= u_bshape[d];
    off += i * uvec3(u_bstride_a[d], u_bstride_b[d], u_bstride_d[d]);
  }
  return off + zz * uvec3(u_bstride_a[0], u_bstride_b[0], u_bstride_d[0]);  // zz < u_bshape[0]
#endif
}
