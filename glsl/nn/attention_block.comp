// Fused scaled-dot-product attention by query blocks with every score of the block in shared
// memory (inference: no mask, dropout or GQA; head dims E (q, k) and Ev (v) <= 4 * DQ <= 64; keys
// S <= SK): one workgroup computes BR query rows of one batch entry in three phases, no online
// softmax and no key split (FlashAttention-2's query-block loop order, Dao 2023, with the block's
// whole score rows kept, as the standard softmax of Bridle 1990 over them):
//   1. S = Q K^T: Q's BR rows (prescaled by scale * log2(e)) in shared memory, padded by a quad per
//      row group (the RG row groups of a key read distinct banks); work item (row group g, key j)
//      = (item % RG, item / RG), so that a subgroup's k loads touch few rows and its score stores
//      are consecutive; the item's k row loaded into registers at once and the next item's loaded
//      while this one's are multiplied; the 4 scores stored as one quad P[j][g];
//   2. each row's maximum M and p = 2^(s - M) in place, the row sum l (shared-memory reductions);
//   3. O = P V: invocation (quad dq, row group g, key part kp) sums p * v over the keys kp, kp + KP,
//      ... for 4 rows, 8 keys' v loads a trip; the KP parts summed and divided by l, the block's BR
//      rows x Ev outputs stored by consecutive invocations at consecutive addresses (one span).
// Where attention.comp's 64-row blocks are few (8 heads x 300 rows: 40 workgroups of 5 serial key
// tiles), blocks of 8 rows give 304 workgroups with no serial tile loop and no merge: 33.5 us of
// GPU time on the H200 against attention.comp's 38.6 (16 rows 40.9; each loop form measured,
// bench/RESULTS.md 2026-11-28, attn39).
// Causal: key j is seen by query i iff j <= i (top-left aligned, as torch); phase 3 stops at the
// block's last query. NaN propagates as in the reference (a NaN score makes its row NaN; Inf in q
// gives inf - inf); a row whose scores are all -inf gives 0 / 0.
// Shared memory: P (SK * RG quads) shares its memory with phase 3's partials (4 * LOCAL_X quads,
// SH_QUADS the larger, host-computed); Q (BR * DQ + RG quads); the reductions (LOCAL_X + 9 RG quads).
// Operands: 0 out [batch, L, Ev] contiguous, 1 q, 2 k, 3 v (strided, batch via BD dims);
// Q_QUADS / KV_QUADS: q / k and v also bound as vec4 arrays qQ / qK, qV at the next bindings.
layout(local_size_x = LOCAL_X) in;
#define DQU uint(DQ)
#define BRU uint(BR)
#define RG (BRU / 4u)                 // row groups of 4 rows
#define KP (LOCAL_X / (DQU * RG))     // phase 3's key parts
#define NI (LOCAL_X / RG)             // phase 2's invocations per row group
#define NI8 (NI / 8u)

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

shared vec4 sh[SH_QUADS];  // P [S][RG] quads; then phase 3's partials [4][LOCAL_X]
shared vec4 qs[BRU * DQU + RG];  // Q [BR][DQ], row r at r * DQ + r / 4
shared vec4 red[LOCAL_X];  // phase 2's per-invocation maxima / sums of a row group's 4 rows
shared vec4 red8[8u * RG];  // ... reduced to 8 per row group
shared vec4 rinv[RG];       // 1 / l of a row group's rows

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
// Under KV_QUADS (E, Ev multiples of 4) the loads take no branch: the quad index is clamped to the row's last quad
// and k's quads past E are selected to zero (v's past Ev are never stored), so that a loop's loads issue together
// (NVIDIA serialized the branched loads: 79.6 us of GPU time for 8 x 300 x 64, bench/RESULTS.md 2026-11-28).
vec4 k_quad(uint off, uint j, uint dq) {
#ifdef KV_QUADS
  vec4 x = qK[(off + j * u_k_ss) / 4u + min(dq, u_E / 4u - 1u)];
  return 4u * dq < u_E ? x : vec4(0.0);
#else
  vec4 x = vec4(0.0);
  for (uint c = 0u; c < 4u; ++c)
    if (4u * dq + c < u_E) x[c] = float(load2(off + j * u_k_ss + (4u * dq + c) * u_k_se));
  return x;
#endif
}
vec4 v_quad(uint off, uint j, uint dq) {
#ifdef KV_QUADS
  return qV[(off + j * u_v_ss) / 4u + min(dq, u_Ev / 4u - 1u)];
#else
  vec4 x = vec4(0.0);
  for (uint c = 0u; c < 4u; ++c)
    if (4u * dq + c < u_Ev) x[c] = float(load3(off + j * u_v_ss + (4u * dq + c) * u_v_se));
  return x;
#endif
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint nqb = (u_L + BRU - 1u) / BRU;
  uint q0 = (nqb - 1u - WORKGROUP_ID.x) * BRU;  // longest causal blocks first
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
  for (uint e = tid; LOOP(e < BRU * DQU); e += LOCAL_X) qs[e + e / (4u * DQU)] = q_quad(q_off, q0 + e / DQU, e % DQU) * u_scale;
  workgroup_sync();
  // 1. scores: item (row group g, key j) = (item % RG, item / RG); kn: the k row of the invocation's next item
  vec4 kn[DQ];
  if (tid < RG * u_S) {
    for (uint dq = 0u; dq < DQU; ++dq) kn[dq] = k_quad(k_off, tid / RG, dq);
  }
  for (uint it = tid; LOOP(it < RG * u_S); it += LOCAL_X) {
    uint g = it % RG, j = it / RG;
    vec4 kc[DQ];
    for (uint dq = 0u; dq < DQU; ++dq) kc[dq] = kn[dq];
    uint itn = it + LOCAL_X;
    if (itn < RG * u_S) {  // the next item's k row, in flight while this one is multiplied
      for (uint dq = 0u; dq < DQU; ++dq) kn[dq] = k_quad(k_off, itn / RG, dq);
    }
    vec4 s = vec4(0.0);
    for (uint dq = 0u; dq < DQU; ++dq) {
      s.x += dot(qs[(4u * g) * DQU + g + dq], kc[dq]);
      s.y += dot(qs[(4u * g + 1u) * DQU + g + dq], kc[dq]);
      s.z += dot(qs[(4u * g + 2u) * DQU + g + dq], kc[dq]);
      s.w += dot(qs[(4u * g + 3u) * DQU + g + dq], kc[dq]);
    }
    if (u_causal != 0) {
      uint r = q0 + 4u * g;
      s = mix(s, vec4(-F_INF), greaterThan(uvec4(j), uvec4(r, r + 1u, r + 2u, r + 3u)));
    }
    sh[j * RG + g] = s;
  }
  workgroup_sync();
  // 2. per row: M, p = 2^(s - M) in place, l; invocation (g = tid % RG, i = tid / RG) takes keys
  // i, i + NI, ...; partials reduced in two steps (8 per row group, then one)
  uint g2 = tid % RG, i2 = tid / RG;
  vec4 mx = vec4(-F_INF);
  for (uint j = i2; LOOP(j < u_S); j += NI) mx = max(mx, sh[j * RG + g2]);
  red[tid] = mx;
  workgroup_sync();
  if (tid < 8u * RG) {
    vec4 x = vec4(-F_INF);
    for (uint b = 0u; b < NI8; ++b) x = max(x, red[g2 + RG * (i2 * NI8 + b)]);
    red8[tid] = x;
  }
  workgroup_sync();
  vec4 M = vec4(-F_INF);
  for (uint a = 0u; a < 8u; ++a) M = max(M, red8[g2 + RG * a]);
  M = mix(M, vec4(0.0), equal(M, vec4(-F_INF)));  // no key: keep exp2 away from inf - inf
  vec4 sum = vec4(0.0);
  for (uint j = i2; LOOP(j < u_S); j += NI) {
    vec4 p = exp2(sh[j * RG + g2] - M);
    sh[j * RG + g2] = p;
    sum += p;
  }
  workgroup_sync();  // (every max read from red8)
  red[tid] = sum;
  workgroup_sync();
  if (tid < 8u * RG) {
    vec4 x = vec4(0.0);
    for (uint b = 0u; b < NI8; ++b) x += red[g2 + RG * (i2 * NI8 + b)];
    red8[tid] = x;
  }
  workgroup_sync();
  if (tid < RG) {
    vec4 l = vec4(0.0);
    for (uint a = 0u; a < 8u; ++a) l += red8[tid + RG * a];
    rinv[tid] = 1.0 / l;
  }
  // 3. O = P V: invocation (dq, g, kp) = (tid % DQ, tid / DQ % RG, tid / (DQ RG))
  uint dq3 = tid % DQU, g3 = (tid / DQU) % RG, kp = tid / (DQU * RG);
  uint kend = u_causal != 0 ? min(u_S, q0 + BRU) : u_S;
  vec4 o0 = vec4(0.0), o1 = vec4(0.0), o2 = vec4(0.0), o3 = vec4(0.0);
  uint j = kp;
  for (; LOOP(j + 7u * KP < kend); j += 8u * KP) {  // 8 keys a trip: their v loads in flight together
    vec4 v[8], p[8];
    for (uint u = 0u; u < 8u; ++u) {
      v[u] = v_quad(v_off, j + u * KP, dq3);
      p[u] = sh[(j + u * KP) * RG + g3];
    }
    for (uint u = 0u; u < 8u; ++u) {
      o0 += p[u].x * v[u];
      o1 += p[u].y * v[u];
      o2 += p[u].z * v[u];
      o3 += p[u].w * v[u];
    }
  }
  for (; LOOP(j + 3u * KP < kend); j += 4u * KP) {  // 4 keys a trip: their v loads in flight together
    vec4 v0 = v_quad(v_off, j, dq3), v1 = v_quad(v_off, j + KP, dq3), v2 = v_quad(v_off, j + 2u * KP, dq3),
         v3 = v_quad(v_off, j + 3u * KP, dq3);
    vec4 p0 = sh[j * RG + g3], p1 = sh[(j + KP) * RG + g3], p2 = sh[(j + 2u * KP) * RG + g3],
         p3 = sh[(j + 3u * KP) * RG + g3];
    o0 += p0.x * v0 + p1.x * v1 + p2.x * v2 + p3.x * v3;
    o1 += p0.y * v0 + p1.y * v1 + p2.y * v2 + p3.y * v3;
    o2 += p0.z * v0 + p1.z * v1 + p2.z * v2 + p3.z * v3;
    o3 += p0.w * v0 + p1.w * v1 + p2.w * v2 + p3.w * v3;
  }
  for (; LOOP(j < kend); j += KP) {
    vec4 p = sh[j * RG + g3], vq = v_quad(v_off, j, dq3);
    o0 += p.x * vq;
    o1 += p.y * vq;
    o2 += p.z * vq;
    o3 += p.w * vq;
  }
  workgroup_sync();  // every p read: the partials take P's memory
  sh[tid] = o0;
  sh[LOCAL_X + tid] = o1;
  sh[2u * LOCAL_X + tid] = o2;
  sh[3u * LOCAL_X + tid] = o3;
  workgroup_sync();
  // The block's rows q0.. as one span of rows * Ev outputs, element e by invocation e % LOCAL_X.
  uint rows = min(BRU, u_L - q0);
  uint base = (z * u_L + q0) * u_Ev;
  for (uint e = tid; LOOP(e < rows * u_Ev); e += LOCAL_X) {
    uint r = e / u_Ev, c = e % u_Ev, g = r / 4u, rr = r % 4u;
    uint at = rr * LOCAL_X + (c / 4u) + DQU * g;
    float acc = 0.0;
    for (uint k = 0u; k < KP; ++k) acc += sh[at + k * DQU * RG][c % 4u];
    store0(base + e, CT0(acc * rinv[g][rr]));
  }
}
