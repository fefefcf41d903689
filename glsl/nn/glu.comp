// Gated linear units (Shazeer 2020, "GLU Variants Improve Transformer"): out = ACT(gate) * up with
// ACT = act_silu (SwiGLU), act_gelu (GEGLU, erf) or act_gelu_tanh (GEGLU, tanh approximation),
// src/nn/transformer.cpp. Rows of F outputs, one invocation per output element, f32 arithmetic.
// FUSED: gate and up are the two halves of one contiguous [rows, 2F] tensor (gate first, as
// vLLM's SiluAndMul); otherwise two contiguous [rows, F] tensors.
//
//   forward:   out = ACT(gate) * up
//   BACKWARD:  dgate = gy * up * DACT(gate),  dup = gy * ACT(gate)
//
// Operands: forward 0 = out, 1 = gate (FUSED: gate_up), 2 = up (not FUSED);
//           BACKWARD 0 = dgate (FUSED: d gate_up, both halves), 1 = dup (not FUSED), 2 = gy,
//           3 = gate (FUSED: gate_up), 4 = up (not FUSED).
layout(local_size_x = LOCAL_X) in;

#include "activations.glsl"

uniform uint u_count;  // rows * F
uniform uint u_F;

// Derivatives of the activations.
float dact_silu(float x) {
  float s = 1.0 / (1.0 + exp(-x));
  return s * (1.0 + x * (1.0 - s));
}
float dact_gelu(float x) {  // Phi(x) + x phi(x)
  return 0.5 * (1.0 + erf_f(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x);
}
float dact_gelu_tanh(float x) {
  const float k = 0.7978845608028654;
  float t = tanh_f(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
#ifdef FUSED
  uint row = i / u_F;
  uint g = i + row * u_F;  // row * 2F + j
  uint u = g + u_F;
#else
  uint g = i, u = i;
#endif
#ifdef BACKWARD
  float gy = float(load2(i));
  float x = float(load3(g));
#ifdef FUSED
  float up = float(load3(u));
  store0(g, CT0(gy * up * DACT(x)));
  store0(u, CT0(gy * ACT(x)));
#else
  float up = float(load4(u));
  store0(g, CT0(gy * up * DACT(x)));
  store1(u, CT1(gy * ACT(x)));
#endif
#else
  float x = float(load1(g));
#ifdef FUSED
  float up = float(load1(u));
#else
  float up = float(load2(u));
#endif
  store0(i, CT0(ACT(x) * up));
#endif
}
