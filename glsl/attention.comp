// Fused scaled-dot-product attention, FlashAttention-2 style (Dao 2023, "FlashAttention-2:
// Faster Attention with Better Parallelism and Work Partitioning"): one workgroup computes BQ
// query rows of one batch entry; keys and values stream through shared memory in tiles of
// BKV = 32 with the online softmax (running row max m and sum l; scores prescaled by
// scale * log2(e) so that exp2 can be used). The [L, S] scores are never stored.
// Head dims E (q, k) and Ev (v) <= DH = 64, zero padded. Causal: key j is seen by query i iff
// j <= i (top-left aligned, as torch), and key tiles past the block's last query are skipped.
// Invocation (tx, ty) = (id % 8, id / 8) holds rows 4ty..4ty+3, keys 4tx..4tx+3 of a score tile
// and output columns 4tx.. and 32+4tx..; row maxima and sums are combined through shared memory.
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

shared vec4 Qs[DH][BQ / 4u];   // Qs[d][r / 4][r % 4] = scaled q[r][d]
shared vec4 Ks[DH][BKV / 4u];  // Ks[d][j / 4][j % 4] = k[j][d]
shared vec4 Vs[BKV][DH / 4u];  // Vs[j][c / 4][c % 4] = v[j][c]
shared vec4 Ps[BKV][BQ / 4u];  // probabilities, Ps[j][r / 4][r % 4]
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
  for (int d = BD - 1; d >= 0; --d) {
    uint i = zz % u_bshape[d];
    zz /= u_bshape[d];
    q_off += i * u_bstride_q[d];
    k_off += i * u_bstride_k[d];
    v_off += i * u_bstride_v[d];
  }
  for (uint e = tid; e < BQ * DH; e += LOCAL_X) {
    uint r = e / DH, d = e % DH, gr = q0 + r;
    Qs[d][r / 4u][r % 4u] = (gr < u_L && d < u_E) ? float(load1(q_off + gr * u_q_sl + d * u_q_se)) * u_scale : 0.0;
  }
  // Per row i (0..3): running max m, sum l, output columns o[2i] (4tx..) and o[2i+1] (32+4tx..).
  // Register arrays are only indexed by constants (ROWS expands per row), so that compilers keep
  // them in registers.
  vec4 m = vec4(-F_INF), l = vec4(0.0);
  vec4 o[8];
  for (int i = 0; i < 8; ++i) o[i] = vec4(0.0);
  uint kend = u_causal != 0 ? min(u_S, q0 + BQ) : u_S;
  uvec4 lanes = uvec4(0u, 1u, 2u, 3u);
  for (uint k0 = 0u; k0 < kend; k0 += BKV) {
    workgroup_sync();  // the previous tile's readers are done (and Qs is written)
#ifdef KV_QUADS
    // f32 k and v contiguous along E with aligned rows: one 128-bit load per 4 dims.
    for (uint e = tid; e < BKV * DH / 4u; e += LOCAL_X) {
      uint j = e / (DH / 4u), dq = e % (DH / 4u), gj = k0 + j;
      bool in_s = gj < u_S;
      vec4 kq = (in_s && 4u * dq < u_E) ? qK[(k_off + gj * u_k_ss) / 4u + dq] : vec4(0.0);
      Ks[4u * dq][j / 4u][j % 4u] = kq.x;
      Ks[4u * dq + 1u][j / 4u][j % 4u] = kq.y;
      Ks[4u * dq + 2u][j / 4u][j % 4u] = kq.z;
      Ks[4u * dq + 3u][j / 4u][j % 4u] = kq.w;
      Vs[j][dq] = (in_s && 4u * dq < u_Ev) ? qV[(v_off + gj * u_v_ss) / 4u + dq] : vec4(0.0);
    }
#else
    for (uint e = tid; e < BKV * DH; e += LOCAL_X) {
      uint j = e / DH, d = e % DH, gj = k0 + j;
      bool in_s = gj < u_S;
      Ks[d][j / 4u][j % 4u] = (in_s && d < u_E) ? float(load2(k_off + gj * u_k_ss + d * u_k_se)) : 0.0;
      Vs[j][d / 4u][d % 4u] = (in_s && d < u_Ev) ? float(load3(v_off + gj * u_v_ss + d * u_v_se)) : 0.0;
    }
#endif
    workgroup_sync();
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    for (uint d = 0u; d < DH; ++d) {
      vec4 a = Qs[d][ty], b = Ks[d][tx];
      s0 += a.x * b;
      s1 += a.y * b;
      s2 += a.z * b;
      s3 += a.w * b;
    }
    uvec4 gj = uvec4(k0 + 4u * tx) + lanes;
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
    Ps[4u * tx][ty] = vec4(p0.x, p1.x, p2.x, p3.x);
    Ps[4u * tx + 1u][ty] = vec4(p0.y, p1.y, p2.y, p3.y);
    Ps[4u * tx + 2u][ty] = vec4(p0.z, p1.z, p2.z, p3.z);
    Ps[4u * tx + 3u][ty] = vec4(p0.w, p1.w, p2.w, p3.w);
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
