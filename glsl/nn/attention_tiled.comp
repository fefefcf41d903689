// Register-tiled flash attention forward, FlashAttention-2 (Dao 2023, "FlashAttention-2: Faster
// Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, Algorithm 1): the
// same results as attention_flash.comp's attn_fwd (out and the row logsumexp lse, or SPLIT's
// partials; masks, causal, dropout, GQA through the batch dims), computed by a workgroup of 256
// invocations per block of BR = 64 query rows, looping over blocks of BC = 64 keys:
//   S = Q K^T for the block as a GEMM over the head dim in chunks of DK elements staged in shared
//     memory (Q and K quads, 4 rows or keys per vec4); invocation (tx, ty) = (tid % 16, tid / 16)
//     owns the 4x4 register tile of rows 4ty..4ty+3 and keys 4tx..4tx+3;
//   the online softmax's row maxima and sums reduced over the 16 invocations sharing a row
//     through shared memory; P (dropped out where DROPOUT) written to shared memory as P^T quads;
//   O += P V: the invocation owns rows 4ty..4ty+3 times the output quads tx + 16u (u < NVQ) in
//     registers; V staged in chunks of VK keys (VK * DV4 quads in the work area).
// Shared memory: P^T (BC x 16 quads, 16 KiB) and a work area of WS = 1024 quads (16 KiB: 2 DK x 16
// for Q and K, 2 x 256 for the statistics, VK x DV4 <= 1024 for V) that holds the Q/K chunks, then the row statistics, then
// the V chunks (barriers between). 32 KiB in all (llvmpipe's limit; GL's minimum is 16 KiB).
// Scores are in log2 units: q k^T times scale * log2(e) (u_scale), plus an additive mask times
// log2(e); causal: key j is seen by row i iff j <= i (top-left). A row whose keys are all masked
// gives NaN (0 / 0, as torch).
// Operands: 0 out, 1 q, 2 k, 3 v (strided, batch via BD dims), 4 lse (not SPLIT), then the mask
// (LOAD_MASK). SPLIT: keys in chunks of u_chunk (a multiple of BC), chunk WORKGROUP_ID.z; out is
// f32 [chunks, batch, L, Ev + 2]: per row the unnormalized sum, m and l (combined on the host).
layout(local_size_x = LOCAL_X) in;

#define BR 64u
#define BC 64u
#define DK 32u  // a multiple of 16 (the Q/K chunk loads: 16 elements per pass)
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

shared vec4 Pt[BC * 16u];  // P^T: Pt[j * 16 + rq] = rows 4rq..4rq+3 of key j
shared vec4 Ws[WS];        // work area: Q/K chunks, row statistics, V chunks

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16u, ty = tid / 16u;
  uint z = WORKGROUP_ID.y;
  uint q_off = u_q_off, k_off = u_k_off, v_off = u_v_off, zz = z;
#ifdef HAS_MASK
  uint m_off = u_m_off;
#else
  uint m_off = 0u;
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
  }
  uint rblock = WORKGROUP_ID.x * BR;  // the block's first row (in q's narrowed rows)
  uint r0 = rblock + 4u * ty;         // this invocation's first row
  // the output accumulators: o[4u * u + r] = row r0 + r, quad tx + 16u
  vec4 o[4u * NVQ];
  for (uint c = 0u; c < 4u * NVQ; ++c) o[c] = vec4(0.0);
  vec4 m = vec4(-F_INF), l = vec4(0.0);  // the 4 rows' running max and sum
#ifdef SPLIT
  uint kbegin = WORKGROUP_ID.z * u_chunk, kend = min(u_S, kbegin + u_chunk);
#else
  uint kbegin = 0u, kend = u_S;
#endif
  // causal: keys after the block's last row are seen by none of its rows
  if (u_causal != 0) kend = min(kend, u_row0 + rblock + BR);
  uint nd = (u_E + DK - 1u) / DK;
  // the Q/K chunk loads: quad lq (rows or keys 4lq..4lq+3) of head-dim element ld (+ 16 for the second)
  uint ld = tid % 16u, lq = tid / 16u;
  for (uint k0 = kbegin; LOOP(k0 < kend); k0 += BC) {
    // ---- S = Q K^T: the 4x4 tile s[r] (row r0 + r, keys k0 + 4tx..4tx+3) ----
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    for (uint dc = 0u; LOOP(dc < nd); ++dc) {
      workgroup_sync();
      for (uint h = 0u; h < DK / 16u; ++h) {
        uint e = dc * DK + ld + 16u * h;
        uint a = (ld + 16u * h) * 16u + lq;
        vec4 qv = vec4(0.0), kv = vec4(0.0);
        if (e < u_E) {
          uint rq = rblock + 4u * lq, kq = k0 + 4u * lq;
          uint qb = q_off + e * u_q_se, kb = k_off + e * u_k_se;
          qv = vec4(rq < u_L ? float(load1(qb + rq * u_q_sl)) : 0.0,
                    rq + 1u < u_L ? float(load1(qb + (rq + 1u) * u_q_sl)) : 0.0,
                    rq + 2u < u_L ? float(load1(qb + (rq + 2u) * u_q_sl)) : 0.0,
                    rq + 3u < u_L ? float(load1(qb + (rq + 3u) * u_q_sl)) : 0.0);
          kv = vec4(kq < kend ? float(load2(kb + kq * u_k_ss)) : 0.0,
                    kq + 1u < kend ? float(load2(kb + (kq + 1u) * u_k_ss)) : 0.0,
                    kq + 2u < kend ? float(load2(kb + (kq + 2u) * u_k_ss)) : 0.0,
                    kq + 3u < kend ? float(load2(kb + (kq + 3u) * u_k_ss)) : 0.0);
        }
        Ws[a] = qv;
        Ws[DK * 16u + a] = kv;
      }
      workgroup_sync();
      for (uint d = 0u; d < DK; ++d) {
        vec4 a = Ws[d * 16u + ty], b = Ws[DK * 16u + d * 16u + tx];
        s0 += a.x * b;
        s1 += a.y * b;
        s2 += a.z * b;
        s3 += a.w * b;
      }
    }
    // ---- scale, mask, causal; the rows' maxima ----
    uint j0 = k0 + 4u * tx;
#define SCORES(s, r)                                                                                  \
  {                                                                                                   \
    uint rr = r0 + r;                                                                                 \
    uint gi = u_row0 + rr;                                                                            \
    bool row_live = rr < u_L;                                                                         \
    s = vec4(row_live && j0 < kend && !(u_causal != 0 && j0 > gi) ? s.x * u_scale + bias(m_off, rr, j0) \
                                                                  : -F_INF,                           \
             row_live && j0 + 1u < kend && !(u_causal != 0 && j0 + 1u > gi)                           \
                 ? s.y * u_scale + bias(m_off, rr, j0 + 1u)                                           \
                 : -F_INF,                                                                            \
             row_live && j0 + 2u < kend && !(u_causal != 0 && j0 + 2u > gi)                           \
                 ? s.z * u_scale + bias(m_off, rr, j0 + 2u)                                           \
                 : -F_INF,                                                                            \
             row_live && j0 + 3u < kend && !(u_causal != 0 && j0 + 3u > gi)                           \
                 ? s.w * u_scale + bias(m_off, rr, j0 + 3u)                                           \
                 : -F_INF);                                                                           \
  }
    SCORES(s0, 0u)
    SCORES(s1, 1u)
    SCORES(s2, 2u)
    SCORES(s3, 3u)
    workgroup_sync();  // the GEMM's reads of the work area are done
    Ws[tx * 16u + ty] = vec4(nan_max4(-F_INF, s0), nan_max4(-F_INF, s1), nan_max4(-F_INF, s2), nan_max4(-F_INF, s3));
    workgroup_sync();
    vec4 mx = m;
    for (uint t = 0u; t < 16u; ++t) {
      vec4 w = Ws[t * 16u + ty];
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
    Ws[256u + tx * 16u + ty] = vec4(s0.x + s0.y + s0.z + s0.w, s1.x + s1.y + s1.z + s1.w, s2.x + s2.y + s2.z + s2.w,
                                    s3.x + s3.y + s3.z + s3.w);
#ifdef DROPOUT
#define DROP(s, r)                                                                                 \
  {                                                                                                \
    uint gi = u_row0 + r0 + r;                                                                     \
    s = vec4(s.x != 0.0 ? s.x * keep_scale(z, gi, j0) : 0.0, s.y != 0.0 ? s.y * keep_scale(z, gi, j0 + 1u) : 0.0, \
             s.z != 0.0 ? s.z * keep_scale(z, gi, j0 + 2u) : 0.0,                                    \
             s.w != 0.0 ? s.w * keep_scale(z, gi, j0 + 3u) : 0.0);                                   \
  }
    DROP(s0, 0u)
    DROP(s1, 1u)
    DROP(s2, 2u)
    DROP(s3, 3u)
#endif
    Pt[(4u * tx) * 16u + ty] = vec4(s0.x, s1.x, s2.x, s3.x);
    Pt[(4u * tx + 1u) * 16u + ty] = vec4(s0.y, s1.y, s2.y, s3.y);
    Pt[(4u * tx + 2u) * 16u + ty] = vec4(s0.z, s1.z, s2.z, s3.z);
    Pt[(4u * tx + 3u) * 16u + ty] = vec4(s0.w, s1.w, s2.w, s3.w);
    workgroup_sync();
    vec4 sum = vec4(0.0);
    for (uint t = 0u; t < 16u; ++t) sum += Ws[256u + t * 16u + ty];
    l = l * alpha + sum;
    for (uint u = 0u; u < NVQ; ++u) {
      o[4u * u] *= alpha.x;
      o[4u * u + 1u] *= alpha.y;
      o[4u * u + 2u] *= alpha.z;
      o[4u * u + 3u] *= alpha.w;
    }
    // ---- O += P V, V in chunks of VK keys ----
    uint kn = min(BC, kend - k0);
    for (uint v0 = 0u; LOOP(v0 < kn); v0 += VK) {
      workgroup_sync();  // the statistics' (first chunk) or the last chunk's reads are done
      for (uint e = tid; e < VK * DV4; e += LOCAL_X) {
        uint jj = k0 + v0 + e / DV4, c = e % DV4;
        uint b = v_off + jj * u_v_ss + 4u * c * u_v_se;
        bool in_ = jj < kend;
        Ws[e] = vec4(in_ && 4u * c < u_Ev ? float(load3(b)) : 0.0,
                     in_ && 4u * c + 1u < u_Ev ? float(load3(b + u_v_se)) : 0.0,
                     in_ && 4u * c + 2u < u_Ev ? float(load3(b + 2u * u_v_se)) : 0.0,
                     in_ && 4u * c + 3u < u_Ev ? float(load3(b + 3u * u_v_se)) : 0.0);
      }
      workgroup_sync();
      uint vn = min(VK, kn - v0);
      for (uint jj = 0u; LOOP(jj < vn); ++jj) {
        vec4 p = Pt[(v0 + jj) * 16u + ty];
        for (uint u = 0u; u < NVQ; ++u) {
          vec4 w = Ws[jj * DV4 + min(tx + 16u * u, DV4 - 1u)];
          o[4u * u] += p.x * w;
          o[4u * u + 1u] += p.y * w;
          o[4u * u + 2u] += p.z * w;
          o[4u * u + 3u] += p.w * w;
        }
      }
    }
  }
  // ---- the rows' results ----
  for (uint r = 0u; r < 4u; ++r) {
    uint rr = r0 + r;
    if (rr >= u_L) break;
    float mr = r == 0u ? m.x : r == 1u ? m.y : r == 2u ? m.z : m.w;
    float lr = r == 0u ? l.x : r == 1u ? l.y : r == 2u ? l.z : l.w;
#ifdef SPLIT
    uint base = ((WORKGROUP_ID.z * u_grid.y + z) * u_L + rr) * (u_Ev + 2u);
    float inv = 1.0;
#else
    uint base = (z * u_L + rr) * u_Ev;
    float inv = 1.0 / lr;
#endif
    for (uint u = 0u; u < NVQ; ++u) {
      uint c = tx + 16u * u;
      vec4 w = r == 0u ? o[4u * u] : r == 1u ? o[4u * u + 1u] : r == 2u ? o[4u * u + 2u] : o[4u * u + 3u];
      w *= inv;
      if (c < DV4) {
        if (4u * c < u_Ev) store0(base + 4u * c, CT0(w.x));
        if (4u * c + 1u < u_Ev) store0(base + 4u * c + 1u, CT0(w.y));
        if (4u * c + 2u < u_Ev) store0(base + 4u * c + 2u, CT0(w.z));
        if (4u * c + 3u < u_Ev) store0(base + 4u * c + 3u, CT0(w.w));
      }
    }
    if (tx == 0u) {
#ifdef SPLIT
      store0(base + u_Ev, CT0(mr));
      store0(base + u_Ev + 1u, CT0(lr));
#else
      store4(z * u_L + rr, mr + log2(lr));
#endif
    }
  }
}
