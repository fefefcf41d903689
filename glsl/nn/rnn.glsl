// The ONNX recurrent layers' cell arithmetic, shared by the per-step gate kernel (rnn.comp) and
// the sequence kernel (rnn_seq.comp). f32. ACT_F<d>, ACT_G<d>, ACT_H<d> are direction d's
// activations (calls of the rnn_<name> functions below, with the model's alpha and beta);
// HAS_CLIP clips every gate input to [-u_clip, u_clip] before its activation.
//
//   LSTM  i = F(xi + hi + Pi . c),  f = F(xf + hf + Pf . c) (INPUT_FORGET: 1 - i),
//         c' = f . c + i . G(xc + hc),  o = F(xo + ho + Po . c'),  h' = o . H(c')
//   GRU   z = F(xz + hz),  r = F(xr + hr),  GRU_LBR: n = G(xn + r . (h @ Rn^T + Rbn)),
//         else n = G(xn + (r . h) @ Rn^T + Rbn),  h' = (1 - z) . n + z . h
//   RNN   h' = F(xi + hi)
// where x* = X @ W*^T + Wb*, h* = h @ R*^T + Rb*.
#include "activations.glsl"

uniform float u_clip;

// The activations ONNX names for recurrent layers, with their alpha and beta.
float rnn_relu(float x) { return max(x, 0.0); }
// tanh as 2 sigmoid(2x) - 1: within 2e-7 of tanh_f absolutely (not relatively near 0, where the
// cells add it to larger terms), about half its latency, on every step's critical path twice (an
// LSTM at hidden 64 and 128 on the H200: 0.75x and 0.92x the time with tanh_f, window 3)
float rnn_tanh(float x) { return 2.0 / (1.0 + exp(-2.0 * x)) - 1.0; }
float rnn_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
float rnn_affine(float x, float a, float b) { return a * x + b; }
float rnn_leakyrelu(float x, float a) { return x >= 0.0 ? x : a * x; }
float rnn_thresholdedrelu(float x, float a) { return x > a ? x : 0.0; }
float rnn_scaledtanh(float x, float a, float b) { return a * tanh_f(b * x); }
float rnn_hardsigmoid(float x, float a, float b) { return clamp(a * x + b, 0.0, 1.0); }
float rnn_elu(float x, float a) { return x >= 0.0 ? x : a * (exp(x) - 1.0); }
float rnn_softsign(float x) { return x / (1.0 + abs(x)); }
float rnn_softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

float gate_in(float x) {
#ifdef HAS_CLIP
  return clamp(x, -u_clip, u_clip);
#else
  return x;
#endif
}

float act_f(uint d, float x) { return d == 0u ? ACT_F0(x) : ACT_F1(x); }
#if defined(ACT_G0)
float act_g(uint d, float x) { return d == 0u ? ACT_G0(x) : ACT_G1(x); }
#endif
#if defined(ACT_H0)
float act_h(uint d, float x) { return d == 0u ? ACT_H0(x) : ACT_H1(x); }
#endif

#if defined(CELL_LSTM)
// One LSTM unit of direction d: pre = x + h @ R^T + Wb + Rb of the gates i, o, f, c; p the
// peepholes i, o, f; c the cell state, replaced by the new one. Returns the new h.
float lstm_cell(uint d, vec4 pre, vec3 p, inout float c) {
  float ig = act_f(d, gate_in(pre.x + p.x * c));
#ifdef INPUT_FORGET
  float fg = 1.0 - ig;
#else
  float fg = act_f(d, gate_in(pre.z + p.z * c));
#endif
  float cc = act_g(d, gate_in(pre.w));
  c = fg * c + ig * cc;
  float og = act_f(d, gate_in(pre.y + p.y * c));
  return og * act_h(d, c);
}
#elif defined(CELL_GRU)
// GRU's new h of a unit from its update gate z, the candidate's input n_in (before G) and h.
float gru_h(uint d, float z, float n_in, float hp) { return (1.0 - z) * act_g(d, gate_in(n_in)) + z * hp; }
#endif
