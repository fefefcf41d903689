// Softmax / log_softmax along one dim: one workgroup per row; two passes over the row (online
// max and normalizer, then write). Rows are addressed through the kept dims' strides (KD of them),
// the softmax dim through u_in_step / u_out_step, so any dim and any view works without a copy.
// LOG defined: log_softmax. NaN in a row makes the row NaN (as in PyTorch).
// ROW_QUADS (f32 rows contiguous and on 4-element boundaries, L <= 4 * NQ * LOCAL_X): one read
// of the row as 128-bit quads held in registers (NQ per invocation, all loads issued before any
// arithmetic), max and sum combined across the workgroup (subgroupMax / subgroupAdd where
// SUBGROUP, else a shared-memory tree), one 128-bit store per quad: the row is read once
// instead of twice (bench/RESULTS.md).
// ROW_REGS (any dtype, any strides, L <= NS * LOCAL_X): the same one-pass form for every other row,
// element i of the row in invocation i % LOCAL_X's registers (NS scalars each, loads strided by
// the workgroup: coalesced where the row is contiguous), e.g. odd lengths (the OCR recognizer's
// 6625 classes).
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_L;
#include "rows.glsl"
uniform uint u_in_step;
uniform uint u_out_step;

shared float s_m[LOCAL_X];
shared float s_s[LOCAL_X];

// Online softmax (Milakov & Gimelshein, "Online normalizer calculation for softmax", 2018): each
// invocation keeps a running (max, sum of exp(x - max)) over its elements; pairs combine as
// (M, s1 exp(m1 - M) + s2 exp(m2 - M)). Two passes over the row instead of three.
void combine(inout float m, inout float s, float m2, float s2) {
  if (is_nan(m) || is_nan(m2)) {
    m = F_NAN;
    s = F_NAN;
    return;
  }
  if (m2 == -F_INF) return;
  if (m == -F_INF) {
    m = m2;
    s = s2;
    return;
  }
  float M = max(m, m2);
  s = s * exp(m - M) + s2 * exp(m2 - M);
  m = M;
}

#if defined(ROW_QUADS) || defined(ROW_REGS)
// Workgroup maximum (MAX) or sum of v, returned to every invocation.
float workgroup_reduce(float v, bool MAX) {
#ifdef SUBGROUP
  v = MAX ? subgroupMax(v) : subgroupAdd(v);
  workgroup_sync();  // s_m is free (earlier readers are done)
  if (subgroupElect()) s_m[gl_SubgroupID] = v;
  workgroup_sync();
  v = s_m[0];
  for (uint k = 1u; k < gl_NumSubgroups; ++k) v = MAX ? max(v, s_m[k]) : v + s_m[k];
#else
  uint tid = gl_LocalInvocationID.x;
  workgroup_sync();
  s_m[tid] = v;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_m[tid] = MAX ? max(s_m[tid], s_m[tid + k]) : s_m[tid] + s_m[tid + k];
    workgroup_sync();
  }
  v = s_m[0];
#endif
  return v;
}
#endif

#ifdef ROW_REGS
void main() {
  uint row = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uvec2 rb = row_bases(row);
  uint bi = rb.x, bo = rb.y;
  float v[NS];
  for (uint k = 0u; k < NS; ++k) {
    uint i = tid + k * LOCAL_X;
    // The load clamped to the row's last element, its value past L replaced: no load past the
    // row's (or the tensor's) end, even one a ternary would discard.
    float x = float(load1(bi + min(i, u_L - 1u) * u_in_step));
    v[k] = i < u_L ? x : -F_INF;
  }
  // NaN, +Inf and rows of -Inf only: NaN rows, as ROW_QUADS (exp(NaN - m), exp(inf - inf)).
  float m = -F_INF;
  for (uint k = 0u; k < NS; ++k) m = max(m, v[k]);
  m = workgroup_reduce(m, true);
  float s = 0.0;
  for (uint k = 0u; k < NS; ++k) {
    float e = exp(v[k] - m);
    s += e;
#ifndef LOG
    v[k] = e;
#endif
  }
  s = workgroup_reduce(s, false);
#ifdef LOG
  float ls = log(s);  // (x - m) - log(s), as ROW_QUADS
  for (uint k = 0u; k < NS; ++k) {
    uint i = tid + k * LOCAL_X;
    if (i < u_L) store0(bo + i * u_out_step, CT0((v[k] - m) - ls));
  }
#else
  float inv = 1.0 / s;
  for (uint k = 0u; k < NS; ++k) {
    uint i = tid + k * LOCAL_X;
    if (i < u_L) store0(bo + i * u_out_step, CT0(v[k] * inv));
  }
#endif
}
#elif defined(ROW_QUADS)
void main() {
  uint row = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uvec2 rb = row_bases(row);
  uint bi = rb.x, bo = rb.y;
  uint nq = u_L / 4u;
  vec4 v[NQ];
  for (uint q = 0u; q < NQ; ++q) {
    uint i = tid + q * LOCAL_X;
    vec4 x = uintBitsToFloat(t14[bi / 4u + min(i, nq - 1u)]);  // clamped to the row's last quad
    v[q] = i < nq ? x : vec4(-F_INF);
  }
  // NaN: max may skip it, but exp(NaN - m) makes the sum, and so the row, NaN.
  float m = -F_INF;
  for (uint q = 0u; q < NQ; ++q) m = max(m, max(max(v[q].x, v[q].y), max(v[q].z, v[q].w)));
  m = workgroup_reduce(m, true);
  float s = 0.0;
  for (uint q = 0u; q < NQ; ++q) {
    vec4 e = exp(v[q] - m);
    s += (e.x + e.y) + (e.z + e.w);
#ifndef LOG
    v[q] = e;
#endif
  }
  s = workgroup_reduce(s, false);
#ifdef LOG
  // (x - m) - log(s), not x - (m + log(s)): m + log(s) would round to the ulp of m.
  float ls = log(s);
  for (uint q = 0u; q < NQ; ++q) {
    uint i = tid + q * LOCAL_X;
    if (i < nq) t04[bo / 4u + i] = floatBitsToUint((v[q] - m) - ls);
  }
#else
  float inv = 1.0 / s;
  for (uint q = 0u; q < NQ; ++q) {
    uint i = tid + q * LOCAL_X;
    if (i < nq) t04[bo / 4u + i] = floatBitsToUint(v[q] * inv);
  }
#endif
}
#else
void main() {
  uint row = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uvec2 rb = row_bases(row);
  uint bi = rb.x, bo = rb.y;
  float m = -F_INF, s = 0.0;
  for (uint i = tid; LOOP(i < u_L); i += LOCAL_X) {
    float x = float(load1(bi + i * u_in_step));
    if (x > m && !is_inf(x)) {  // new running max: one exp rescales the sum
      s = s * exp(m - x) + 1.0;
      m = x;
    } else if (x <= m && !is_inf(m)) {
      s += exp(x - m);
    } else {
      combine(m, s, x, 1.0);  // NaN and infinities
    }
  }
  s_m[tid] = m;
  s_s[tid] = s;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) {
      float a = s_m[tid], b = s_s[tid];
      combine(a, b, s_m[tid + k], s_s[tid + k]);
      s_m[tid] = a;
      s_s[tid] = b;
    }
    workgroup_sync();
  }
  m = s_m[0];
  s = s_s[0];
#ifdef LOG
  float ls = log(s);  // (x - m) - log(s), as above
  for (uint i = tid; LOOP(i < u_L); i += LOCAL_X)
    store0(bo + i * u_out_step, CT0((float(load1(bi + i * u_in_step)) - m) - ls));
#else
  float inv = 1.0 / s;
  for (uint i = tid; LOOP(i < u_L); i += LOCAL_X)
    store0(bo + i * u_out_step, CT0(exp(float(load1(bi + i * u_in_step)) - m) * inv));
#endif
}
#endif
