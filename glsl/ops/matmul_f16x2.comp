// The packed-half f16-math matmul kernel (MatmulPlan::Kernel::f16x2; F16_MATH only): the
// quad-load kernel's tiles (BM x BN = 64 x 128, 128 invocations of 8x8 blocks; whole tiles, quad-
// aligned operands; matmul_vec4.comp) with an inner loop of packed f16 arithmetic only.
// - Staging: A and B tiles are kept in shared memory as f16 pairs in 32-bit words (uvec2 = 4
//   halves along M for A, along N for B), double-buffered, BK = 16 values of K per tile. f16
//   operands' words are copied as they are (A_F16 / B_F16); other dtypes are read as quads and
//   rounded to f16 once, with packHalf2x16 (docs/precision.md: conversions are done on 32-bit
//   registers; NVIDIA's compiler once folded f16vec4(shared f32) into a load with no conversion).
//   Operands contiguous along K (A_KMAJOR: a row-major A; B_KMAJOR: linear's w.t()) are read as
//   two quads of neighbouring rows (columns) and interleaved into pairs with integer ops.
// - Inner loop: words read from shared memory are reinterpreted (unpackFloat2x16, no conversion)
//   as f16vec2; each f16vec2 FMA pairs two output columns, acc(i, j:j+2) += a(i, k).xx *
//   b(k, j:j+2), so each does two useful MACs (NVIDIA: HFMA2). 32 f16vec2 accumulators (h).
// - After every F16_BLOCK values of K (a multiple of BK) and after the last tile, the f16 partial
//   sums are added into f32 accumulators (acc, the quad-load kernel's layout) and reset: the
//   documented error model of F16_MATH. The epilogue (matmul_quads.glsl) is f32.
// SPLIT_K and SPLIT_COLS as in the quad-load kernel; no sliced-K form.
layout(local_size_x = LOCAL_X) in;

#include "matmul.glsl"

#define BK 16u
#define NT 128u
#define TX (BN / 8u)
#define TY (BM / 8u)
#define KV (BK / 4u)
#define LA (BM * KV / NT)
#define LB (BN * KV / NT)
#define LID gl_LocalInvocationID.x
#include "matmul_quads.glsl"
shared uvec2 As[2][BK][BM / 4u];
shared uvec2 Bs[2][BK][BN / 4u];
uvec2 ra[LA], rb[LB];  // the next tile's words, staged in registers

// Quad q of an operand as two words of f16 pairs.
uvec2 words_a(uint q) {
#if A_F16
  return qA[q];
#else
  vec4 v = quadA(q);
  return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#endif
}
uvec2 words_b(uint q) {
#if B_F16
  return qB[q];
#else
  vec4 v = quadB(q);
  return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#endif
}

// Quad l of this invocation's share of the tile at k0. K-major: quads l and l + 1 (l even) are
// rows (columns) 2p and 2p + 1 at K quad kq; else quad e holds 4 rows (columns) at one k.
void fetch(uint m0, uint n0, uint k0, uint qa, uint qb) {
  for (uint l = 0u; l < LA; ++l) {
#if A_KMAJOR
    uint c = LID + NT * (l / 2u), p = c / KV;
    ra[l] = words_a(qa + (m0 + 2u * p + l % 2u) * u_qa_s + k0 / 4u + c % KV);
#else
    uint e = LID + NT * l;
    ra[l] = words_a(qa + (k0 + e / (BM / 4u)) * u_qa_s + m0 / 4u + e % (BM / 4u));
#endif
  }
  for (uint l = 0u; l < LB; ++l) {
#if B_KMAJOR
    uint c = LID + NT * (l / 2u), p = c / KV;
    rb[l] = words_b(qb + (n0 + 2u * p + l % 2u) * u_qb_s + k0 / 4u + c % KV);
#else
    uint e = LID + NT * l;
    rb[l] = words_b(qb + (k0 + e / (BN / 4u)) * u_qb_s + n0 / 4u + e % (BN / 4u));
#endif
  }
}

// Two K-major quads x (row 2p) and y (row 2p + 1) as the words (x_k, y_k) of k = 0..3.
uvec4 interleave(uvec2 x, uvec2 y) {
  return uvec4((x.x & 0xffffu) | (y.x << 16u), (x.x >> 16u) | (y.x & 0xffff0000u), (x.y & 0xffffu) | (y.y << 16u),
               (x.y >> 16u) | (y.y & 0xffff0000u));
}

void put(uint buf) {
#if A_KMAJOR
  for (uint l = 0u; l < LA; l += 2u) {
    uint c = LID + NT * (l / 2u), p = c / KV, k = 4u * (c % KV);
    uvec4 w = interleave(ra[l], ra[l + 1u]);
    for (uint j = 0u; j < 4u; ++j) As[buf][k + j][p / 2u][p % 2u] = w[j];
  }
#else
  for (uint l = 0u; l < LA; ++l) {
    uint e = LID + NT * l;
    As[buf][e / (BM / 4u)][e % (BM / 4u)] = ra[l];
  }
#endif
#if B_KMAJOR
  for (uint l = 0u; l < LB; l += 2u) {
    uint c = LID + NT * (l / 2u), p = c / KV, k = 4u * (c % KV);
    uvec4 w = interleave(rb[l], rb[l + 1u]);
    for (uint j = 0u; j < 4u; ++j) Bs[buf][k + j][p / 2u][p % 2u] = w[j];
  }
#else
  for (uint l = 0u; l < LB; ++l) {
    uint e = LID + NT * l;
    Bs[buf][e / (BN / 4u)][e % (BN / 4u)] = rb[l];
  }
#endif
}

void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint tx = LID % TX, ty = LID / TX;
  uint m0 = WORKGROUP_ID.y * BM, n0 = WORKGROUP_ID.x * BN;
  uint qa = bo.x / 4u, qb = bo.y / 4u;
  // acc[2 r + c]: f32 sums of block row r (rows 4 ty + r, then BM / 2 + 4 ty + r - 4) at column
  // quad c (4 tx.., BN / 2 + 4 tx..); h[4 r + 2 c + j]: f16 partial sums of its column pair j.
  vec4 acc[16];
  f16vec2 h[32];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
  for (int i = 0; i < 32; ++i) h[i] = f16vec2(0.0);
  uint nk = (pt.k1 - pt.k0) / BK;
  fetch(m0, n0, pt.k0, qa, qb);
  put(0u);
  workgroup_sync();
  for (uint t = 0u; LOOP(t < nk); ++t) {
    uint cur = t & 1u;
    if (t + 1u < nk) fetch(m0, n0, pt.k0 + (t + 1u) * BK, qa, qb);
    for (uint k = 0u; k < BK; ++k) {
      uvec2 wa = As[cur][k][ty], wa2 = As[cur][k][TY + ty], wb = Bs[cur][k][tx], wb2 = Bs[cur][k][TX + tx];
      f16vec2 a01 = unpackFloat2x16(wa.x), a23 = unpackFloat2x16(wa.y);
      f16vec2 a45 = unpackFloat2x16(wa2.x), a67 = unpackFloat2x16(wa2.y);
      f16vec2 b0 = unpackFloat2x16(wb.x), b1 = unpackFloat2x16(wb.y);
      f16vec2 b2 = unpackFloat2x16(wb2.x), b3 = unpackFloat2x16(wb2.y);
      // Row r's four column pairs (constant indices: h stays in registers).
#define ROW(r, s)         \
  h[4 * r] += s * b0;     \
  h[4 * r + 1] += s * b1; \
  h[4 * r + 2] += s * b2; \
  h[4 * r + 3] += s * b3;
      ROW(0, a01.x) ROW(1, a01.y) ROW(2, a23.x) ROW(3, a23.y) ROW(4, a45.x) ROW(5, a45.y) ROW(6, a67.x) ROW(7, a67.y)
    }
    if ((t + 1u) % (F16_BLOCK / BK) == 0u || t + 1u == nk) {
      for (int i = 0; i < 16; ++i) {
        acc[i] += vec4(vec2(h[2 * i]), vec2(h[2 * i + 1]));
        h[2 * i] = f16vec2(0.0);
        h[2 * i + 1] = f16vec2(0.0);
      }
    }
    if (t + 1u < nk) put(cur ^ 1u);
    workgroup_sync();
  }
  uint c_off = pt.c_off;
  uint d_off = bo.z;
  uint ma = m0 + 4u * ty, mb = m0 + BM / 2u + 4u * ty, na = n0 + 4u * tx, nb = n0 + BN / 2u + 4u * tx;
  EPI_ROWS(0)
  EPI_ROWS(1)
  EPI_ROWS(2)
  EPI_ROWS(3)
}
