// Fused scaled-dot-product attention for problems of few rows (inference: no mask, dropout or
// GQA; head dims E (q, k) and Ev (v) <= 4 * DQ <= 64), the keys split over the lanes of a row:
// one workgroup computes R = LOCAL_X / G query rows of one batch entry, each row by G
// consecutive lanes; keys and values stream through shared memory in tiles of T = G * KPL keys,
// lane g of a row taking keys g, g + G, ... of each tile (KPL per tile) with its own online
// softmax (running maximum m and sum l; scores prescaled by scale * log2(e), so exp2). After the
// last tile the G lanes of a row are combined in shared memory (Milakov & Gimelshein 2018,
// "Online normalizer calculation for softmax": o = sum_g o_g 2^(m_g - M) / sum_g l_g 2^(m_g - M),
// M the largest m_g), and the workgroup's R rows x Ev outputs, one contiguous span of the
// output, are stored by consecutive invocations at consecutive addresses (whole lines: where a
// replay's output lives in host memory, scattered stores cost the H200 ~30 us).
// FlashDecoding's split of the keys (Dao et al. 2023) inside one workgroup: where the row
// blocks of attention.comp are few (SVTR's 8 heads x 168 rows: 24 workgroups of 3 key tiles
// each), rows of G lanes give many workgroups with short serial work each, and no combine
// dispatch.
// Head dims are zero padded to DQ quads (4, 8 or 16: attention_plan's attention_head_quads); q's
// row lives in registers (each lane of a row loads it), o has DQ quads per lane.
// Shared memory: the K tile then the V tile, quad dq of key j at j * DQ + (dq ^ SWZ(j)), so that
// 8 consecutive keys (a row's lanes) read one quad each from 8 distinct groups of 4 banks; the
// combine reuses it as [DQ][LOCAL_X] quads (SH_QUADS: the larger of the two, host-computed).
// Causal: key j is seen by query i iff j <= i (top-left aligned, as torch); tiles past the
// block's last query are skipped.
// Operands: 0 out [batch, L, Ev] contiguous, 1 q, 2 k, 3 v (strided, batch via BD dims);
// Q_QUADS / KV_QUADS: q / k and v also bound as vec4 arrays qQ / qK, qV at the next bindings
// (4, 5, 6 with all three).
layout(local_size_x = LOCAL_X) in;
#define GU uint(G)
#define KPLU uint(KPL)
#define DQU uint(DQ)
#define RQ (LOCAL_X / GU)  // rows per workgroup
#define TK (GU * KPLU)     // keys per tile
#define NL (TK * DQU / LOCAL_X)  // K (and V) quads each invocation loads per tile
#if DQ == 4
#define SWZ(j) (((j) >> 1u) & 3u)
#else
#define SWZ(j) ((j) & 7u)
#endif

uniform uint u_L;
uniform uint u_S;
uniform uint u_E;
uniform uint u_Ev;
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
uniform int u_causal;

shared vec4 sh[SH_QUADS];  // K tile at 0, V tile at TK * DQ; then the combine's [DQ][LOCAL_X]
shared float red_m[LOCAL_X];
shared float red_l[LOCAL_X];
#define KS(j, dq) sh[(j) * DQU + ((dq) ^ SWZ(j))]
#define VS(j, dq) sh[TK * DQU + (j) * DQU + ((dq) ^ SWZ(j))]

// Quad dq (dims 4dq..4dq+3, zero past E or past the rows) of q row r, k row j, v row j.
vec4 q_quad(uint off, uint r, uint dq) {
  if (r >= u_L) return vec4(0.0);
#ifdef Q_QUADS
  if (4u * dq >= u_E) return vec4(0.0);
  return qQ[(off + r * u_q_sl) / 4u + dq];
#else
  vec4 x = vec4(0.0);
  for (uint c = 0u; c < 4u; ++c)
    if (4u * dq + c < u_E) x[c] = float(load1(off + r * u_q_sl + (4u * dq + c) * u_q_se));
  return x;
#endif
}
vec4 k_quad(uint off, uint j, uint dq) {
  if (j >= u_S) return vec4(0.0);
#ifdef KV_QUADS
  if (4u * dq >= u_E) return vec4(0.0);
  return qK[(off + j * u_k_ss) / 4u + dq];
#else
  vec4 x = vec4(0.0);
  for (uint c = 0u; c < 4u; ++c)
    if (4u * dq + c < u_E) x[c] = float(load2(off + j * u_k_ss + (4u * dq + c) * u_k_se));
  return x;
#endif
}
vec4 v_quad(uint off, uint j, uint dq) {
  if (j >= u_S) return vec4(0.0);
#ifdef KV_QUADS
  if (4u * dq >= u_Ev) return vec4(0.0);
  return qV[(off + j * u_v_ss) / 4u + dq];
#else
  vec4 x = vec4(0.0);
  for (uint c = 0u; c < 4u; ++c)
    if (4u * dq + c < u_Ev) x[c] = float(load3(off + j * u_v_ss + (4u * dq + c) * u_v_se));
  return x;
#endif
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint row = tid / GU, g = tid % GU;
  uint nqb = (u_L + RQ - 1u) / RQ;
  uint q0 = (nqb - 1u - WORKGROUP_ID.x) * RQ;  // longest causal blocks first
  uint z = WORKGROUP_ID.y;
  uint q_off = u_q_off, k_off = u_k_off, v_off = u_v_off, zz = z;
  for (int d = BD - 1; d > 0; --d) {
    uint i = zz % u_bshape[d];
    zz /= u_bshape[d];
    q_off += i * u_bstride_q[d];
    k_off += i * u_bstride_k[d];
    v_off += i * u_bstride_v[d];
  }
  q_off += zz * u_bstride_q[0];  // zz < u_bshape[0]
  k_off += zz * u_bstride_k[0];
  v_off += zz * u_bstride_v[0];
  uint qi = q0 + row;  // this lane's query row
  uint kend = u_causal != 0 ? min(u_S, q0 + RQ) : u_S;
  vec4 qr[DQ], o[DQ];
  for (uint dq = 0u; dq < DQU; ++dq) {
    qr[dq] = q_quad(q_off, qi, dq) * u_scale;
    o[dq] = vec4(0.0);
  }
  float m = -F_INF, l = 0.0;
  for (uint k0 = 0u; LOOP(k0 < kend); k0 += TK) {
    workgroup_sync();  // the previous tile's readers are done
    for (uint n = 0u; n < NL; ++n) {  // (attn38 nopf: no register prefetch)
      uint e = tid + n * LOCAL_X;
      KS(e / DQU, e % DQU) = k_quad(k_off, k0 + e / DQU, e % DQU);
      VS(e / DQU, e % DQU) = v_quad(v_off, k0 + e / DQU, e % DQU);
    }
    workgroup_sync();
    // Scores of this lane's keys g + G c (masked: past S; causal: after the row), their maximum.
    float s[KPL];
    float mt = -F_INF;
    for (uint c = 0u; c < KPLU; ++c) {
      uint j = g + GU * c;
      float acc = 0.0;
      for (uint dq = 0u; dq < DQU; ++dq) acc += dot(qr[dq], KS(j, dq));
      uint gj = k0 + j;
      bool out_s = gj >= u_S || (u_causal != 0 && gj > qi);
      s[c] = out_s ? -F_INF : acc;
      mt = max(mt, s[c]);
    }
    float mn = max(m, mt);
    float mu = mn == -F_INF ? 0.0 : mn;  // no key yet: keep exp2 away from inf - inf
    float alpha = exp2(m - mu);
    m = mn;
    l *= alpha;
    for (uint dq = 0u; dq < DQU; ++dq) o[dq] *= alpha;
    for (uint c = 0u; c < KPLU; ++c) {
      uint j = g + GU * c;
      float p = exp2(s[c] - mu);
      l += p;
      for (uint dq = 0u; dq < DQU; ++dq) o[dq] += p * VS(j, dq);
    }
  }
  // The row's lanes combined: M the largest m, each lane's o and l weighted by 2^(m - M).
  red_m[tid] = m;
  workgroup_sync();  // (also: every lane is done with the last tile)
  float M = -F_INF;
  for (uint h = 0u; h < GU; ++h) M = max(M, red_m[row * GU + h]);
  float w = exp2(m - (M == -F_INF ? 0.0 : M));
  for (uint dq = 0u; dq < DQU; ++dq) sh[dq * LOCAL_X + tid] = o[dq] * w;
  red_l[tid] = l * w;
  workgroup_sync();
  // The workgroup's rows q0.. as one span of RQ * Ev outputs, element e by invocation e % LOCAL_X.
  uint rows = min(RQ, u_L - q0);
  uint base = (z * u_L + q0) * u_Ev;
  for (uint e = tid; LOOP(e < rows * u_Ev); e += LOCAL_X) {
    uint r = e / u_Ev, c = e % u_Ev;
    float acc = 0.0, den = 0.0;
    for (uint h = 0u; h < GU; ++h) {
      acc += sh[(c / 4u) * LOCAL_X + r * GU + h][c % 4u];
      den += red_l[r * GU + h];
    }
    store0(base + e, CT0(acc / den));
  }
}
