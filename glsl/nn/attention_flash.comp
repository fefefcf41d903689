// Fused scaled-dot-product attention with masks, dropout, head dims up to 256 and its backward,
// FlashAttention-2 (Dao 2023, "FlashAttention-2: Faster Attention with Better Parallelism and
// Work Partitioning", arXiv 2307.08691): the [L, S] scores are never stored; the backward
// recomputes the probabilities P = exp2(S - lse) tile by tile from the forward's row logsumexp.
// One invocation owns one row (a query row: MODE attn_fwd, attn_dq; a key row: attn_dkv) and
// keeps it and its accumulators in registers; the other side streams through shared memory in
// tiles (keys: BKV per tile; query rows: BQT per tile). Scores are in log2 units: q k^T times
// scale * log2(e) (u_scale), plus an additive mask times log2(e).
//   attn_fwd: out = softmax(S) V per row with the online softmax (running max m and sum l);
//     lse (operand 4, f32 [batch, L]) = m + log2(l). SPLIT: the keys in chunks of u_chunk (a
//     multiple of BKV), chunk WORKGROUP_ID.z; out is then f32 [chunks, batch, L, Ev + 2]: per row
//     the unnormalized sum (Ev values), m and l (combined on the host); no lse operand.
//   attn_dkv: per key j: dV_j = sum_i P_ij Z_ij dO_i, dK_j = scale sum_i dS_ij q_i with
//     dS_ij = P_ij (Z_ij dO_i . v_j - D_i), D_i = dO_i . O_i; out f32 [chunks, batch, S, E + Ev]
//     (dK then dV), SPLIT over query rows in chunks of u_chunk (summed on the host).
//   attn_dq: per query row i: dQ_i = scale sum_j dS_ij k_j; out f32 [chunks, batch, L, E], SPLIT
//     over keys as attn_fwd.
// Masks (MASK_BOOL: keep where nonzero; MASK_ADD: added), read per (row, key) with the mask's
// own strides (broadcast dims have stride 0). Causal: key j is seen by row i iff j <= i (top-left,
// as torch: tril(ones(L, S))). Dropout (DROPOUT): Z_ij = 1 / u_keep with probability u_keep, else
// 0, from Philox4x32-10 (as random.comp) on counter (j, i, batch, u_doff) and key u_seed, so that
// the backward and attention_dropout_keep (tests) regenerate the forward's mask.
// A row whose keys are all masked gives NaN (0 / 0, as torch) and adds nothing to the gradients.
// Operands: 0 out, 1 q, 2 k, 3 v (strided, batch via BD dims), then attn_fwd: lse (not SPLIT);
// attn_dkv / attn_dq: 4 stats (f32 [batch, L, 2]: lse, D), 5 dO; then the mask (LOAD_MASK).
#define attn_fwd 0
#define attn_dkv 1
#define attn_dq 2
#define attn_keep 3
layout(local_size_x = LOCAL_X) in;

const float LOG2E = 1.4426950408889634;

uniform uint u_L;
uniform uint u_S;
uniform uint u_E;
uniform uint u_Ev;
uniform int u_causal;
uniform uint u_row0;  // attn_fwd, attn_keep: the global index of row 0 (blocks of query rows)
#if MODE != attn_keep
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
uniform float u_scale_e;  // softmax scale
uniform uint u_chunk;   // SPLIT
// DQ4 and DV4 as uniforms: the head-dim loops' bounds (constant bounds made llvmpipe unroll
// them, taking minutes to compile the 256-wide kernels)
uniform uint u_dq4;
uniform uint u_dv4;
// CONST_DIMS (GPUs): the bounds are the constants DQ4 and DV4 (equal to the uniforms), so that
// the compiler can unroll the loops and keep the per-row arrays (qr, o, dq, ...) in registers.
#ifdef CONST_DIMS
#define NQ4 DQ4
#define NV4 DV4
#else
#define NQ4 u_dq4
#define NV4 u_dv4
#endif
#endif
#if MODE == attn_dkv || MODE == attn_dq
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
#if defined(DROPOUT) || MODE == attn_keep
uniform uvec2 u_seed;
uniform uint u_doff;
uniform float u_keep;  // 1 - dropout_p

#include "philox.glsl"
// Z for (batch z, global row i, key j): 1 / keep or 0.
float keep_scale(uint z, uint i, uint j) {
  uint x = philox(uvec4(j, i, z, u_doff), u_seed).x;
  return (float(x >> 8) + 1.0) * (1.0 / 16777216.0) <= u_keep ? 1.0 / u_keep : 0.0;
}
#endif

#if MODE == attn_keep
uniform uint u_count;
// The dropout scales Z [batch, L, S] (out, f32) as the kernels below draw them (tests).
void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  uint j = e % u_S, i = (e / u_S) % u_L, z = e / (u_S * u_L);
  store0(e, CT0(keep_scale(z, u_row0 + i, j)));
}
#else

// Quad dq (elements 4dq..4dq+3, zero past n) of a row starting at element b with stride st: the
// elements' indices clamped to the row's last (n - 1), the values past n replaced by a boolean
// mix (no load past the row's or the tensor's end, even one a ternary would discard). The rows'
// own indices are clamped by the callers (a row past the range loads the range's last row).
#define QUAD(LOAD, b, st, dq, n)                                                                    \
  mix(vec4(0.0),                                                                                    \
      vec4(float(LOAD((b) + min(4u * (dq), (n) - 1u) * (st))),                                      \
           float(LOAD((b) + min(4u * (dq) + 1u, (n) - 1u) * (st))),                                 \
           float(LOAD((b) + min(4u * (dq) + 2u, (n) - 1u) * (st))),                                 \
           float(LOAD((b) + min(4u * (dq) + 3u, (n) - 1u) * (st)))),                                \
      lessThan(uvec4(4u * (dq)) + uvec4(0u, 1u, 2u, 3u), uvec4(n)))

// Stores quad dq of a row (elements 4dq..4dq+3 below n) at b. The arrays are stored a quad at a
// time, never indexed by an element counter: an element index into a register array (a[c / 4][c
// % 4]) makes NVIDIA's compiler keep the whole array in local memory, in every loop that uses it
// (this kernel ran 20-100x slower than PyTorch's SDPA on the H100 with such stores).
#define STORE_QUAD(b, dq, n, value)                                                     \
  {                                                                                     \
    vec4 quad_ = (value);                                                               \
    if (4u * (dq) < (n)) store0((b) + 4u * (dq), CT0(quad_.x));                          \
    if (4u * (dq) + 1u < (n)) store0((b) + 4u * (dq) + 1u, CT0(quad_.y));                \
    if (4u * (dq) + 2u < (n)) store0((b) + 4u * (dq) + 2u, CT0(quad_.z));                \
    if (4u * (dq) + 3u < (n)) store0((b) + 4u * (dq) + 3u, CT0(quad_.w));                \
  }

// The score bias of (row i, key j) of this batch entry (mask offset moff), log2 units.
float bias(uint moff, uint i, uint j) {
#if defined(MASK_BOOL)
  return LOAD_MASK(moff + i * u_m_sl + j * u_m_ss) != 0 ? 0.0 : -F_INF;
#elif defined(MASK_ADD)
  return float(LOAD_MASK(moff + i * u_m_sl + j * u_m_ss)) * LOG2E;
#else
  return 0.0;
#endif
}

// max that keeps NaN (GLSL's max leaves it undefined)
float nan_max(float m, float x) { return is_nan(m) ? m : ((x > m || is_nan(x)) ? x : m); }

#if MODE == attn_dkv
shared vec4 Qs[BQT * DQ4];
shared vec4 Os[BQT * DV4];
shared vec2 St[BQT];
#else
shared vec4 Ks[BKV * DQ4];
shared vec4 Vs[BKV * DV4];
#endif

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint z = WORKGROUP_ID.y;
  uint q_off = u_q_off, k_off = u_k_off, v_off = u_v_off, zz = z;
#ifdef HAS_MASK
  uint m_off = u_m_off;
#else
  uint m_off = 0u;
#endif
#if MODE != attn_fwd
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
#if MODE != attn_fwd
    o_off += i * u_bstride_o[d];
#endif
  }
#if MODE == attn_dkv
  // ---- key row j: dK_j, dV_j over the query rows of this chunk ----
  uint j = WORKGROUP_ID.x * LOCAL_X + tid;
  bool live = j < u_S;
  vec4 kr[DQ4], vr[DV4], dk[DQ4], dv[DV4];
  for (uint c = 0u; c < NQ4; ++c) {
    kr[c] = live ? QUAD(load2, k_off + min(j, u_S - 1u) * u_k_ss, u_k_se, c, u_E) : vec4(0.0);
    dk[c] = vec4(0.0);
  }
  for (uint c = 0u; c < NV4; ++c) {
    vr[c] = live ? QUAD(load3, v_off + min(j, u_S - 1u) * u_v_ss, u_v_se, c, u_Ev) : vec4(0.0);
    dv[c] = vec4(0.0);
  }
#ifdef SPLIT
  uint ibegin = WORKGROUP_ID.z * u_chunk, iend = min(u_L, ibegin + u_chunk);
#else
  uint ibegin = 0u, iend = u_L;
#endif
  // causal: rows before the tile's first key see none of its keys
  if (u_causal != 0) ibegin = max(ibegin, WORKGROUP_ID.x * LOCAL_X);
  for (uint i0 = ibegin; LOOP(i0 < iend); i0 += BQT) {
    workgroup_sync();
    for (uint e = tid; e < BQT * DQ4; e += LOCAL_X) {
      uint r = i0 + e / DQ4;
      Qs[e] = r < iend ? QUAD(load1, q_off + min(r, iend - 1u) * u_q_sl, u_q_se, e % DQ4, u_E) : vec4(0.0);
    }
    for (uint e = tid; e < BQT * DV4; e += LOCAL_X) {
      uint r = i0 + e / DV4;
      Os[e] = r < iend ? QUAD(load5, o_off + min(r, iend - 1u) * u_o_sl, u_o_se, e % DV4, u_Ev) : vec4(0.0);
    }
    for (uint e = tid; e < BQT; e += LOCAL_X) {
      uint r = i0 + e, rc = min(r, iend - 1u);
      vec2 st = vec2(load4(2u * (z * u_L + rc)), load4(2u * (z * u_L + rc) + 1u));
      St[e] = r < iend ? st : vec2(0.0);
    }
    workgroup_sync();
    for (uint r = 0u; r < BQT; ++r) {
      uint i = i0 + r;
      bool seen = live && i < iend && !(u_causal != 0 && j > i);
      float x = 0.0;
      for (uint c = 0u; c < NQ4; ++c) x += dot(Qs[r * DQ4 + c], kr[c]);
      x = seen ? x * u_scale + bias(m_off, min(i, u_L - 1u), min(j, u_S - 1u)) : -F_INF;
      float p = x == -F_INF ? 0.0 : exp2(x - St[r].x);
#ifdef DROPOUT
      float zd = seen ? keep_scale(z, i, j) : 0.0;
#else
      float zd = 1.0;
#endif
      float dp = 0.0;
      for (uint c = 0u; c < NV4; ++c) {
        vec4 g = Os[r * DV4 + c];
        dp += dot(g, vr[c]);
        dv[c] += (p * zd) * g;
      }
      float ds = p != 0.0 ? p * (dp * zd - St[r].y) : 0.0;
      for (uint c = 0u; c < NQ4; ++c) dk[c] += ds * Qs[r * DQ4 + c];
    }
  }
  if (!live) return;
  uint EE = u_E + u_Ev;
#ifdef SPLIT
  uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_S + j) * EE;
#else
  uint base = (z * u_S + j) * EE;
#endif
  for (uint c = 0u; c < NQ4; ++c) STORE_QUAD(base, c, u_E, dk[c] * u_scale_e);
  for (uint c = 0u; c < NV4; ++c) STORE_QUAD(base + u_E, c, u_Ev, dv[c]);
#else
  // ---- query row r (global row i): the output (attn_fwd) or dQ (attn_dq) over this chunk's keys ----
  uint r = WORKGROUP_ID.x * LOCAL_X + tid;
  uint i = u_row0 + r;
  bool live = r < u_L;
  vec4 qr[DQ4];
  for (uint c = 0u; c < NQ4; ++c) qr[c] = live ? QUAD(load1, q_off + min(r, u_L - 1u) * u_q_sl, u_q_se, c, u_E) : vec4(0.0);
#if MODE == attn_fwd
  vec4 o[DV4];
  for (uint c = 0u; c < NV4; ++c) o[c] = vec4(0.0);
  float m = -F_INF, l = 0.0;
#else
  vec4 gr[DV4], dq[DQ4];
  for (uint c = 0u; c < NV4; ++c) gr[c] = live ? QUAD(load5, o_off + min(r, u_L - 1u) * u_o_sl, u_o_se, c, u_Ev) : vec4(0.0);
  for (uint c = 0u; c < NQ4; ++c) dq[c] = vec4(0.0);
  uint rc = min(r, u_L - 1u);
  vec2 st = vec2(load4(2u * (z * u_L + rc)), load4(2u * (z * u_L + rc) + 1u));
  st = live ? st : vec2(0.0);
#endif
#ifdef SPLIT
  uint kbegin = WORKGROUP_ID.z * u_chunk, kend = min(u_S, kbegin + u_chunk);
#else
  uint kbegin = 0u, kend = u_S;
#endif
  // causal: keys after the block's last row are seen by none of its rows
  if (u_causal != 0) kend = min(kend, u_row0 + (WORKGROUP_ID.x + 1u) * LOCAL_X);
  for (uint k0 = kbegin; LOOP(k0 < kend); k0 += BKV) {
    workgroup_sync();
    for (uint e = tid; e < BKV * DQ4; e += LOCAL_X) {
      uint jj = k0 + e / DQ4;
      Ks[e] = jj < kend ? QUAD(load2, k_off + min(jj, kend - 1u) * u_k_ss, u_k_se, e % DQ4, u_E) : vec4(0.0);
    }
    for (uint e = tid; e < BKV * DV4; e += LOCAL_X) {
      uint jj = k0 + e / DV4;
      Vs[e] = jj < kend ? QUAD(load3, v_off + min(jj, kend - 1u) * u_v_ss, u_v_se, e % DV4, u_Ev) : vec4(0.0);
    }
    workgroup_sync();
#if MODE == attn_fwd
    float s[BKV];
    float mx = m;
    for (uint jt = 0u; jt < BKV; ++jt) {
      uint j = k0 + jt;
      float x = 0.0;
      for (uint c = 0u; c < NQ4; ++c) x += dot(qr[c], Ks[jt * DQ4 + c]);
      bool seen = live && j < kend && !(u_causal != 0 && j > i);
      x = seen ? x * u_scale + bias(m_off, min(r, u_L - 1u), min(j, u_S - 1u)) : -F_INF;
      s[jt] = x;
      mx = nan_max(mx, x);
    }
    float mu = mx == -F_INF ? 0.0 : mx;  // rows with no key yet keep exp2 away from inf - inf
    float alpha = exp2(m - mu);
    m = mx;
    l *= alpha;
    for (uint c = 0u; c < NV4; ++c) o[c] *= alpha;
    for (uint jt = 0u; jt < BKV; ++jt) {
      float p = exp2(s[jt] - mu);
      l += p;
#ifdef DROPOUT
      if (p != 0.0) p *= keep_scale(z, i, k0 + jt);
#endif
      for (uint c = 0u; c < NV4; ++c) o[c] += p * Vs[jt * DV4 + c];
    }
#else
    for (uint jt = 0u; jt < BKV; ++jt) {
      uint j = k0 + jt;
      float x = 0.0;
      for (uint c = 0u; c < NQ4; ++c) x += dot(qr[c], Ks[jt * DQ4 + c]);
      bool seen = live && j < kend && !(u_causal != 0 && j > i);
      x = seen ? x * u_scale + bias(m_off, min(r, u_L - 1u), min(j, u_S - 1u)) : -F_INF;
      float p = x == -F_INF ? 0.0 : exp2(x - st.x);
#ifdef DROPOUT
      float zd = p != 0.0 ? keep_scale(z, i, j) : 0.0;
#else
      float zd = 1.0;
#endif
      float dp = 0.0;
      for (uint c = 0u; c < NV4; ++c) dp += dot(gr[c], Vs[jt * DV4 + c]);
      float ds = p != 0.0 ? p * (dp * zd - st.y) : 0.0;
      for (uint c = 0u; c < NQ4; ++c) dq[c] += ds * Ks[jt * DQ4 + c];
    }
#endif
  }
  if (!live) return;
#if MODE == attn_fwd
#ifdef SPLIT
  uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_L + r) * (u_Ev + 2u);
  for (uint c = 0u; c < NV4; ++c) STORE_QUAD(base, c, u_Ev, o[c]);
  store0(base + u_Ev, CT0(m));
  store0(base + u_Ev + 1u, CT0(l));
#else
  uint base = (z * u_L + r) * u_Ev;
  for (uint c = 0u; c < NV4; ++c) STORE_QUAD(base, c, u_Ev, o[c] / l);
  store4(z * u_L + r, m + log2(l));
#endif
#else
#ifdef SPLIT
  uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_L + r) * u_E;
#else
  uint base = (z * u_L + r) * u_E;
#endif
  for (uint c = 0u; c < NQ4; ++c) STORE_QUAD(base, c, u_E, dq[c] * u_scale_e);
#endif
#endif
}
#endif
