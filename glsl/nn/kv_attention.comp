// Attention of new queries over a KV cache, flash-decoding (Dao, Haziza, Massa, Sizov 2023):
// src/nn/kv_cache.cpp, include/gltensor/kv_cache.hpp.
//   kv_partial: one workgroup per (query row, chunk of CHUNK keys): WORKGROUP_ID.x = row
//     ((b * Hq + h) * T + t), WORKGROUP_ID.y = chunk. Query t of sequence b sees the keys
//     j < min(lengths[b] + t + 1, M) of K/V head h / u_group. The invocations score the chunk's
//     keys (strided by LOCAL_X, the query row in shared memory), reduce the max and the sum of
//     exp2 over the workgroup, then each sums p_j v_j for output elements tid, tid + LOCAL_X, ...
//     SINGLE (one chunk covers M): writes out [rows, Ev] = o / l directly; otherwise the
//     workspace f32 [chunks, rows, Ev + 2]: the unnormalized o, then m and l (log2 units).
//   kv_combine: one invocation per (row, element): out = sum_c 2^(m_c - m) o_c / sum_c 2^(m_c - m) l_c
//     with m the max of the chunks' m_c; chunks without keys (l_c = 0) add nothing.
// Scores are q . k times u_scale (softmax scale * log2(e)), exponentials exp2.
// Operands: kv_partial 0 out (SINGLE) or workspace, 1 q (strides u_q_st), 2 k_cache [B, Hkv, M, E],
// 3 v_cache [B, Hkv, M, Ev], 4 lengths (int32 [B]); kv_combine 0 out, 1 workspace.
// Loops (counted in kv_attention_plan): kv_partial ceil(E / LOCAL_X) + ceil(CHUNK / LOCAL_X) * (E + 1)
// + 2 log2(LOCAL_X) + ceil(Ev / LOCAL_X) * CHUNK; kv_combine 2 * chunks.
#define kv_partial 0
#define kv_combine 1
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_Ev;
#if MODE == kv_partial
uniform uint u_Hq;
uniform uint u_Hkv;
uniform uint u_group;  // Hq / Hkv
uniform uint u_T;
uniform uint u_M;
uniform uint u_E;
uniform uint u_q_st[4];
uniform uint u_q_off;
uniform float u_scale;

shared float qs[EMAX];
shared float s[CHUNK];
shared float red[LOCAL_X];

// max that keeps NaN (GLSL's max leaves it undefined)
float nan_max(float m, float x) { return is_nan(m) ? m : ((x > m || is_nan(x)) ? x : m); }

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint row = WORKGROUP_ID.x, chunk = WORKGROUP_ID.y;
  uint t = row % u_T, bh = row / u_T;
  uint h = bh % u_Hq, b = bh / u_Hq;
  uint kvh = b * u_Hkv + h / u_group;
  uint qb = u_q_off + b * u_q_st[0] + h * u_q_st[1] + t * u_q_st[2];
  for (uint e = tid; LOOP(e < u_E); e += LOCAL_X) qs[e] = float(load1(qb + e * u_q_st[3]));
  int len = load4(b);
  uint total = min(uint(max(len, 0)) + t + 1u, u_M);
  uint k0 = chunk * uint(CHUNK);
  uint n = total > k0 ? min(total - k0, uint(CHUNK)) : 0u;
  workgroup_sync();
  float m = -F_INF;
  for (uint j = tid; LOOP(j < n); j += LOCAL_X) {
    uint kb = (kvh * u_M + k0 + j) * u_E;
    float x = 0.0;
    for (uint e = 0u; LOOP(e < u_E); ++e) x += qs[e] * float(load2(kb + e));
    x *= u_scale;
    s[j] = x;
    m = nan_max(m, x);
  }
  red[tid] = m;
  workgroup_sync();
  for (uint w = LOCAL_X / 2u; w > 0u; w >>= 1u) {
    if (tid < w) red[tid] = nan_max(red[tid], red[tid + w]);
    workgroup_sync();
  }
  m = red[0];
  float mu = m == -F_INF ? 0.0 : m;  // no keys: keep exp2 away from inf - inf
  float l = 0.0;
  workgroup_sync();
  for (uint j = tid; LOOP(j < n); j += LOCAL_X) {
    float p = exp2(s[j] - mu);
    s[j] = p;
    l += p;
  }
  red[tid] = l;
  workgroup_sync();
  for (uint w = LOCAL_X / 2u; w > 0u; w >>= 1u) {
    if (tid < w) red[tid] += red[tid + w];
    workgroup_sync();
  }
  l = red[0];
  uint vb = kvh * u_M + k0;
  for (uint d = tid; LOOP(d < u_Ev); d += LOCAL_X) {
    float acc = 0.0;
    for (uint j = 0u; LOOP(j < n); ++j) acc += s[j] * float(load3((vb + j) * u_Ev + d));
#ifdef SINGLE
    store0(row * u_Ev + d, CT0(acc / l));
#else
    store0((chunk * u_rows + row) * (u_Ev + 2u) + d, CT0(acc));
#endif
  }
#ifndef SINGLE
  if (tid == 0u) {
    uint base = (chunk * u_rows + row) * (u_Ev + 2u) + u_Ev;
    store0(base, CT0(m));
    store0(base + 1u, CT0(l));
  }
#endif
}
#else
uniform uint u_chunks;

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_rows * u_Ev) return;
  uint row = i / u_Ev, d = i % u_Ev;
  uint W = u_Ev + 2u;
  float m = -F_INF;
  for (uint c = 0u; LOOP(c < u_chunks); ++c) {
    uint base = (c * u_rows + row) * W;
    if (float(load1(base + u_Ev + 1u)) != 0.0) {
      float mc = float(load1(base + u_Ev));
      m = is_nan(m) ? m : ((mc > m || is_nan(mc)) ? mc : m);
    }
  }
  float acc = 0.0, l = 0.0;
  for (uint c = 0u; LOOP(c < u_chunks); ++c) {
    uint base = (c * u_rows + row) * W;
    float lc = float(load1(base + u_Ev + 1u));
    if (lc == 0.0) continue;
    float a = exp2(float(load1(base + u_Ev)) - m);
    acc += a * float(load1(base + d));
    l += a * lc;
  }
  store0(i, CT0(acc / l));
}
#endif
