// Register-tiled flash attention, FlashAttention-2 (Dao 2023, "FlashAttention-2: Faster Attention
// with Better Parallelism and Work Partitioning", arXiv 2307.08691, Algorithms 1 and 2): the same
// results as attention_flash.comp's modes (masks, causal, dropout, GQA through the batch dims),
// computed by workgroups of 256 invocations over blocks of 64 query rows x 64 keys. Invocation
// (tx, ty) = (tid % 16, tid / 16) owns a 4x4 register tile of a 64 x 64 score block (tile rows
// 4ty..4ty+3, columns 4tx..4tx+3), computed as a GEMM over the head dim in chunks of DK elements
// staged in shared memory as quads of 4 rows (GEMM_TILE), and 4 rows of an accumulator (quads
// tx + 16u, u < NQ) that sums a probability tile (Pt, shared) times rows of Q, K, V or dO staged in
// chunks (ACC_TILE).
//   tiled_fwd (MODE): per block of query rows, over key blocks: S = Q K^T; the online softmax's row
//     maxima and sums over the 16 invocations sharing a row (shared memory); O += P V. Out and the
//     row logsumexp lse = m + log2(l) (operand 4); SPLIT: keys in chunks of u_chunk (a multiple
//     of 64), chunk WORKGROUP_ID.z, out f32 [chunks, batch, L, Ev + 2]: per row the unnormalized
//     sum, m and l (combined on the host), no lse operand.
//   tiled_dkv: per block of keys (tile rows), over query-row blocks (columns): S^T = K Q^T,
//     dP^T = V dO^T, P = exp2(S - lse), dS = P (dP Z - D); dV += (P Z)^T dO, dK += scale dS^T Q.
//     Out f32 [chunks, batch, S, E + Ev] (dK then dV), SPLIT over query rows (summed on the host).
//   tiled_dq: per block of query rows, over key blocks: S, dP = dO V^T, dS as above, dQ += scale
//     dS K. Out f32 [chunks, batch, L, E], SPLIT over keys.
// Shared memory: Pt (64 x 16 quads, 16 KiB) and a work area of WS = 1024 quads (16 KiB: 2 x DK x
// GS for a GEMM's chunks, 2 x 16 x GS for the row statistics, VK x DV4 or VKQ x DQ4 <= 1024 for an
// accumulation's chunk), reused between barriers. 32 KiB in all (llvmpipe's limit).
// Scores are in log2 units: q k^T times scale * log2(e) (u_scale), plus an additive mask times
// log2(e); causal: key j is seen by row i iff j <= i (top-left). A row whose keys are all masked
// gives NaN (0 / 0, as torch) and adds nothing to the gradients.
// Operands: 0 out, 1 q, 2 k, 3 v (strided, batch via BD dims), then tiled_fwd: 4 lse (not SPLIT);
// the backward: 4 stats (f32 [batch, L, 2]: lse, D = rowsum(dO O)), 5 dO; then the mask (LOAD_MASK).
#define tiled_fwd 0
#define tiled_dkv 1
#define tiled_dq 2
layout(local_size_x = LOCAL_X) in;

#define BR 64u
#define BC 64u
#define DK 16u  // a multiple of 16 (the Q/K chunk loads: 16 elements per pass)
#define GS 17u  // the GEMM chunks' row stride in quads (16 + 1: no bank conflicts on the stores)
#define WS 1024u

const float LOG2E = 1.4426950408889634;

uniform uint u_L;
uniform uint u_S;
uniform uint u_E;
uniform uint u_Ev;
uniform int u_causal;
uniform uint u_row0;  // the global index of row 0 (blocks of query rows)
uniform uint u_bshape[BD];
uniform uint u_bstride_q[BD];
uniform uint u_bstride_k[BD];
uniform uint u_bstride_v[BD];
uniform uint u_q_off;
uniform uint u_k_off;
uniform uint u_v_off;
uniform uint u_q_sl;
uniform uint u_q_se;
uniform uint u_k_ss;
uniform uint u_k_se;
uniform uint u_v_ss;
uniform uint u_v_se;
uniform float u_scale;  // softmax scale * log2(e)
uniform uint u_chunk;   // SPLIT
// UNIFORM_DIMS (llvmpipe, head dims up to 64: NQQ = NVQ = 1): DQ4 and DV4 are the uniforms u_dq4 and
// u_dv4 (ceil(E / 4), ceil(Ev / 4)), not constants: the accumulations' staging and STORE_ROW's bounds
// read them, the register arrays (NQQ, NVQ) and the chunks (VKQ, VK) stay constant; one program for
// every head dim up to 64 (LLVM's compiles are most of llvmpipe's cold cost). GPUs: constants.
#ifdef UNIFORM_DIMS
uniform uint u_dq4;
uniform uint u_dv4;
#define DQ4 u_dq4
#define DV4 u_dv4
#endif
#if MODE != tiled_fwd
uniform float u_scale_e;  // softmax scale
uniform uint u_bstride_o[BD];
uniform uint u_o_off;
uniform uint u_o_sl;
uniform uint u_o_se;
#endif
#ifdef HAS_MASK
uniform uint u_bstride_m[BD];
uniform uint u_m_off;
uniform uint u_m_sl;
uniform uint u_m_ss;
#endif
#ifdef DROPOUT
uniform uvec2 u_seed;
uniform uint u_doff;
uniform float u_keep;  // 1 - dropout_p

#include "philox.glsl"
// Z for (batch z, global row i, key j): 1 / keep or 0 (as attention_flash.comp's).
float keep_scale(uint z, uint i, uint j) {
  uint x = philox(uvec4(j, i, z, u_doff), u_seed).x;
  return (float(x >> 8) + 1.0) * (1.0 / 16777216.0) <= u_keep ? 1.0 / u_keep : 0.0;
}
#endif

// The score bias of (row r, key j) of this batch entry (mask offset moff), log2 units.
float bias(uint moff, uint r, uint j) {
#if defined(MASK_BOOL)
  return LOAD_MASK(moff + r * u_m_sl + j * u_m_ss) != 0 ? 0.0 : -F_INF;
#elif defined(MASK_ADD)
  return float(LOAD_MASK(moff + r * u_m_sl + j * u_m_ss)) * LOG2E;
#else
  return 0.0;
#endif
}

// max that keeps NaN (GLSL's max leaves it undefined)
float nan_max(float m, float x) { return is_nan(m) ? m : ((x > m || is_nan(x)) ? x : m); }
float nan_max4(float m, vec4 x) { return nan_max(nan_max(nan_max(nan_max(m, x.x), x.y), x.z), x.w); }

shared vec4 Pt[BC * 16u];  // a probability tile transposed: Pt[pt_at(c, t)] = tile rows 4t..4t+3 of column c
shared vec4 Ws[WS];
// Pt's index of (column c, row quad t), swizzled so that the 16 columns 4tx + k stored at once
// fall in 8 bank groups.
uint pt_at(uint c, uint t) { return c * 16u + (t ^ ((c >> 2u) & 7u)); }        // work area: Q/K chunks, row statistics, V chunks

// T += A B^T over n head-dim elements, T the invocation's 4x4 tile t0..t3 (tile rows 4ty + r, tile
// columns 4tx..4tx+3): A's rows a0 + 0..63 (below a_end; element e of row r at LA(ab + r a_sl + e
// a_se)), B's likewise; both staged in chunks of DK elements as quads of 4 rows (Ws).
#define GEMM_TILE(t0, t1, t2, t3, LA, ab, a_sl, a_se, a0, a_end, LB, bb, b_sl, b_se, b0, b_end, n)  \
  for (uint dc = 0u; LOOP(dc * DK < (n)); ++dc) {                                                   \
    workgroup_sync();                                                                               \
    for (uint h = 0u; h < DK / 16u; ++h) {                                                          \
      uint e = dc * DK + ld + 16u * h, a = (ld + 16u * h) * GS + lq;                               \
      vec4 av = vec4(0.0), bv = vec4(0.0);                                                          \
      if (e < (n)) {                                                                                \
        uint ra = (a0) + 4u * lq, rb = (b0) + 4u * lq, ea = (ab) + e * (a_se), eb = (bb) + e * (b_se); \
        uint la = (a_end) - 1u, lb = (b_end) - 1u; /* rows clamped to the last, values past replaced */ \
        av = mix(vec4(0.0),                                                                         \
                 vec4(float(LA(ea + min(ra, la) * (a_sl))), float(LA(ea + min(ra + 1u, la) * (a_sl))), \
                      float(LA(ea + min(ra + 2u, la) * (a_sl))), float(LA(ea + min(ra + 3u, la) * (a_sl)))), \
                 lessThan(uvec4(ra) + uvec4(0u, 1u, 2u, 3u), uvec4(a_end)));                        \
        bv = mix(vec4(0.0),                                                                         \
                 vec4(float(LB(eb + min(rb, lb) * (b_sl))), float(LB(eb + min(rb + 1u, lb) * (b_sl))), \
                      float(LB(eb + min(rb + 2u, lb) * (b_sl))), float(LB(eb + min(rb + 3u, lb) * (b_sl)))), \
                 lessThan(uvec4(rb) + uvec4(0u, 1u, 2u, 3u), uvec4(b_end)));                        \
      }                                                                                             \
      Ws[a] = av;                                                                                   \
      Ws[DK * GS + a] = bv;                                                                           \
    }                                                                                               \
    workgroup_sync();                                                                               \
    for (uint d = 0u; d < DK; ++d) {                                                                \
      vec4 a = Ws[d * GS + ty], b = Ws[DK * GS + d * GS + tx];                                         \
      t0 += a.x * b;                                                                                \
      t1 += a.y * b;                                                                                \
      t2 += a.z * b;                                                                                \
      t3 += a.w * b;                                                                                \
    }                                                                                               \
  }

// acc += Pt^T X for the invocation's 4 tile rows (ty) and quads tx + 16u (u < NQ): X's rows x0 + 0..xn-1
// (below x_end; quad c of row r at LX(xb + r x_sl + 4c x_se), n elements, D4 quads) in chunks of CH rows.
#define ACC_TILE(acc, NQ, D4, CH, LX, xb, x_sl, x_se, n, x0, xn, x_end)                               \
  for (uint v0 = 0u; LOOP(v0 < (xn)); v0 += (CH)) {                                                  \
    workgroup_sync();                                                                                \
    for (uint e = tid; e < (CH) * (D4); e += LOCAL_X) {                                               \
      uint jj = (x0) + v0 + e / (D4), c = e % (D4);                                                   \
      /* the row and elements clamped to the last, the values past them replaced (no load past x) */ \
      uint b = (xb) + min(jj, (x_end) - 1u) * (x_sl), ln = (n) - 1u;                                  \
      bvec4 in4 = lessThan(uvec4(4u * c) + uvec4(0u, 1u, 2u, 3u), uvec4(n));                          \
      Ws[e] = mix(vec4(0.0),                                                                          \
                  vec4(float(LX(b + min(4u * c, ln) * (x_se))), float(LX(b + min(4u * c + 1u, ln) * (x_se))), \
                       float(LX(b + min(4u * c + 2u, ln) * (x_se))), float(LX(b + min(4u * c + 3u, ln) * (x_se)))), \
                  jj < (x_end) ? in4 : bvec4(false));                                                 \
    }                                                                                                \
    workgroup_sync();                                                                                \
    uint vn = min((CH), (xn) - v0);                                                                   \
    for (uint jj = 0u; LOOP(jj < vn); ++jj) {                                                        \
      vec4 p = Pt[pt_at(v0 + jj, ty)];                                                               \
      for (uint u = 0u; u < (NQ); ++u) {                                                             \
        vec4 w = Ws[jj * (D4) + min(tx + 16u * u, (D4) - 1u)];                                        \
        acc[4u * u] += p.x * w;                                                                      \
        acc[4u * u + 1u] += p.y * w;                                                                 \
        acc[4u * u + 2u] += p.z * w;                                                                 \
        acc[4u * u + 3u] += p.w * w;                                                                 \
      }                                                                                              \
    }                                                                                                \
  }

// Writes the tile t0..t3 (tile rows 4ty + r, columns 4tx + c) to Pt transposed.
#define STORE_PT(t0, t1, t2, t3)                                                 \
  {                                                                              \
    vec4 a0_ = (t0), a1_ = (t1), a2_ = (t2), a3_ = (t3);                         \
    Pt[pt_at(4u * tx + 0u, ty)] = vec4(a0_.x, a1_.x, a2_.x, a3_.x);                 \
    Pt[pt_at(4u * tx + 1u, ty)] = vec4(a0_.y, a1_.y, a2_.y, a3_.y);            \
    Pt[pt_at(4u * tx + 2u, ty)] = vec4(a0_.z, a1_.z, a2_.z, a3_.z);            \
    Pt[pt_at(4u * tx + 3u, ty)] = vec4(a0_.w, a1_.w, a2_.w, a3_.w);            \
  }

// Stores quads tx + 16u (u < NQ, below D4; n elements) of accumulator row r (acc[4u * u + r])
// times f at base.
#define STORE_ROW(acc, NQ, D4, r, base, n, f)                                  \
  for (uint u = 0u; u < (NQ); ++u) {                                           \
    uint c = tx + 16u * u;                                                     \
    vec4 w = (r == 0u ? acc[4u * u] : r == 1u ? acc[4u * u + 1u] : r == 2u ? acc[4u * u + 2u] : acc[4u * u + 3u]) * (f); \
    if (c < (D4)) {                                                            \
      if (4u * c < (n)) store0((base) + 4u * c, CT0(w.x));                     \
      if (4u * c + 1u < (n)) store0((base) + 4u * c + 1u, CT0(w.y));           \
      if (4u * c + 2u < (n)) store0((base) + 4u * c + 2u, CT0(w.z));           \
      if (4u * c + 3u < (n)) store0((base) + 4u * c + 3u, CT0(w.w));           \
    }                                                                          \
  }

// The logit of (row r, key j) in log2 units: scaled, masked, -inf where not seen (causal: j > the
// global row u_row0 + r).
float logit(float acc, bool live, uint moff, uint r, uint j) {
  // the mask's (r, j) clamped into [u_L, u_S]: no load outside it where the logit is not seen
  float b = bias(moff, min(r, u_L - 1u), min(j, u_S - 1u));
  return live && !(u_causal != 0 && j > u_row0 + r) ? acc * u_scale + b : -F_INF;
}

#if MODE != tiled_fwd
// P from logits and the rows' logsumexp (0 where masked); dS = P (dP Z - D) (0 where P is).
vec4 probs(vec4 x, vec4 lse) {
  return vec4(x.x == -F_INF ? 0.0 : exp2(x.x - lse.x), x.y == -F_INF ? 0.0 : exp2(x.y - lse.y),
              x.z == -F_INF ? 0.0 : exp2(x.z - lse.z), x.w == -F_INF ? 0.0 : exp2(x.w - lse.w));
}
vec4 dscores(vec4 p, vec4 dp, vec4 zd, vec4 D) {
  vec4 d = p * (dp * zd - D);
  return vec4(p.x != 0.0 ? d.x : 0.0, p.y != 0.0 ? d.y : 0.0, p.z != 0.0 ? d.z : 0.0, p.w != 0.0 ? d.w : 0.0);
}
#endif
#ifdef DROPOUT
// Z of (row i, keys j..j+3) or (rows i..i+3, key j), 0 where p is.
vec4 keep_keys(uint z, uint i, uint j, vec4 p) {
  return vec4(p.x != 0.0 ? keep_scale(z, i, j) : 0.0, p.y != 0.0 ? keep_scale(z, i, j + 1u) : 0.0,
              p.z != 0.0 ? keep_scale(z, i, j + 2u) : 0.0, p.w != 0.0 ? keep_scale(z, i, j + 3u) : 0.0);
}
vec4 keep_rows(uint z, uint i, uint j, vec4 p) {
  return vec4(p.x != 0.0 ? keep_scale(z, i, j) : 0.0, p.y != 0.0 ? keep_scale(z, i + 1u, j) : 0.0,
              p.z != 0.0 ? keep_scale(z, i + 2u, j) : 0.0, p.w != 0.0 ? keep_scale(z, i + 3u, j) : 0.0);
}
#endif

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16u, ty = tid / 16u;
  // the GEMM chunk loads: quad lq (rows 4lq..4lq+3) of head-dim element ld (+ 16 per pass)
  uint ld = tid % 16u, lq = tid / 16u;
  uint z = WORKGROUP_ID.y;
  uint q_off = u_q_off, k_off = u_k_off, v_off = u_v_off, zz = z;
#ifdef HAS_MASK
  uint m_off = u_m_off;
#else
  uint m_off = 0u;
#endif
#if MODE != tiled_fwd
  uint o_off = u_o_off;
#endif
  for (int d = BD - 1; d >= 0; --d) {
    uint i = d > 0 ? zz % u_bshape[d] : zz;
    zz /= u_bshape[d];
    q_off += i * u_bstride_q[d];
    k_off += i * u_bstride_k[d];
    v_off += i * u_bstride_v[d];
#ifdef HAS_MASK
    m_off += i * u_bstride_m[d];
#endif
#if MODE != tiled_fwd
    o_off += i * u_bstride_o[d];
#endif
  }
#if MODE == tiled_dkv
  // ---- keys kblock + 4ty..4ty+3 (tile rows) x query rows i0 + 4tx..4tx+3 (tile columns) ----
  uint kblock = WORKGROUP_ID.x * BC, j0 = kblock + 4u * ty;
  vec4 dk[4u * NQQ], dv[4u * NVQ];
  for (uint c = 0u; c < 4u * NQQ; ++c) dk[c] = vec4(0.0);
  for (uint c = 0u; c < 4u * NVQ; ++c) dv[c] = vec4(0.0);
#ifdef SPLIT
  uint ibegin = WORKGROUP_ID.z * u_chunk, iend = min(u_L, ibegin + u_chunk);
#else
  uint ibegin = 0u, iend = u_L;
#endif
  // causal: rows before the block's first key see none of its keys
  if (u_causal != 0) ibegin = max(ibegin, kblock);
  for (uint i0 = ibegin; LOOP(i0 < iend); i0 += BR) {
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    vec4 g0 = vec4(0.0), g1 = vec4(0.0), g2 = vec4(0.0), g3 = vec4(0.0);
    GEMM_TILE(s0, s1, s2, s3, load2, k_off, u_k_ss, u_k_se, kblock, u_S, load1, q_off, u_q_sl, u_q_se, i0, iend, u_E)
    GEMM_TILE(g0, g1, g2, g3, load3, v_off, u_v_ss, u_v_se, kblock, u_S, load5, o_off, u_o_sl, u_o_se, i0, iend, u_Ev)
    uint ic = i0 + 4u * tx;  // this invocation's first query row
    vec4 lse = vec4(0.0), D = vec4(0.0);
    for (uint c = 0u; c < 4u; ++c) {
      uint rc = min(ic + c, iend - 1u);
      vec2 st = vec2(load4(2u * (z * u_L + rc)), load4(2u * (z * u_L + rc) + 1u));
      st = ic + c < iend ? st : vec2(0.0);
      lse[c] = st.x;
      D[c] = st.y;
    }
#define LOGITS_KEY(t, r)                                                                             \
  t = vec4(logit(t.x, j0 + r < u_S && ic < iend, m_off, ic, j0 + r),                                 \
           logit(t.y, j0 + r < u_S && ic + 1u < iend, m_off, ic + 1u, j0 + r),                       \
           logit(t.z, j0 + r < u_S && ic + 2u < iend, m_off, ic + 2u, j0 + r),                       \
           logit(t.w, j0 + r < u_S && ic + 3u < iend, m_off, ic + 3u, j0 + r));
    LOGITS_KEY(s0, 0u)
    LOGITS_KEY(s1, 1u)
    LOGITS_KEY(s2, 2u)
    LOGITS_KEY(s3, 3u)
    s0 = probs(s0, lse), s1 = probs(s1, lse), s2 = probs(s2, lse), s3 = probs(s3, lse);
#ifdef DROPOUT
    vec4 z0 = keep_rows(z, ic, j0, s0), z1 = keep_rows(z, ic, j0 + 1u, s1), z2 = keep_rows(z, ic, j0 + 2u, s2),
         z3 = keep_rows(z, ic, j0 + 3u, s3);
#else
    vec4 z0 = vec4(1.0), z1 = z0, z2 = z0, z3 = z0;
#endif
    g0 = dscores(s0, g0, z0, D), g1 = dscores(s1, g1, z1, D), g2 = dscores(s2, g2, z2, D), g3 = dscores(s3, g3, z3, D);
    uint rn = min(BR, iend - i0);
    // dV += (P Z)^T dO, then dK += dS^T Q
    STORE_PT(s0 * z0, s1 * z1, s2 * z2, s3 * z3)
    ACC_TILE(dv, NVQ, DV4, VK, load5, o_off, u_o_sl, u_o_se, u_Ev, i0, rn, iend)
    workgroup_sync();
    STORE_PT(g0, g1, g2, g3)
    ACC_TILE(dk, NQQ, DQ4, VKQ, load1, q_off, u_q_sl, u_q_se, u_E, i0, rn, iend)
  }
  uint EE = u_E + u_Ev;
  for (uint r = 0u; r < 4u; ++r) {
    uint j = j0 + r;
    if (j >= u_S) break;
#ifdef SPLIT
    uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_S + j) * EE;
#else
    uint base = (z * u_S + j) * EE;
#endif
    STORE_ROW(dk, NQQ, DQ4, r, base, u_E, u_scale_e)
    STORE_ROW(dv, NVQ, DV4, r, base + u_E, u_Ev, 1.0)
  }
#else
  // ---- query rows r0..r0+3 (tile rows) x keys k0 + 4tx..4tx+3 (tile columns) ----
  uint rblock = WORKGROUP_ID.x * BR;  // the block's first row (in q's narrowed rows)
  uint r0 = rblock + 4u * ty;         // this invocation's first row
#if MODE == tiled_fwd
  // the output accumulators: o[4u * u + r] = row r0 + r, quad tx + 16u
  vec4 o[4u * NVQ];
  for (uint c = 0u; c < 4u * NVQ; ++c) o[c] = vec4(0.0);
  vec4 m = vec4(-F_INF), l = vec4(0.0);  // the 4 rows' running max and sum
#else
  vec4 dq[4u * NQQ];
  for (uint c = 0u; c < 4u * NQQ; ++c) dq[c] = vec4(0.0);
  vec4 lse = vec4(0.0), D = vec4(0.0);
  for (uint c = 0u; c < 4u; ++c) {
    uint rc = min(r0 + c, u_L - 1u);
    vec2 st = vec2(load4(2u * (z * u_L + rc)), load4(2u * (z * u_L + rc) + 1u));
    st = r0 + c < u_L ? st : vec2(0.0);
    lse[c] = st.x;
    D[c] = st.y;
  }
#endif
#ifdef SPLIT
  uint kbegin = WORKGROUP_ID.z * u_chunk, kend = min(u_S, kbegin + u_chunk);
#else
  uint kbegin = 0u, kend = u_S;
#endif
  // causal: keys after the block's last row are seen by none of its rows
  if (u_causal != 0) kend = min(kend, u_row0 + rblock + BR);
  for (uint k0 = kbegin; LOOP(k0 < kend); k0 += BC) {
    // S = Q K^T: the 4x4 tile (rows r0 + r, keys k0 + 4tx..4tx+3)
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    GEMM_TILE(s0, s1, s2, s3, load1, q_off, u_q_sl, u_q_se, rblock, u_L, load2, k_off, u_k_ss, u_k_se, k0, kend, u_E)
    uint j0 = k0 + 4u * tx;
#define LOGITS_ROW(t, r)                                                                           \
  t = vec4(logit(t.x, r0 + r < u_L && j0 < kend, m_off, r0 + r, j0),                               \
           logit(t.y, r0 + r < u_L && j0 + 1u < kend, m_off, r0 + r, j0 + 1u),                     \
           logit(t.z, r0 + r < u_L && j0 + 2u < kend, m_off, r0 + r, j0 + 2u),                     \
           logit(t.w, r0 + r < u_L && j0 + 3u < kend, m_off, r0 + r, j0 + 3u));
    LOGITS_ROW(s0, 0u)
    LOGITS_ROW(s1, 1u)
    LOGITS_ROW(s2, 2u)
    LOGITS_ROW(s3, 3u)
    uint kn = min(BC, kend - k0);
#if MODE == tiled_fwd
    // the rows' maxima and sums over the 16 invocations sharing them
    workgroup_sync();  // the GEMM's reads of the work area are done
    Ws[tx * GS + ty] = vec4(nan_max4(-F_INF, s0), nan_max4(-F_INF, s1), nan_max4(-F_INF, s2), nan_max4(-F_INF, s3));
    workgroup_sync();
    vec4 mx = m;
    for (uint t = 0u; t < 16u; ++t) {
      vec4 w = Ws[t * GS + ty];
      mx = vec4(nan_max(mx.x, w.x), nan_max(mx.y, w.y), nan_max(mx.z, w.z), nan_max(mx.w, w.w));
    }
    // rows with no key yet keep exp2 away from inf - inf
    vec4 mu = vec4(mx.x == -F_INF ? 0.0 : mx.x, mx.y == -F_INF ? 0.0 : mx.y, mx.z == -F_INF ? 0.0 : mx.z,
                   mx.w == -F_INF ? 0.0 : mx.w);
    vec4 alpha = exp2(m - mu);
    m = mx;
    s0 = exp2(s0 - mu.x);
    s1 = exp2(s1 - mu.y);
    s2 = exp2(s2 - mu.z);
    s3 = exp2(s3 - mu.w);
    Ws[16u * GS + tx * GS + ty] = vec4(s0.x + s0.y + s0.z + s0.w, s1.x + s1.y + s1.z + s1.w, s2.x + s2.y + s2.z + s2.w,
                                    s3.x + s3.y + s3.z + s3.w);
#ifdef DROPOUT
    s0 *= keep_keys(z, u_row0 + r0, j0, s0);
    s1 *= keep_keys(z, u_row0 + r0 + 1u, j0, s1);
    s2 *= keep_keys(z, u_row0 + r0 + 2u, j0, s2);
    s3 *= keep_keys(z, u_row0 + r0 + 3u, j0, s3);
#endif
    STORE_PT(s0, s1, s2, s3)
    workgroup_sync();
    vec4 sum = vec4(0.0);
    for (uint t = 0u; t < 16u; ++t) sum += Ws[16u * GS + t * GS + ty];
    l = l * alpha + sum;
    for (uint u = 0u; u < NVQ; ++u) {
      o[4u * u] *= alpha.x;
      o[4u * u + 1u] *= alpha.y;
      o[4u * u + 2u] *= alpha.z;
      o[4u * u + 3u] *= alpha.w;
    }
    // O += P V, V in chunks of VK keys
    ACC_TILE(o, NVQ, DV4, VK, load3, v_off, u_v_ss, u_v_se, u_Ev, k0, kn, kend)
#else
    // dP = dO V^T, dS = P (dP Z - D), dQ += dS K
    vec4 g0 = vec4(0.0), g1 = vec4(0.0), g2 = vec4(0.0), g3 = vec4(0.0);
    GEMM_TILE(g0, g1, g2, g3, load5, o_off, u_o_sl, u_o_se, rblock, u_L, load3, v_off, u_v_ss, u_v_se, k0, kend, u_Ev)
    s0 = probs(s0, vec4(lse.x)), s1 = probs(s1, vec4(lse.y)), s2 = probs(s2, vec4(lse.z)), s3 = probs(s3, vec4(lse.w));
#ifdef DROPOUT
    vec4 z0 = keep_keys(z, r0, j0, s0), z1 = keep_keys(z, r0 + 1u, j0, s1), z2 = keep_keys(z, r0 + 2u, j0, s2),
         z3 = keep_keys(z, r0 + 3u, j0, s3);
#else
    vec4 z0 = vec4(1.0), z1 = z0, z2 = z0, z3 = z0;
#endif
    g0 = dscores(s0, g0, z0, vec4(D.x)), g1 = dscores(s1, g1, z1, vec4(D.y));
    g2 = dscores(s2, g2, z2, vec4(D.z)), g3 = dscores(s3, g3, z3, vec4(D.w));
    // (the last block's reads of Pt ended before the GEMMs' barriers)
    STORE_PT(g0, g1, g2, g3)
    ACC_TILE(dq, NQQ, DQ4, VKQ, load2, k_off, u_k_ss, u_k_se, u_E, k0, kn, kend)
#endif
  }
  // ---- the rows' results ----
  for (uint r = 0u; r < 4u; ++r) {
    uint rr = r0 + r;
    if (rr >= u_L) break;
#if MODE == tiled_fwd
    float mr = r == 0u ? m.x : r == 1u ? m.y : r == 2u ? m.z : m.w;
    float lr = r == 0u ? l.x : r == 1u ? l.y : r == 2u ? l.z : l.w;
#ifdef SPLIT
    uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_L + rr) * (u_Ev + 2u);
    STORE_ROW(o, NVQ, DV4, r, base, u_Ev, 1.0)
    if (tx == 0u) {
      store0(base + u_Ev, CT0(mr));
      store0(base + u_Ev + 1u, CT0(lr));
    }
#else
    STORE_ROW(o, NVQ, DV4, r, (z * u_L + rr) * u_Ev, u_Ev, 1.0 / lr)
    if (tx == 0u) store4(z * u_L + rr, mr + log2(lr));
#endif
#else
#ifdef SPLIT
    uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_L + rr) * u_E;
#else
    uint base = (z * u_L + rr) * u_E;
#endif
    STORE_ROW(dq, NQQ, DQ4, r, base, u_E, u_scale_e)
#endif
  }
#endif
}
