// Cross-entropy (src/nn/loss.cpp), f32 arithmetic.
// FORWARD: one invocation per row of C logits: lse[r] = log(sum(exp(x[r, :]))) (max first; NaN
// in the row gives NaN) and, with MEAN, the row mean in mean[r] (label smoothing). Operands:
// 0 = lse [N], 1 = logits [N, C] (contiguous), 2 = mean [N] (MEAN). Rows of more logits than
// the device's loop limit allows take logsumexp's split reduction instead.
// Backward (otherwise), one invocation per logit:
//   dlogits[r, c] = (exp(x[r, c] - lse[r]) - q[r, c]) * w[r]
// q: the target distribution, u_on = 1 - label_smoothing at the target class plus u_off =
// label_smoothing / C everywhere; rows whose target is u_ignore get 0 (even where x holds NaN).
// lse: the rows' log-sum-exp saved by the forward; w: the upstream gradient per sample (one value
// for every row when u_w_step is 0: the mean's g / count, the sum's g). The forward needs no
// [N, C] buffer (log-sum-exp and the target's logit are row reductions); this is the only one.
// Operands: 0 = dlogits [N, C], 1 = logits [N, C] (both contiguous), 2 = lse [N], 3 = target
// (int32) [N], 4 = w; with COUNT, 5 = the number of samples kept (f32 [1]), which w is divided
// by (the mean's g / count without a dispatch of its own).
// LOSS: the whole forward in one dispatch (the training step's loss): per row, lse[r] as
// FORWARD computes it and the loss term (1 - ls) * (lse - x[target]) + ls * (lse - mean(x[r, :]))
// (0 for rows whose target is u_ignore, whose logits are not read; a target outside [0, C) is
// recorded in the error flag buffer, ErrorFlags::kIndex, and counts as ignored). Without REDUCE,
// one invocation per row writes its term to loss[r]; with REDUCE, ONE workgroup loops over the
// rows and sums the terms and the kept rows in shared memory: loss[0] = the sum, or (DIVIDE)
// sum / count (NaN if no row is kept, as torch), count[0] = the rows kept. Operands: 0 = lse [N],
// 1 = logits [N, C] (contiguous), 2 = target (int32) [N], 3 = loss, 4 = the error flag, 5 =
// count (REDUCE).
layout(local_size_x = LOCAL_X) in;

uniform uint u_C;
#if !defined(FORWARD) && !defined(LOSS)
uniform uint u_count;  // N * C
uniform uint u_w_step;
uniform int u_ignore;
uniform float u_on;
uniform float u_off;
#endif

#ifdef LOSS
uniform uint u_rows;
uniform int u_ignore;
uniform float u_ls;  // label smoothing
layout(std430, binding = 4) buffer Flag { uint err_flag[]; };

// Row r's log-sum-exp (stored to lse[r]) and loss term; kept = 0 for an ignored or bad target.
float row_loss(uint r, out float kept) {
  kept = 0.0;
  int t = int(load2(r));
  if (t == u_ignore) return 0.0;
  if (t < 0 || t >= int(u_C)) {
    atomicOr(err_flag[0], 1u);  // ErrorFlags::kIndex
    return 0.0;
  }
  kept = 1.0;
  uint base = r * u_C;
  float m = -F_INF;
  bool nan = false;
  for (uint c = 0u; LOOP(c < u_C); ++c) {
    float x = float(load1(base + c));
    nan = nan || is_nan(x);
    m = max(m, x);
  }
  float s = 0.0, sx = 0.0;
  for (uint c = 0u; LOOP(c < u_C); ++c) {
    float x = float(load1(base + c));
    s += exp(x - m);
    sx += x;
  }
  float lse = nan ? F_NAN : is_inf(m) ? m : m + log(s);
  store0(r, CT0(lse));
  float nll = lse - float(load1(base + uint(t)));
  return u_ls > 0.0 ? (1.0 - u_ls) * nll + u_ls * (lse - sx / float(u_C)) : nll;
}

#ifdef REDUCE
shared float s_sum[LOCAL_X];
shared float s_kept[LOCAL_X];

void main() {
  uint tid = gl_LocalInvocationID.x;
  float total = 0.0, count = 0.0;
  for (uint r = tid; LOOP(r < u_rows); r += uint(LOCAL_X)) {
    float kept;
    float l = row_loss(r, kept);
    total += l;
    count += kept;
  }
  s_sum[tid] = total;
  s_kept[tid] = count;
  barrier();
  for (uint s = uint(LOCAL_X) / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      s_sum[tid] += s_sum[tid + s];
      s_kept[tid] += s_kept[tid + s];
    }
    barrier();
  }
  if (tid == 0u) {
#ifdef DIVIDE
    store3(0u, CT3(s_kept[0] > 0.0 ? s_sum[0] / s_kept[0] : F_NAN));
#else
    store3(0u, CT3(s_sum[0]));
#endif
    store5(0u, CT5(s_kept[0]));
  }
}
#else
void main() {
  uint r = GLOBAL_ID_1D;
  if (r >= u_rows) return;
  float kept;
  store3(r, CT3(row_loss(r, kept)));
}
#endif

#elif defined(FORWARD)
uniform uint u_rows;

void main() {
  uint r = GLOBAL_ID_1D;
  if (r >= u_rows) return;
  uint base = r * u_C;
  float m = -F_INF;
  bool nan = false;
  for (uint c = 0u; LOOP(c < u_C); ++c) {
    float x = float(load1(base + c));
    nan = nan || is_nan(x);
    m = max(m, x);
  }
  float s = 0.0, sx = 0.0;
  for (uint c = 0u; LOOP(c < u_C); ++c) {
    float x = float(load1(base + c));
    s += exp(x - m);
    sx += x;
  }
  // A row of -inf: log(0) = -inf (torch's logsumexp); +inf: inf.
  float lse = nan ? F_NAN : is_inf(m) ? m : m + log(s);
  store0(r, CT0(lse));
#ifdef MEAN
  store2(r, CT2(sx / float(u_C)));
#endif
}
#else
void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  uint r = i / u_C;
  int c = int(i - r * u_C);
  int t = int(load3(r));
  float d = 0.0;
  if (t != u_ignore) {
    float p = exp(float(load1(i)) - float(load2(r)));
    float w = float(load4(r * u_w_step));
#ifdef COUNT
    w /= float(load5(0u));
#endif
    d = (p - (c == t ? u_on : 0.0) - u_off) * w;
  }
  store0(i, CT0(d));
}
#endif
