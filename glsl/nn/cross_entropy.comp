// Cross-entropy backward (src/nn/loss.cpp), one invocation per logit, f32 arithmetic:
//   dlogits[r, c] = (exp(x[r, c] - lse[r]) - q[r, c]) * w[r]
// q: the target distribution, u_on = 1 - label_smoothing at the target class plus u_off =
// label_smoothing / C everywhere; rows whose target is u_ignore get 0 (even where x holds NaN).
// lse: the rows' log-sum-exp saved by the forward; w: the upstream gradient per sample (one value
// for every row when u_w_step is 0: the mean's g / count, the sum's g). The forward needs no
// [N, C] buffer (log-sum-exp and the target's logit are row reductions); this is the only one.
// Operands: 0 = dlogits [N, C], 1 = logits [N, C] (both contiguous), 2 = lse [N], 3 = target
// (int32) [N], 4 = w.
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;  // N * C
uniform uint u_C;
uniform uint u_w_step;
uniform int u_ignore;
uniform float u_on;
uniform float u_off;

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
