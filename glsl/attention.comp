// Fused scaled-dot-product attention, FlashAttention-2 style (Dao 2023, "FlashAttention-2:
// Faster Attention with Better Parallelism and Work Partitioning"): one workgroup computes BQ
// query rows of one batch entry; keys and values stream through shared memory in tiles of
// BKV = 32 with the online softmax (running row max m and sum l; scores prescaled by
// scale * log2(e) so that exp2 can be used). The [L, S] scores are never stored.
// Head dims E (q, k) and Ev (v) <= DH = 64, zero padded. Causal: key j is seen by query i iff
// j <= i (top-left aligned, as torch), and key tiles past the block's last query are skipped.
// Invocation (tx, ty) = (id % 8, id / 8) holds rows 4ty..4ty+3, keys tx, tx+8, tx+16, tx+24 of a
// score tile (dot products of row-major Q and K quads; K rows padded so that the 8 invocations of
// a row group read 8 consecutive key rows without bank conflicts) and output columns 4tx.. and
// 32+4tx..; row maxima, sums and probabilities are exchanged through shared memory within a row
// group of 8 consecutive invocations (workgroup barriers: subgroup barriers there measured 9%
// slower on an H100, bench/RESULTS.md).
// Operands: 0 out [batch, L, Ev] contiguous, 1 q, 2 k, 3 v (strided, batch via BD dims);
// KV_QUADS: k and v also bound as vec4 arrays qK (binding 4) and qV (binding 5).
layout(local_size_x = LOCAL_X) in;
#define BKV 32u
#define DH 64u

uniform uint u_L;
uniform uint u_S;
uniform uint u_E;
uniform uint u_Ev;
uniform uint u_zbase;
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

shared vec4 Qs[BQ][DH / 4u];        // Qs[r][d / 4][d % 4] = scaled q[r][d]
shared vec4 Ks[BKV][DH / 4u + 1u];  // Ks[j][d / 4][d % 4] = k[j][d] (rows padded by one quad)
shared vec4 Vs[BKV][DH / 4u];       // Vs[j][c / 4][c % 4] = v[j][c]
shared vec4 Ps[BKV][BQ / 4u];       // probabilities, Ps[j][r / 4][r % 4]
shared float red_max[BQ][8];
shared float red_sum[BQ][8];

// Output row r, columns c..c+3 (those < Ev).
void store_quad(uint base, uint r, uint c, vec4 x) {
  if (r >= u_L) return;
  uint e = base + r * u_Ev + c;
  if (c < u_Ev) store0(e, CT0(x.x));
  if (c + 1u < u_Ev) store0(e + 1u, CT0(x.y));
  if (c + 2u < u_Ev) store0(e + 2u, CT0(x.z));
  if (c + 3u < u_Ev) store0(e + 3u, CT0(x.w));
}

void main() {
  uint tid = gl_LocalInvocationID.x, tx = tid % 8u, ty = tid / 8u;
  uint nqb = (u_L + BQ - 1u) / BQ;
  uint q0 = (nqb - 1u - gl_WorkGroupID.x) * BQ;  // longest causal blocks first
  uint z = u_zbase + gl_WorkGroupID.y;
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
  for (uint e = tid; e < BQ * DH; e += LOCAL_X) {
    uint r = e / DH, d = e % DH, gr = q0 + r;
    Qs[r][d / 4u][d % 4u] = (gr < u_L && d < u_E) ? float(load1(q_off + gr * u_q_sl + d * u_q_se)) * u_scale : 0.0;
  }
  // Per row i (0..3): running max m, sum l, output columns o[2i] (4tx..) and o[2i+1] (32+4tx..).
  // Register arrays are only indexed by constants (ROWS expands per row), so that compilers keep
  // them in registers.
  vec4 m = vec4(-F_INF), l = vec4(0.0);
  vec4 o[8];
  for (int i = 0; i < 8; ++i) o[i] = vec4(0.0);
  uint kend = u_causal != 0 ? min(u_S, q0 + BQ) : u_S;
  uvec4 lanes = uvec4(0u, 8u, 16u, 24u);
  for (uint k0 = 0u; k0 < kend; k0 += BKV) {
    workgroup_sync();  // the previous tile's readers are done (and Qs is written)
#ifdef KV_QUADS
    // f32 k and v contiguous along E with aligned rows: one 128-bit load per 4 dims.
    for (uint e = tid; e < BKV * DH / 4u; e += LOCAL_X) {
      uint j = e / (DH / 4u), dq = e % (DH / 4u), gj = k0 + j;
      bool in_s = gj < u_S;
      Ks[j][dq] = (in_s && 4u * dq < u_E) ? qK[(k_off + gj * u_k_ss) / 4u + dq] : vec4(0.0);
      Vs[j][dq] = (in_s && 4u * dq < u_Ev) ? qV[(v_off + gj * u_v_ss) / 4u + dq] : vec4(0.0);
    }
#else
    for (uint e = tid; e < BKV * DH; e += LOCAL_X) {
      uint j = e / DH, d = e % DH, gj = k0 + j;
      bool in_s = gj < u_S;
      Ks[j][d / 4u][d % 4u] = (in_s && d < u_E) ? float(load2(k_off + gj * u_k_ss + d * u_k_se)) : 0.0;
      Vs[j][d / 4u][d % 4u] = (in_s && d < u_Ev) ? float(load3(v_off + gj * u_v_ss + d * u_v_se)) : 0.0;
    }
#endif
    workgroup_sync();
    // s_i[c] = score of row 4ty + i and key tx + 8c
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    for (uint dq = 0u; dq < DH / 4u; ++dq) {
      vec4 k0q = Ks[tx][dq], k1q = Ks[tx + 8u][dq], k2q = Ks[tx + 16u][dq], k3q = Ks[tx + 24u][dq];
#define DOTS(S, A) S += vec4(dot(A, k0q), dot(A, k1q), dot(A, k2q), dot(A, k3q));
      DOTS(s0, Qs[4u * ty][dq])
      DOTS(s1, Qs[4u * ty + 1u][dq])
      DOTS(s2, Qs[4u * ty + 2u][dq])
      DOTS(s3, Qs[4u * ty + 3u][dq])
    }
    uvec4 gj = uvec4(k0 + tx) + lanes;
    bvec4 out_s = greaterThanEqual(gj, uvec4(u_S));
    uint gi0 = q0 + 4u * ty;
#define MASK_ROW(S, I)                                                                          \
  S = mix(S, vec4(-F_INF), u_causal != 0 ? bvec4(uvec4(out_s) | uvec4(greaterThan(gj, uvec4(gi0 + I)))) : out_s); \
  red_max[4u * ty + I][tx] = max(max(S.x, S.y), max(S.z, S.w));
    MASK_ROW(s0, 0u)
    MASK_ROW(s1, 1u)
    MASK_ROW(s2, 2u)
    MASK_ROW(s3, 3u)
    workgroup_sync();
    vec4 mn = m;
    for (uint c = 0u; c < 8u; ++c)
      mn = max(mn, vec4(red_max[4u * ty][c], red_max[4u * ty + 1u][c], red_max[4u * ty + 2u][c], red_max[4u * ty + 3u][c]));
    // rows with no key yet keep exp2 away from inf - inf
    vec4 mu = mix(mn, vec4(0.0), equal(mn, vec4(-F_INF)));
    vec4 alpha = exp2(m - mu);
    m = mn;
    vec4 p0 = exp2(s0 - mu.x), p1 = exp2(s1 - mu.y), p2 = exp2(s2 - mu.z), p3 = exp2(s3 - mu.w);
    red_sum[4u * ty][tx] = (p0.x + p0.y) + (p0.z + p0.w);
    red_sum[4u * ty + 1u][tx] = (p1.x + p1.y) + (p1.z + p1.w);
    red_sum[4u * ty + 2u][tx] = (p2.x + p2.y) + (p2.z + p2.w);
    red_sum[4u * ty + 3u][tx] = (p3.x + p3.y) + (p3.z + p3.w);
    Ps[tx][ty] = vec4(p0.x, p1.x, p2.x, p3.x);
    Ps[tx + 8u][ty] = vec4(p0.y, p1.y, p2.y, p3.y);
    Ps[tx + 16u][ty] = vec4(p0.z, p1.z, p2.z, p3.z);
    Ps[tx + 24u][ty] = vec4(p0.w, p1.w, p2.w, p3.w);
    workgroup_sync();
    vec4 t = vec4(0.0);
    for (uint c = 0u; c < 8u; ++c)
      t += vec4(red_sum[4u * ty][c], red_sum[4u * ty + 1u][c], red_sum[4u * ty + 2u][c], red_sum[4u * ty + 3u][c]);
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
      vec4 a = Ps[j][ty], b0 = Vs[j][tx], b1 = Vs[j][8u + tx];
      o[0] += a.x * b0;
      o[1] += a.x * b1;
      o[2] += a.y * b0;
      o[3] += a.y * b1;
      o[4] += a.z * b0;
      o[5] += a.z * b1;
      o[6] += a.w * b0;
      o[7] += a.w * b1;
    }
  }
  uint out_base = z * u_L * u_Ev, gi0 = q0 + 4u * ty;
  store_quad(out_base, gi0, 4u * tx, o[0] / l.x);
  store_quad(out_base, gi0, 32u + 4u * tx, o[1] / l.x);
  store_quad(out_base, gi0 + 1u, 4u * tx, o[2] / l.y);
  store_quad(out_base, gi0 + 1u, 32u + 4u * tx, o[3] / l.y);
  store_quad(out_base, gi0 + 2u, 4u * tx, o[4] / l.z);
  store_quad(out_base, gi0 + 2u, 32u + 4u * tx, o[5] / l.z);
  store_quad(out_base, gi0 + 3u, 4u * tx, o[6] / l.w);
  store_quad(out_base, gi0 + 3u, 32u + 4u * tx, o[7] / l.w);
}
