// Fused scaled-dot-product attention, FlashAttention-2 style (Dao 2023, "FlashAttention-2:
// Faster Attention with Better Parallelism and Work Partitioning"): one workgroup computes BQ
// query rows of one batch entry; keys and values stream through shared memory in tiles of
// BKV = 32 * KQ keys with the online softmax (running row max m and sum l; scores prescaled by
// scale * log2(e) so that exp2 can be used). The [L, S] scores are never stored.
// Head dims E (q, k) and Ev (v) <= DH = 64, zero padded. Causal: key j is seen by query i iff
// j <= i (top-left aligned, as torch), and key tiles past the block's last query are skipped.
//
// Invocation (tx, ty) = (lane % 8, lane / 8) holds rows 4ty..4ty+3 and, per key quad h < KQ,
// keys tx + 32h + 8c (c = 0..3) of a score tile (dot products of Q and K quads), and output
// columns 4tx.. and 32+4tx..; a row group is 8 consecutive lanes. Row maxima and sums are
// combined across a row group by subgroup shuffles (SUBGROUP: lanes numbered by subgroup, so
// that a row group is 8 lanes of one subgroup) or through shared memory (red_max, red_sum).
// Probabilities go through shared memory (Ps) to the row group's output products. KQ = 2 (64 keys
// per tile, 48 KiB with BQ = 64) keeps the probabilities in the K tile's memory once every score
// is computed; it requires SUBGROUP (no room for red_max and red_sum).
// Each invocation loads the next tile's K and V quads into registers before it computes on the
// current tile, so that the loads' latency hides behind the arithmetic.
// DQL (4, 8 or 16): the head-dim quads that E and Ev need (rounded up to a power of two): the
// loads, the score products and (DQL <= 8: one column quad per lane, o[2i + 1] unused) the output
// columns stop there, so that small heads (SVTR's 15) do not pay for 64 dims; rows keep 16 quads
// of shared memory. BQ = 16 (32 invocations): GLTENSOR_ATTENTION_BQ=16 (attention_plan's
// narrow_attention_tiles).
// Shared-memory layouts are XOR-swizzled so that a warp's 128-bit reads and writes spread over
// all banks: K quad dq of key j at column dq ^ (j % 8), Q quad dq of row r at dq ^ (r / 4 % 4),
// probability quad rq of key j at rq ^ (j % 8) (BQ = 16: rq ^ (j % 4)).
// SPLIT_KV (FlashDecoding: Dao et al. 2023, "Flash-Decoding for long-context inference"): the
// keys split into chunks of u_kchunk (a multiple of BKV), chunk WORKGROUP_ID.z; the output is
// [chunks, batch, L, Ev + 2]: per row the unnormalized sum o (Ev values), then m (the row's
// maximum score, scaled by scale * log2(e)) and l (the sum of exp2(score - m)); a chunk with no
// key for a row (causal) leaves o = 0, m = -Inf, l = 0. The host combines the chunks (kv_combine),
// or, with COMBINE, the chunks' last workgroup does (no combine dispatch): each workgroup writes
// its partials into the coherent workspace ws4 (binding WS_BINDING, as quads: 16 quads of o per
// row, then vec4(m, l, 0, 0) per row, so that the merge reads few wide loads), makes them
// visible (memoryBarrierBuffer, then the workgroup's barrier) and counts its arrival at its
// (batch entry, row block) in cnt (binding CNT_BINDING: runtime/counters.hpp's zeroed words);
// the workgroup that arrives last (u_grid.z arrivals: every chunk's) reads every chunk's
// partials back through the coherent buffer after a memoryBarrierBuffer and writes the rows of
// out [batch, L, Ev] as kv_combine would (a row's largest m over the chunks with l != 0, NaN
// kept; sum(o 2^(m - M)) / sum(l 2^(m - M))), then sets its counter back to 0 for the next
// dispatch. Both sides of the hand-over use coherent memory, a buffer barrier and an atomic
// (GLSL ES 3.1 4.10 / 4.6's memory model; NVIDIA's L1 is bypassed for coherent buffers; on
// llvmpipe the workgroups are threads over one memory). The last workgroup's scratch (each
// chunk's weight 2^(m - M) per row, the row's denominator, each chunk's l: (2 chunks + 1) BQ
// floats) lives in Vs, the arrival
// count in Qs: COMBINE adds no shared memory (attention_shared_bytes holds).
// Operands: 0 out [batch, L, Ev] contiguous, 1 q, 2 k, 3 v (strided, batch via BD dims);
// Q_QUADS / KV_QUADS: q / k and v also bound as vec4 arrays qQ / qK, qV at the next bindings
// (4, 5, 6 with all three).
layout(local_size_x = LOCAL_X) in;
#ifndef KQ
#define KQ 1
#endif
#define KQU uint(KQ)
#define BKV (32u * KQU)
#ifndef DQL
#define DQL 16
#endif
#define DQLU uint(DQL)  // (DQL a plain int: #if compares it)
#define NLD (BKV * DQLU / LOCAL_X)  // K (and V) quads each invocation loads per tile
#define NLQ (BQ * DQLU / LOCAL_X)   // Q quads each invocation loads
#define PS_SWZ (BQ >= 32u ? 7u : BQ / 4u - 1u)
#if KQ == 2 && !defined(SUBGROUP)
#error "64-key tiles need subgroup row reductions"
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
uniform uint u_kchunk;  // SPLIT_KV
#ifdef SPLIT_KV
#define OUT_COLS (u_Ev + 2u)
#else
#define OUT_COLS u_Ev
#endif
#ifdef COMBINE
#ifndef SPLIT_KV
#error "COMBINE merges SPLIT_KV's chunks"
#endif
// The workspace as quads: per (chunk, batch entry, row) 16 quads of o (row pr = (chunk * batch
// + z) * L + r at pr * 16), then per row vec4(m, l, 0, 0) at WS_ML + pr.
layout(std430, binding = WS_BINDING) coherent buffer WsBuf { vec4 ws4[]; };
layout(std430, binding = CNT_BINDING) coherent buffer CntBuf { uint cnt[]; };
#define WS_ML (u_grid.z * u_grid.y * u_L * 16u)
#endif
#define STORE_PART(e, x) store0(e, CT0(x))

shared vec4 Qs[BQ * 16u];  // scaled q[r][d] at QS(r, d / 4)[d % 4]
shared vec4 Vs[BKV * 16u];  // v[j][c] at Vs[j * 16 + c / 4][c % 4]
#define QS(r, dq) Qs[(r) * 16u + ((dq) ^ (((r) >> 2u) & 3u))]
#define KS(j, dq) Ks[(j) * 16u + ((dq) ^ ((j) & 7u))]
#define PS(j, rq) Ps[(j) * (BQ / 4u) + ((rq) ^ ((j) & PS_SWZ))]
#if KQ == 2
shared vec4 Ks[BKV * 16u];  // K tile, then the probabilities (BKV * BQ / 4 <= BKV * 16 quads)
#define Ps Ks
#else
shared vec4 Ks[BKV * 16u];
shared vec4 Ps[BKV * BQ / 4u];
#endif
#ifndef SUBGROUP
shared float red_max[BQ][8];
shared float red_sum[BQ][8];
#endif

// Quad dq (dims 4dq..4dq+3, zero past E or past S) of q row r, k row j, v row j.
vec4 q_quad(uint off, uint r, uint dq) {
  if (r >= u_L) return vec4(0.0);
#ifdef Q_QUADS
  // A branch, not a select of a clamped load: the clamped index cost the H100 1.07 -> 1.78 ms in
  // BM_sdpa (bench/RESULTS.md, tails); no load past the row's end either way.
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

#ifdef SUBGROUP
// Sum and maximum over the 8 lanes of a row group (lanes 8k..8k+7 of a subgroup).
vec4 group_max(vec4 x) {
  for (uint b = 1u; b < 8u; b <<= 1u)
    x = max(x, vec4(subgroupShuffleXor(x.x, b), subgroupShuffleXor(x.y, b), subgroupShuffleXor(x.z, b),
                    subgroupShuffleXor(x.w, b)));
  return x;
}
vec4 group_sum(vec4 x) {
  for (uint b = 1u; b < 8u; b <<= 1u)
    x += vec4(subgroupShuffleXor(x.x, b), subgroupShuffleXor(x.y, b), subgroupShuffleXor(x.z, b),
              subgroupShuffleXor(x.w, b));
  return x;
}
#endif

// Output row r, columns c..c+3 (those < Ev).
void store_quad(uint base, uint r, uint c, vec4 x) {
  if (r >= u_L) return;
  uint e = base + r * OUT_COLS + c;
  if (c < u_Ev) STORE_PART(e, x.x);
  if (c + 1u < u_Ev) STORE_PART(e + 1u, x.y);
  if (c + 2u < u_Ev) STORE_PART(e + 2u, x.z);
  if (c + 3u < u_Ev) STORE_PART(e + 3u, x.w);
}

float max4(vec4 x) { return max(max(x.x, x.y), max(x.z, x.w)); }
float sum4(vec4 x) { return (x.x + x.y) + (x.z + x.w); }

// Register arrays are only indexed by constants (the macros below expand per row and key quad),
// so that compilers keep them in registers. s[KQU * i + h]: scores of row 4ty + i, keys
// tx + 32h + 8c; o[2i], o[2i + 1]: output row 4ty + i, columns 4tx.. and 32 + 4tx...
#if KQ == 2
#define FOR_H(X, i) X(i, 0u) X(i, 1u)
#else
#define FOR_H(X, i) X(i, 0u)
#endif
#define FOR_ROWS(X) X(0u) X(1u) X(2u) X(3u)

void main() {
  uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
  uint lane = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  uint lane = tid;
#endif
  uint tx = lane % 8u, ty = lane / 8u;
  uint nqb = (u_L + BQ - 1u) / BQ;
  uint q0 = (nqb - 1u - WORKGROUP_ID.x) * BQ;  // longest causal blocks first
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
  // Invocation tid loads quads e = tid + n * LOCAL_X (n < NLQ, NLD) of a tile: row e / DQL,
  // quad e % DQL. All loads are issued before the first store.
  {
    vec4 pq[NLQ];
    for (uint n = 0u; n < NLQ; ++n) {
      uint e = tid + n * LOCAL_X;
      pq[n] = q_quad(q_off, q0 + e / DQLU, e % DQLU);
    }
    for (uint n = 0u; n < NLQ; ++n) {
      uint e = tid + n * LOCAL_X;
      QS(e / DQLU, e % DQLU) = pq[n] * u_scale;
    }
  }
  uint kend = u_causal != 0 ? min(u_S, q0 + BQ) : u_S;
#ifdef SPLIT_KV
  uint kbegin = WORKGROUP_ID.z * u_kchunk;
  kend = min(kend, kbegin + u_kchunk);
#else
  uint kbegin = 0u;
#endif
  vec4 pk[NLD], pv[NLD];
  for (uint n = 0u; n < NLD; ++n) {
    uint e = tid + n * LOCAL_X;
    pk[n] = k_quad(k_off, kbegin + e / DQLU, e % DQLU);
    pv[n] = v_quad(v_off, kbegin + e / DQLU, e % DQLU);
  }
  vec4 m = vec4(-F_INF), l = vec4(0.0);
  vec4 o[8];
  for (int i = 0; i < 8; ++i) o[i] = vec4(0.0);
  vec4 s[4 * KQ];
  uvec4 lanes = uvec4(0u, 8u, 16u, 24u);
  uint gi0 = q0 + 4u * ty;
  for (uint k0 = kbegin; LOOP(k0 < kend); k0 += BKV) {
    workgroup_sync();  // the previous tile's readers are done (and Qs is written)
    for (uint n = 0u; n < NLD; ++n) {
      uint e = tid + n * LOCAL_X;
      KS(e / DQLU, e % DQLU) = pk[n];
      Vs[e / DQLU * 16u + e % DQLU] = pv[n];
    }
    workgroup_sync();
    if (k0 + BKV < kend) {  // the next tile's loads, in flight while this tile is computed
      for (uint n = 0u; n < NLD; ++n) {
        uint e = tid + n * LOCAL_X;
        pk[n] = k_quad(k_off, k0 + BKV + e / DQLU, e % DQLU);
        pv[n] = v_quad(v_off, k0 + BKV + e / DQLU, e % DQLU);
      }
    }
    for (int i = 0; i < 4 * KQ; ++i) s[i] = vec4(0.0);
    for (uint dq = 0u; dq < DQLU; ++dq) {
      vec4 kq[4 * KQ];
#define LOAD_K(i, h)                             \
  kq[4u * h] = KS(tx + 32u * h, dq);             \
  kq[4u * h + 1u] = KS(tx + 32u * h + 8u, dq);   \
  kq[4u * h + 2u] = KS(tx + 32u * h + 16u, dq);  \
  kq[4u * h + 3u] = KS(tx + 32u * h + 24u, dq);
      FOR_H(LOAD_K, 0u)
#define DOTS(i, h) \
  s[KQU * i + h] += vec4(dot(a, kq[4u * h]), dot(a, kq[4u * h + 1u]), dot(a, kq[4u * h + 2u]), dot(a, kq[4u * h + 3u]));
#define ROW_DOTS(i)               \
  {                               \
    vec4 a = QS(4u * ty + i, dq); \
    FOR_H(DOTS, i)                \
  }
      FOR_ROWS(ROW_DOTS)
    }
    // Masks (keys past S; causal: keys after the row) and each row's maximum over this lane.
    vec4 lmax = vec4(-F_INF);
#define MASK(i, h)                                                                           \
  {                                                                                          \
    uvec4 gj = uvec4(k0 + tx + 32u * h) + lanes;                                             \
    bvec4 out_s = greaterThanEqual(gj, uvec4(u_S));                                          \
    if (u_causal != 0) out_s = bvec4(uvec4(out_s) | uvec4(greaterThan(gj, uvec4(gi0 + i)))); \
    s[KQU * i + h] = mix(s[KQU * i + h], vec4(-F_INF), out_s);                               \
    lmax[i] = max(lmax[i], max4(s[KQU * i + h]));                                            \
  }
#define MASK_ROW(i) FOR_H(MASK, i)
    FOR_ROWS(MASK_ROW)
#ifdef SUBGROUP
    vec4 mn = max(m, group_max(lmax));
#else
    for (uint i = 0u; i < 4u; ++i) red_max[4u * ty + i][tx] = lmax[i];
    workgroup_sync();
    vec4 mn = m;
    for (uint c = 0u; c < 8u; ++c)
      mn = max(mn, vec4(red_max[4u * ty][c], red_max[4u * ty + 1u][c], red_max[4u * ty + 2u][c], red_max[4u * ty + 3u][c]));
#endif
    // rows with no key yet keep exp2 away from inf - inf
    vec4 mu = mix(mn, vec4(0.0), equal(mn, vec4(-F_INF)));
    vec4 alpha = exp2(m - mu);
    m = mn;
    vec4 lsum = vec4(0.0);
#define EXP(i, h)                                \
  s[KQU * i + h] = exp2(s[KQU * i + h] - mu[i]); \
  lsum[i] += sum4(s[KQU * i + h]);
#define EXP_ROW(i) FOR_H(EXP, i)
    FOR_ROWS(EXP_ROW)
#if KQ == 2
    workgroup_sync();  // every score is computed: the K tile's memory takes the probabilities
#endif
#define STORE_P(i, h)                                                                               \
  PS(tx + 32u * h, ty) = vec4(s[h].x, s[KQU + h].x, s[2u * KQU + h].x, s[3u * KQU + h].x);         \
  PS(tx + 32u * h + 8u, ty) = vec4(s[h].y, s[KQU + h].y, s[2u * KQU + h].y, s[3u * KQU + h].y);    \
  PS(tx + 32u * h + 16u, ty) = vec4(s[h].z, s[KQU + h].z, s[2u * KQU + h].z, s[3u * KQU + h].z);   \
  PS(tx + 32u * h + 24u, ty) = vec4(s[h].w, s[KQU + h].w, s[2u * KQU + h].w, s[3u * KQU + h].w);
    FOR_H(STORE_P, 0u)
#ifdef SUBGROUP
    vec4 t = group_sum(lsum);
#else
    for (uint i = 0u; i < 4u; ++i) red_sum[4u * ty + i][tx] = lsum[i];
#endif
    workgroup_sync();  // probabilities (and row sums) are visible
#ifndef SUBGROUP
    vec4 t = vec4(0.0);
    for (uint c = 0u; c < 8u; ++c)
      t += vec4(red_sum[4u * ty][c], red_sum[4u * ty + 1u][c], red_sum[4u * ty + 2u][c], red_sum[4u * ty + 3u][c]);
#endif
    l = l * alpha + t;
    o[0] *= alpha.x;
    o[1] *= alpha.x;
    o[2] *= alpha.y;
    o[3] *= alpha.y;
    o[4] *= alpha.z;
    o[5] *= alpha.z;
    o[6] *= alpha.w;
    o[7] *= alpha.w;
    for (uint j = 0u; j < BKV; ++j) {
      vec4 a = PS(j, ty);
#if DQL == 16
      vec4 b0 = Vs[j * 16u + tx], b1 = Vs[j * 16u + 8u + tx];
      o[1] += a.x * b1;
      o[3] += a.y * b1;
      o[5] += a.z * b1;
      o[7] += a.w * b1;
#elif DQL == 8
      vec4 b0 = Vs[j * 16u + tx];
#else  // quads 4..7 of the tile's rows are not loaded
      vec4 b0 = tx < DQLU ? Vs[j * 16u + tx] : vec4(0.0);
#endif
      o[0] += a.x * b0;
      o[2] += a.y * b0;
      o[4] += a.z * b0;
      o[6] += a.w * b0;
    }
  }
#ifdef COMBINE
  // Unnormalized quads of o, and each row's m and l (lane tx = 0 of the row group).
  {
    uint pr = (WORKGROUP_ID.z * u_grid.y + z) * u_L + gi0;
    if (gi0 < u_L) ws4[pr * 16u + tx] = o[0];
    if (gi0 + 1u < u_L) ws4[(pr + 1u) * 16u + tx] = o[2];
    if (gi0 + 2u < u_L) ws4[(pr + 2u) * 16u + tx] = o[4];
    if (gi0 + 3u < u_L) ws4[(pr + 3u) * 16u + tx] = o[6];
#if DQL == 16
    if (gi0 < u_L) ws4[pr * 16u + 8u + tx] = o[1];
    if (gi0 + 1u < u_L) ws4[(pr + 1u) * 16u + 8u + tx] = o[3];
    if (gi0 + 2u < u_L) ws4[(pr + 2u) * 16u + 8u + tx] = o[5];
    if (gi0 + 3u < u_L) ws4[(pr + 3u) * 16u + 8u + tx] = o[7];
#endif
    if (tx == 0u)
      for (uint i = 0u; i < 4u; ++i)
        if (gi0 + i < u_L) ws4[WS_ML + pr + i] = vec4(m[i], l[i], 0.0, 0.0);
  }
#elif defined(SPLIT_KV)
  // Unnormalized, with each row's m and l after its Ev values (lane tx = 0 of the row group).
  uint out_base = (WORKGROUP_ID.z * u_grid.y + z) * u_L * OUT_COLS;
  vec4 d = vec4(1.0);
  if (tx == 0u)
    for (uint i = 0u; i < 4u; ++i)
      if (gi0 + i < u_L) {
        STORE_PART(out_base + (gi0 + i) * OUT_COLS + u_Ev, m[i]);
        STORE_PART(out_base + (gi0 + i) * OUT_COLS + u_Ev + 1u, l[i]);
      }
#else
  uint out_base = z * u_L * u_Ev;
  vec4 d = l;
#endif
#ifndef COMBINE
  store_quad(out_base, gi0, 4u * tx, o[0] / d.x);
  store_quad(out_base, gi0 + 1u, 4u * tx, o[2] / d.y);
  store_quad(out_base, gi0 + 2u, 4u * tx, o[4] / d.z);
  store_quad(out_base, gi0 + 3u, 4u * tx, o[6] / d.w);
#if DQL == 16
  store_quad(out_base, gi0, 32u + 4u * tx, o[1] / d.x);
  store_quad(out_base, gi0 + 1u, 32u + 4u * tx, o[3] / d.y);
  store_quad(out_base, gi0 + 2u, 32u + 4u * tx, o[5] / d.z);
  store_quad(out_base, gi0 + 3u, 32u + 4u * tx, o[7] / d.w);
#endif
#else  // COMBINE
  // This chunk's partials are written: visible before the arrival is counted.
  memoryBarrierBuffer();
  workgroup_sync();
  // The arrival's count reaches the workgroup through Qs, dead since the last tile (no shared
  // variable of its own: the 64-row, 64-key tiling fills the H200's 48 KiB exactly).
  uint slot = z * nqb + WORKGROUP_ID.x;
  if (tid == 0u) Qs[0].x = float(atomicAdd(cnt[slot], 1u));  // (exact: chunks < 2^24)
  workgroup_sync();
  if (uint(Qs[0].x) != u_grid.z - 1u) return;  // (the same for the whole workgroup)
  memoryBarrierBuffer();
  uint nch = u_grid.z;
#define CW(c, i) Vs[((c) * BQ + (i)) / 4u][((c) * BQ + (i)) % 4u]
#define PART(c, r) (((c) * u_grid.y + z) * u_L + (r))
  if (tid < BQ && q0 + tid < u_L) {
    uint r = q0 + tid;
    float M = -F_INF;
    for (uint c = 0u; LOOP(c < nch); ++c) {  // the workspace read once: m and l kept in the scratch
      vec4 ml = ws4[WS_ML + PART(c, r)];
      CW(c, tid) = ml.x;
      CW(nch + 1u + c, tid) = ml.y;
      if (ml.y != 0.0) M = is_nan(M) ? M : ((ml.x > M || is_nan(ml.x)) ? ml.x : M);
    }
    float den = 0.0;
    for (uint c = 0u; LOOP(c < nch); ++c) {
      float lc = CW(nch + 1u + c, tid);
      float a = lc != 0.0 ? exp2(CW(c, tid) - M) : 0.0;
      CW(c, tid) = a;
      den += a * lc;
    }
    CW(nch, tid) = den;
  }
  workgroup_sync();
  // Quads e = tid + n * LOCAL_X (n < 8) of the block's BQ rows of 16 quads: the chunks outside,
  // the 8 independent quad loads of a chunk inside (issued together).
  uint evq = (u_Ev + 3u) / 4u;
  vec4 acc[8];
  for (uint n = 0u; n < 8u; ++n) acc[n] = vec4(0.0);
  for (uint c = 0u; LOOP(c < nch); ++c)
    for (uint n = 0u; n < 8u; ++n) {
      uint e = tid + n * LOCAL_X, i = e / 16u, qd = e % 16u;
      if (q0 + i < u_L && qd < evq) acc[n] += CW(c, i) * ws4[PART(c, q0 + i) * 16u + qd];
    }
  for (uint n = 0u; n < 8u; ++n) {
    uint e = tid + n * LOCAL_X, i = e / 16u, qd = e % 16u;
    if (q0 + i < u_L && qd < evq) {
      vec4 y = acc[n] / CW(nch, i);
      uint b = (z * u_L + q0 + i) * u_Ev + 4u * qd;
      store0(b, CT0(y.x));
      if (4u * qd + 1u < u_Ev) store0(b + 1u, CT0(y.y));
      if (4u * qd + 2u < u_Ev) store0(b + 2u, CT0(y.z));
      if (4u * qd + 3u < u_Ev) store0(b + 3u, CT0(y.w));
    }
  }
  if (tid == 0u) atomicExchange(cnt[slot], 0u);  // zero for the next dispatch
#endif
}
