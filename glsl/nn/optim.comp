// Fused optimizer updates of K parameter tensors in one dispatch (multi-tensor apply, as
// PyTorch's foreach / fused optimizers), one invocation per parameter element.
// Operands (contiguous f32): 2k = param k (updated), 2k + 1 = its gradient (k < K); the
// optimizer states of all K tensors in flat buffers after them: 2K = state1 (STATE1), 2K + 1 =
// state2 (STATE2). LOAD_P / LOAD_G / STORE_P(k, ...) select tensor k's operand and LOAD_S1 ...
// the states' (macros from OptimVariant). Tensor k holds elements [u_end[k - 1], u_end[k]) of
// the grid (u_end[-1] = 0), its gradient from element u_grad_off[k] of its buffer (gradients may
// share one), its state at u_state[k] of the flat buffers, its weight decay u_wd[k]. LOAD_P(k, j)
// and LOAD_G(k, j) select among K loads, each at an index clamped into its own tensor (min(j,
// u_end[q] - u_end[q - 1] - 1) for tensor q, constant indices): safe by construction where a
// compiler evaluates all K loads and selects one (a shorter tensor's buffer is never read past
// its end); for tensor k itself the clamp changes no value. Uniform arrays are indexed in range.
// OPT opt_sgd: SGD (PyTorch torch.optim.SGD): g = grad + wd * p; with momentum: buf = mu * buf + (1 - damp) * g
//        (buf = g on the first step), g = nesterov ? g + mu * buf : buf; p -= lr * g.
// OPT opt_adam: Adam / AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019): m = b1 m + (1 - b1) g,
//        v = b2 v + (1 - b2) g^2, p -= lr * (m / c1) / (sqrt(v / c2) + eps) with c1 = 1 - b1^t,
//        c2 = 1 - b2^t. Adam adds wd * p to g; AdamW (DECOUPLED) multiplies p by 1 - lr * wd first.
// The names' values are private to this file.
#define opt_sgd 0
#define opt_adam 1

layout(local_size_x = LOCAL_X) in;

uniform uint u_end[K];
uniform uint u_state[K];
uniform uint u_grad_off[K];  // each gradient's first element in its buffer
uniform float u_wd[K];
uniform float u_lr;
uniform float u_a;   // SGD: momentum; Adam: beta1
uniform float u_b;   // SGD: dampening; Adam: beta2
uniform float u_eps;
uniform float u_c1;  // Adam bias corrections
uniform float u_c2;
uniform int u_first;  // SGD: first step (buffer := g)

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_end[K - 1]) return;
  uint k = 0u;
  for (uint q = 0u; q + 1u < uint(K); ++q) k += i >= u_end[q] ? 1u : 0u;
  uint j = i - (k == 0u ? 0u : u_end[max(k, 1u) - 1u]);
  uint s = u_state[k] + j;
  float x = LOAD_P(k, j);
  float d = LOAD_G(k, j);
  float wd = u_wd[k];
#if OPT == opt_sgd
  d += wd * x;
#ifdef MOMENTUM
  float buf = u_first != 0 ? d : u_a * LOAD_S1(s) + (1.0 - u_b) * d;
  STORE_S1(s, buf);
#ifdef NESTEROV
  d = d + u_a * buf;
#else
  d = buf;
#endif
#endif
  STORE_P(k, j, x - u_lr * d);
#else
#ifdef DECOUPLED
  x *= 1.0 - u_lr * wd;
#else
  d += wd * x;
#endif
  float m = u_a * LOAD_S1(s) + (1.0 - u_a) * d;
  float v = u_b * LOAD_S2(s) + (1.0 - u_b) * d * d;
  STORE_S1(s, m);
  STORE_S2(s, v);
  STORE_P(k, j, x - u_lr * (m / u_c1) / (sqrt(v / u_c2) + u_eps));
#endif
}
