// Batch normalization (src/nn/batch_norm.cpp) over a contiguous x viewed as [N, C, S], S the
// product of the spatial dims; every value of channel c is x[(nb * C + c) * S + s], n = N * S of
// them. f32 compute. One variant per launch, chosen by a define:
//
//   BN_STATS        workgroup (p, c) reduces values [p * u_chunk, (p + 1) * u_chunk) of channel c:
//                   Welford per invocation (u_iters values, strided by LOCAL_X), Chan et al.'s
//                   merge of (count, mean, M2) in shared memory. Values are shifted by the
//                   channel's first value K (x - K is exact for values within a factor 2 of K,
//                   so large offsets keep the variance's digits); means stay shifted until FINAL.
//   BN_STATS_MERGE  the same over partials (count, mean, M2) of an earlier level.
//                   Both write partials [3][C][u_P] (counts, means, M2s), or with FINAL (one
//                   workgroup per channel): mean[c], invstd[c] = 1 / sqrt(M2 / n + eps) and the
//                   running statistics r = (1 - momentum) r + momentum * batch (unbiased variance).
//   BN_NORM         elementwise (ROWS or one invocation per element, below): y = (x - mean) *
//                   invstd [* weight] [+ bias]; with EVAL mean and var are the running
//                   statistics (invstd computed here); with RELU, y = relu(y) (NaN kept).
//                   MERGE_PARTIALS (ROWS, training): mean and invstd merged in each workgroup
//                   from BN_STATS' partials [3][C][u_P] (Chan et al., in shared memory, the same
//                   order in every workgroup of a channel), and written with the running
//                   statistics by the channel's workgroup (0, c, 0): no BN_STATS_MERGE dispatch.
//   BN_GRAD_SUMS    workgroup (p, c): partial sums of gy and gy * xhat, xhat = (x - mean) * invstd,
//                   written as [2][C][u_P] (at u_P = 1: sum(gy) for all channels, then
//                   sum(gy * xhat): dbias and dweight).
//   RELU_MASK       (BN_GRAD_SUMS, BN_DX) the fused ReLU's gradient: gy read as 0 where the
//                   forward's output y is not > 0 (NaN too: relu_backward's threshold).
//   POOL            (BN_NORM, BN_GRAD_SUMS, BN_DX) the following max pooling fused (windows that tile
//                   each [H, W] plane: stride = kernel, no padding, H = OH * KH, W = OW * KW):
//                   BN_NORM (ROWS grid over each channel's windows, not its values) writes the pooled
//                   y [N, C, OH, OW] and the window's argmax (i32, flat h * W + w; with RELU -1
//                   where the max is not > 0, NaN too: the ReLU's gradient), never y itself. The
//                   backward walks the windows, gy of an element being the window's pooled gradient
//                   where it is the window's argmax, else 0 (pooling's and the ReLU's backward in
//                   the loads: no gradient of y's size is written): BN_GRAD_SUMS's first level over
//                   the N * OH * OW windows of a channel (u_S = OH * OW there, u_xS = H * W), each
//                   adding its argmax's terms only; BN_DX on BN_NORM's POOL grid, each invocation
//                   writing its windows' elements.
//   BN_SUM_MERGE    the same over partial sums of an earlier level.
//   BN_DX           elementwise: dx = w * invstd * (gy - sum(gy) / n - xhat *
//                   sum(gy * xhat) / n) (torch's formula); with EVAL dx = gy * w * invstd.
//                   SUM_PARTIALS (ROWS, training): the sums added up in each workgroup from
//                   BN_GRAD_SUMS' partials [2][C][u_P], and written as [2][C] (dbias, dweight)
//                   by the channel's workgroup (0, c, 0): no BN_SUM_MERGE dispatch.
//
// Operands (host: src/nn/batch_norm.cpp):
//   BN_STATS / BN_STATS_MERGE: 0 = partials out or mean (FINAL), 1 = x or partials in,
//                              2 = invstd (FINAL), 3 = running_mean (HAS_RM), 4 = running_var (HAS_RV),
//                              5 = x (BN_STATS_MERGE with FINAL: the shift K)
//   BN_NORM:      0 = y (POOL: pooled y), 1 = x, 2 = mean (EVAL: running_mean), 3 = invstd (EVAL:
//                 running_var), 4 = weight (HAS_W), 5 = bias (HAS_B); MERGE_PARTIALS: 2 and 3
//                 written, 6 = partials [3][C][u_P], 7 = running_mean (HAS_RM), 8 = running_var
//                 (HAS_RV); POOL: 9 = argmax out (i32 [N, C, OH, OW])
//   BN_GRAD_SUMS: 0 = partial sums out, 1 = gy (POOL: pooled gy), 2 = x, 3 = mean, 4 = invstd (EVAL:
//                 running stats), 5 = y (RELU_MASK) or the argmax (POOL)
//   BN_SUM_MERGE: 0 = partial sums out, 1 = partial sums in
//   BN_DX:        0 = dx, 1 = gy (POOL: pooled gy), 2 = x, 3 = mean, 4 = invstd (EVAL: running stats),
//                 5 = weight (HAS_W), 6 = sums [2][C] (not EVAL; SUM_PARTIALS: partial sums
//                 [2][C][u_P]), 7 = y (RELU_MASK) or the argmax (POOL), 8 = sums [2][C] out
//                 (SUM_PARTIALS)
layout(local_size_x = LOCAL_X) in;

uniform uint u_C;
uniform uint u_S;

#ifdef POOL
uniform uint u_W;    // x's width
uniform uint u_OW;   // the pooled width
uniform uint u_OHW;  // windows per plane: OH * OW
uniform uint u_windows;  // windows per channel: N * OH * OW (BN_NORM, BN_DX)
uniform uint u_KH;   // window height (= stride)
uniform uint u_KW;   // window width (= stride)
#ifdef BN_GRAD_SUMS
#define load_argmax load5
uniform uint u_xS;  // x's plane: H * W (u_S is the windows' OH * OW)
#elif defined(BN_DX)
#define load_argmax load7
#endif
#endif

#if defined(BN_STATS) || defined(BN_STATS_MERGE) || defined(MERGE_PARTIALS)
// Chan, Golub & LeVeque's pairwise update of (count, mean, M2).
vec3 chan_merge(vec3 a, vec3 b) {
  if (b.x == 0.0) return a;
  if (a.x == 0.0) return b;
  float nt = a.x + b.x;
  float d = b.y - a.y;
  return vec3(nt, a.y + d * (b.x / nt), a.z + b.z + d * d * (a.x * (b.x / nt)));
}
#endif

#if defined(MERGE_PARTIALS) || defined(SUM_PARTIALS)
uniform uint u_P;            // partials per channel
uniform uint u_merge_iters;  // partials per invocation: ceil(u_P / LOCAL_X)
// The channel's workgroup that writes its merged values (one of the grid's (x, c, nb)).
bool channel_writer() { return gl_LocalInvocationID.x == 0u && WORKGROUP_ID.x == 0u && WORKGROUP_ID.z == 0u; }
#endif

#if defined(BN_STATS) || defined(BN_STATS_MERGE) || defined(BN_GRAD_SUMS) || defined(BN_SUM_MERGE)
uniform uint u_n;      // values (or partials) per channel to reduce
uniform uint u_iters;  // values per invocation
uniform uint u_chunk;  // values per workgroup: LOCAL_X * u_iters
uniform uint u_P;      // workgroups per channel (partials written per channel)
#endif
#if defined(BN_STATS) || defined(BN_GRAD_SUMS)
uniform uint u_step_n;  // LOCAL_X / S
uniform uint u_step_s;  // LOCAL_X % S
#endif

#if defined(BN_STATS) || defined(BN_GRAD_SUMS)
// Walks the values of channel c owned by this invocation without a division per value: j is the
// index in the channel, (nb, s) its batch and spatial position.
struct Walk {
  uint j, nb, s, cs, cbase;
};
Walk walk_start(uint c, uint p) {
  Walk w;
  w.j = p * u_chunk + gl_LocalInvocationID.x;
  w.nb = w.j / u_S;
  w.s = w.j - w.nb * u_S;
  w.cs = u_C * u_S;
  w.cbase = c * u_S;
  return w;
}
uint walk_elem(Walk w) { return w.nb * w.cs + w.cbase + w.s; }
void walk_next(inout Walk w) {
  w.j += LOCAL_X;
  w.nb += u_step_n;
  w.s += u_step_s;
  if (w.s >= u_S) {
    w.s -= u_S;
    w.nb += 1u;
  }
}
#endif

#if defined(BN_STATS) || defined(BN_STATS_MERGE) || defined(MERGE_PARTIALS)
#if defined(FINAL) || defined(MERGE_PARTIALS)
uniform float u_eps;
uniform float u_momentum;
uniform float u_count;      // n, the values per channel
uniform float u_unbias;     // 1 / (n - 1)
#endif
shared vec3 s_acc[LOCAL_X];
#endif

#if defined(BN_STATS) || defined(BN_STATS_MERGE)
void main() {
  uint p = WORKGROUP_ID.x, c = WORKGROUP_ID.y;
  uint tid = gl_LocalInvocationID.x;
  vec3 acc = vec3(0.0);
#ifdef BN_STATS
  float shift = float(load1(c * u_S));
  Walk w = walk_start(c, p);
  for (uint i = 0u; LOOP(i < u_iters); ++i) {
    if (w.j >= u_n) break;
    float x = float(load1(walk_elem(w))) - shift;
    acc.x += 1.0;
    float d = x - acc.y;
    acc.y += d / acc.x;
    acc.z += d * (x - acc.y);
    walk_next(w);
  }
#else
  uint CP = u_C * u_n;
  for (uint i = 0u; LOOP(i < u_iters); ++i) {
    uint j = p * u_chunk + tid + i * LOCAL_X;
    if (j >= u_n) break;
    uint e = c * u_n + j;
    acc = chan_merge(acc, vec3(float(load1(e)), float(load1(CP + e)), float(load1(2u * CP + e))));
  }
#endif
  s_acc[tid] = acc;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_acc[tid] = chan_merge(s_acc[tid], s_acc[tid + k]);
    workgroup_sync();
  }
  if (tid != 0u) return;
  vec3 r = s_acc[0];
#ifdef FINAL
#ifdef BN_STATS_MERGE
  float shift = float(load5(c * u_S));
#endif
  float mean = shift + r.y;
  store0(c, CT0(mean));
  store2(c, CT2(inversesqrt(r.z / u_count + u_eps)));
#ifdef HAS_RM
  store3(c, CT3((1.0 - u_momentum) * float(load3(c)) + u_momentum * mean));
#endif
#ifdef HAS_RV
  store4(c, CT4((1.0 - u_momentum) * float(load4(c)) + u_momentum * (r.z * u_unbias)));
#endif
#else
  uint o = c * u_P + p, CPo = u_C * u_P;
  store0(o, CT0(r.x));
  store0(CPo + o, CT0(r.y));
  store0(2u * CPo + o, CT0(r.z));
#endif
}
#endif

#if defined(BN_NORM) || defined(BN_GRAD_SUMS) || defined(BN_DX)
#ifdef EVAL
uniform float u_eps;
#endif
#endif


#if defined(BN_NORM) || defined(BN_DX)
// Elementwise grids. ROWS: workgroup (x, c, nb) covers s in [x * LOCAL_X * u_iters, ...) of row
// (nb, c), u_iters values per invocation strided by LOCAL_X: no division, the channel's values loaded (or merged) once per invocation. Otherwise
// (short rows) one invocation per element, c = (i / S) % C.
#ifdef ROWS
uniform uint u_iters;
#define ELEM_LOOP_BEGIN                                                    \
  uint c = WORKGROUP_ID.y;                                                 \
  uint s0 = WORKGROUP_ID.x * (LOCAL_X * u_iters) + gl_LocalInvocationID.x; \
  CHANNEL_VALUES                                                           \
  uint row = (WORKGROUP_ID.z * u_C + c) * u_S;                             \
  for (uint k = 0u; LOOP(k < u_iters); ++k) {                              \
    uint s = s0 + k * LOCAL_X;                                             \
    if (s >= u_S) break;                                                   \
    uint i = row + s;
#define ELEM_LOOP_END }
#else
uniform uint u_numel;
#define ELEM_LOOP_BEGIN          \
  uint i = GLOBAL_ID_1D;         \
  if (i >= u_numel) return;      \
  uint c = (i / u_S) % u_C;      \
  CHANNEL_VALUES                 \
  {
#define ELEM_LOOP_END }
#endif
#endif

#ifdef BN_NORM
#ifdef MERGE_PARTIALS
// Channel c's (mean, invstd) from the partials (count, mean - K, M2) [3][C][u_P], K = x[c * S]
// (BN_STATS' shift); the channel's writer stores them and updates the running statistics.
vec2 merged_stats(uint c) {
  uint tid = gl_LocalInvocationID.x, CP = u_C * u_P;
  vec3 acc = vec3(0.0);
  for (uint k = 0u; LOOP(k < u_merge_iters); ++k) {
    uint j = tid + k * LOCAL_X;
    if (j >= u_P) break;
    uint e = c * u_P + j;
    acc = chan_merge(acc, vec3(float(load6(e)), float(load6(CP + e)), float(load6(2u * CP + e))));
  }
  s_acc[tid] = acc;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_acc[tid] = chan_merge(s_acc[tid], s_acc[tid + k]);
    workgroup_sync();
  }
  vec3 r = s_acc[0];
  float mean = float(load1(c * u_S)) + r.y, invstd = inversesqrt(r.z / u_count + u_eps);
  if (channel_writer()) {
    store2(c, CT2(mean));
    store3(c, CT3(invstd));
#ifdef HAS_RM
    store7(c, CT7((1.0 - u_momentum) * float(load7(c)) + u_momentum * mean));
#endif
#ifdef HAS_RV
    store8(c, CT8((1.0 - u_momentum) * float(load8(c)) + u_momentum * (r.z * u_unbias)));
#endif
  }
  return vec2(mean, invstd);
}
#define MEAN stats.x
#define INVSTD stats.y
#elif defined(EVAL)
#define MEAN float(load2(c))
#define INVSTD inversesqrt(float(load3(c)) + u_eps)
#else
#define MEAN float(load2(c))
#define INVSTD float(load3(c))
#endif
#ifdef HAS_W
#define WEIGHT float(load4(c))
#else
#define WEIGHT 1.0
#endif
#ifdef HAS_B
#define BIAS float(load5(c))
#else
#define BIAS 0.0
#endif
// y = (x - mean) * scale + bias, scale = invstd * weight
#define CHANNEL_VALUES   \
  float mean = MEAN;             \
  float scale = INVSTD * WEIGHT; \
  float bias = BIAS;
#ifdef RELU
float out_act(float v) { return (v > 0.0 || is_nan(v)) ? v : 0.0; }
#else
float out_act(float v) { return v; }
#endif
#ifdef POOL
// Workgroup (x, c) covers windows [x * LOCAL_X * u_iters, ...) of channel c's N * OH * OW (window
// j: q = j % OHW of plane (j / OHW, c)), u_iters windows per invocation strided by LOCAL_X; each
// window's max as max_pool2d takes it (the first of equal values; NaN wins, the last NaN as torch's).
void main() {
#ifdef MERGE_PARTIALS
  vec2 stats = merged_stats(WORKGROUP_ID.y);  // before the window loop: every invocation takes part
#endif
  uint c = WORKGROUP_ID.y;
  uint j0 = WORKGROUP_ID.x * (LOCAL_X * u_iters) + gl_LocalInvocationID.x;
  CHANNEL_VALUES
  for (uint k = 0u; LOOP(k < u_iters); ++k) {
    uint j = j0 + k * LOCAL_X;
    if (j >= u_windows) break;
    uint nb = j / u_OHW, q = j - nb * u_OHW, plane = nb * u_C + c;
    uint oh = q / u_OW;
    uint first = oh * u_KH * u_W + (q - oh * u_OW) * u_KW;  // the window's first element in the plane
    float best = 0.0;
    int bi = -1;
    for (uint kh = 0u; LOOP(kh < u_KH); ++kh) {
      uint r = first + kh * u_W;
      for (uint kw = 0u; LOOP(kw < u_KW); ++kw) {
        float v = out_act((float(load1(plane * u_S + r + kw)) - mean) * scale + bias);
        if (bi < 0 || v > best || is_nan(v)) {  // torch's rule: the last NaN
          best = v;
          bi = int(r + kw);
        }
      }
    }
    uint o = plane * u_OHW + q;
    store0(o, CT0(best));
#ifdef RELU
    store9(o, best > 0.0 ? bi : -1);  // the ReLU's gradient is 0 where the max is not > 0
#else
    store9(o, bi);
#endif
  }
}
#else
void main() {
#ifdef MERGE_PARTIALS
  vec2 stats = merged_stats(WORKGROUP_ID.y);  // before the row loop: every invocation takes part
#endif
  ELEM_LOOP_BEGIN
  store0(i, CT0(out_act((float(load1(i)) - mean) * scale + bias)));
  ELEM_LOOP_END
}
#endif
#endif

#if defined(BN_GRAD_SUMS) || defined(BN_SUM_MERGE)
shared vec2 s_sum[LOCAL_X];
void main() {
  uint p = WORKGROUP_ID.x, c = WORKGROUP_ID.y;
  uint tid = gl_LocalInvocationID.x;
  vec2 acc = vec2(0.0);  // sum(gy), sum(gy * xhat)
#ifdef BN_GRAD_SUMS
  float mean = float(load3(c));
#ifdef EVAL
  float invstd = inversesqrt(float(load4(c)) + u_eps);
#else
  float invstd = float(load4(c));
#endif
  Walk w = walk_start(c, p);
  for (uint i = 0u; LOOP(i < u_iters); ++i) {
    if (w.j >= u_n) break;
    uint e = walk_elem(w);
#if defined(POOL)
    // window e: its argmax's terms (the forward wrote -1 where the ReLU's gradient is 0)
    int a = int(load_argmax(e));
    if (a >= 0) {
      float g = float(load1(e));
      acc += vec2(g, g * (float(load2((w.nb * u_C + c) * u_xS + uint(a))) - mean));
    }
#else
#ifdef RELU_MASK
    float g = float(load5(e)) > 0.0 ? float(load1(e)) : 0.0;
#else
    float g = float(load1(e));
#endif
    acc += vec2(g, g * (float(load2(e)) - mean));
#endif
    walk_next(w);
  }
  acc.y *= invstd;
#else
  uint CP = u_C * u_n;
  for (uint i = 0u; LOOP(i < u_iters); ++i) {
    uint j = p * u_chunk + tid + i * LOCAL_X;
    if (j >= u_n) break;
    uint e = c * u_n + j;
    acc += vec2(float(load1(e)), float(load1(CP + e)));
  }
#endif
  s_sum[tid] = acc;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_sum[tid] += s_sum[tid + k];
    workgroup_sync();
  }
  if (tid != 0u) return;
  uint o = c * u_P + p;
  store0(o, CT0(s_sum[0].x));
  store0(u_C * u_P + o, CT0(s_sum[0].y));
}
#endif

#ifdef BN_DX
#ifndef EVAL
uniform float u_inv_n;  // 1 / n
#endif
#ifdef SUM_PARTIALS
shared vec2 s_sum[LOCAL_X];
// Channel c's (sum(gy), sum(gy * xhat)) from the partial sums [2][C][u_P]; the channel's writer
// stores them [2][C] (dbias, dweight).
vec2 merged_sums(uint c) {
  uint tid = gl_LocalInvocationID.x, CP = u_C * u_P;
  vec2 acc = vec2(0.0);
  for (uint k = 0u; LOOP(k < u_merge_iters); ++k) {
    uint j = tid + k * LOCAL_X;
    if (j >= u_P) break;
    uint e = c * u_P + j;
    acc += vec2(float(load6(e)), float(load6(CP + e)));
  }
  s_sum[tid] = acc;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_sum[tid] += s_sum[tid + k];
    workgroup_sync();
  }
  vec2 r = s_sum[0];
  if (channel_writer()) {
    store8(c, CT8(r.x));
    store8(u_C + c, CT8(r.y));
  }
  return r;
}
#define SUM_GY sums.x
#define SUM_GY_XHAT sums.y
#else
#define SUM_GY float(load6(c))
#define SUM_GY_XHAT float(load6(u_C + c))
#endif
#if defined(RELU_MASK)
#define GY(i) (float(load7(i)) > 0.0 ? float(load1(i)) : 0.0)
#else
#define GY(i) float(load1(i))
#endif
#ifdef EVAL
#define INVSTD inversesqrt(float(load4(c)) + u_eps)
#else
#define INVSTD float(load4(c))
#endif
#ifdef HAS_W
#define WEIGHT float(load5(c))
#else
#define WEIGHT 1.0
#endif
#ifdef EVAL
// dx = gy * weight * invstd
#define CHANNEL_VALUES float scale = INVSTD * WEIGHT;
#else
// dx = scale * (gy - sum(gy) / n - (x - mean) * invstd * sum(gy * xhat) / n), scale = weight * invstd
#define CHANNEL_VALUES                                  \
  float invstd = INVSTD;                                \
  float scale = invstd * WEIGHT;                        \
  float mean = float(load3(c));                         \
  float mg = SUM_GY * u_inv_n;                          \
  float mgx = invstd * (SUM_GY_XHAT * u_inv_n);
#endif
#ifdef EVAL
#define DX(g, i) ((g) * scale)
#else
#define DX(g, i) (scale * ((g) - mg - (float(load2(i)) - mean) * mgx))
#endif
#ifdef POOL
// BN_NORM's POOL grid: each window's elements, gy the pooled gradient at the argmax, else 0.
void main() {
#ifdef SUM_PARTIALS
  vec2 sums = merged_sums(WORKGROUP_ID.y);  // before the window loop: every invocation takes part
#endif
  uint c = WORKGROUP_ID.y;
  uint j0 = WORKGROUP_ID.x * (LOCAL_X * u_iters) + gl_LocalInvocationID.x;
  CHANNEL_VALUES
  for (uint k = 0u; LOOP(k < u_iters); ++k) {
    uint j = j0 + k * LOCAL_X;
    if (j >= u_windows) break;
    uint nb = j / u_OHW, q = j - nb * u_OHW, plane = nb * u_C + c;
    uint o = plane * u_OHW + q;
    int a = int(load_argmax(o));
    float gp = a >= 0 ? float(load1(o)) : 0.0;
    uint oh = q / u_OW;
    uint first = oh * u_KH * u_W + (q - oh * u_OW) * u_KW;  // the window's first element in the plane
    for (uint kh = 0u; LOOP(kh < u_KH); ++kh) {
      uint r = first + kh * u_W;
      for (uint kw = 0u; LOOP(kw < u_KW); ++kw) {
        uint i = plane * u_S + r + kw;
        store0(i, CT0(DX(int(r + kw) == a ? gp : 0.0, i)));
      }
    }
  }
}
#else
void main() {
#ifdef SUM_PARTIALS
  vec2 sums = merged_sums(WORKGROUP_ID.y);  // before the row loop: every invocation takes part
#endif
  ELEM_LOOP_BEGIN
  store0(i, CT0(DX(GY(i), i)));
  ELEM_LOOP_END
}
#endif
#endif
