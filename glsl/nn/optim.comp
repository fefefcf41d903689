// Fused optimizer updates, one invocation per parameter element, one dispatch per tensor.
// Operands (contiguous f32): 0 = param (updated), 1 = grad, 2 = state1, 3 = state2.
// OPT opt_sgd: SGD (PyTorch torch.optim.SGD): g = grad + wd * p; with momentum: buf = mu * buf + (1 - damp) * g
//        (buf = g on the first step), g = nesterov ? g + mu * buf : buf; p -= lr * g.
// OPT opt_adam: Adam / AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019): m = b1 m + (1 - b1) g,
//        v = b2 v + (1 - b2) g^2, p -= lr * (m / c1) / (sqrt(v / c2) + eps) with c1 = 1 - b1^t,
//        c2 = 1 - b2^t. Adam adds wd * p to g; AdamW (DECOUPLED) multiplies p by 1 - lr * wd first.
// The names' values are private to this file.
#define opt_sgd 0
#define opt_adam 1

layout(local_size_x = LOCAL_X) in;
layout(std430, binding = 0) buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) buffer S1 { float s1[]; };
layout(std430, binding = 3) buffer S2 { float s2[]; };

uniform uint u_count;
uniform float u_lr;
uniform float u_wd;
uniform float u_a;   // SGD: momentum; Adam: beta1
uniform float u_b;   // SGD: dampening; Adam: beta2
uniform float u_eps;
uniform float u_c1;  // Adam bias corrections
uniform float u_c2;
uniform int u_first;  // SGD: first step (buffer := g)

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  float x = p[i];
  float d = g[i];
#if OPT == opt_sgd
  d += u_wd * x;
#ifdef MOMENTUM
  float buf = u_first != 0 ? d : u_a * s1[i] + (1.0 - u_b) * d;
  s1[i] = buf;
#ifdef NESTEROV
  d = d + u_a * buf;
#else
  d = buf;
#endif
#endif
  p[i] = x - u_lr * d;
#else
#ifdef DECOUPLED
  x *= 1.0 - u_lr * u_wd;
#else
  d += u_wd * x;
#endif
  float m = u_a * s1[i] + (1.0 - u_a) * d;
  float v = u_b * s2[i] + (1.0 - u_b) * d * d;
  s1[i] = m;
  s2[i] = v;
  p[i] = x - u_lr * (m / u_c1) / (sqrt(v / u_c2) + u_eps);
#endif
}
