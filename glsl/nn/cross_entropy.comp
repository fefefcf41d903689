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
// (int32) [N], 4 = w.
layout(local_size_x = LOCAL_X) in;

uniform uint u_C;
#ifndef FORWARD
uniform uint u_count;  // N * C
uniform uint u_w_step;
uniform int u_ignore;
uniform float u_on;
uniform float u_off;
#endif

#ifdef FORWARD
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
    d = (p - (c == t ? u_on : 0.0) - u_off) * float(load4(r * u_w_step));
  }
  store0(i, CT0(d));
}
#endif
