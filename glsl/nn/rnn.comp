// One time step of the ONNX recurrent layers (LSTM, GRU, RNN), src/nn/rnn.cpp: the gates of every
// direction, batch entry and hidden unit, one invocation each, from X @ W^T of all steps
// (precomputed in one matmul) and h @ R^T of this step (one batched matmul over the directions).
// f32 arithmetic. Gate order as ONNX writes W, R and B: LSTM i, o, f, c; GRU z, r, h; RNN i.
//
//   LSTM  i = F(xi + hi + Pi . c),  f = F(xf + hf + Pf . c) (INPUT_FORGET: 1 - i),
//         c' = f . c + i . G(xc + hc),  o = F(xo + ho + Po . c'),  h' = o . H(c')
//   GRU   z = F(xz + hz),  r = F(xr + hr),  GRU_LBR: n = G(xn + r . (h @ Rn^T + Rbn)),
//         else n = G(xn + (r . h) @ Rn^T + Rbn) (two stages: GRU_STAGE1 writes r . h),
//         h' = (1 - z) . n + z . h
//   RNN   h' = F(xi + hi)
// where x* = X @ W*^T + Wb*, h* = h @ R*^T + Rb*, each gate input clipped to [-clip, clip] (HAS_CLIP)
// before its activation. ACT_F<d>, ACT_G<d>, ACT_H<d> are direction d's activations.
// Step u_step of direction d is time T - 1 - u_step when bit d of u_rev is set, else u_step.
// HAS_SEQ: at times t >= sequence_lens[b] the state stays and Y is 0 (as ONNX specifies).
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = HR [D, B, GR],
//           5 = bias [D, 2 G H] (Wb then Rb), 6 = P [D, 3 H] (HAS_P; i, o, f),
//           7 = sequence_lens [B] (HAS_SEQ), 8 = GRU without GRU_LBR: r . h [D, B, H] (written
//           by GRU_STAGE1) or (r . h) @ Rn^T [D, B, H] (read by the second stage).
layout(local_size_x = LOCAL_X) in;

#include "activations.glsl"

uniform uint u_count;  // D * B * H
uniform uint u_B;
uniform uint u_H;
uniform uint u_T;
uniform uint u_D;
uniform uint u_GR;  // row length of HR
uniform uint u_step;
uniform uint u_rev;
uniform float u_clip;

// The activations ONNX names for recurrent layers, with their alpha and beta.
float rnn_relu(float x) { return max(x, 0.0); }
float rnn_tanh(float x) { return tanh_f(x); }
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

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  uint j = i % u_H;
  uint b = (i / u_H) % u_B;
  uint d = i / (u_H * u_B);
  uint t = ((u_rev >> d) & 1u) != 0u ? u_T - 1u - u_step : u_step;
#ifdef HAS_SEQ
  bool live = int(t) < load7(b);
#else
  bool live = true;
#endif
  uint GH = G * u_H;
  uint xw = ((d * u_T + t) * u_B + b) * GH + j;
  uint hr = (d * u_B + b) * u_GR + j;
  uint wb = d * 2u * GH + j;
  uint rb = wb + GH;
#ifdef LAYOUT1
  uint y = ((b * u_T + t) * u_D + d) * u_H + j;
#else
  uint y = ((t * u_D + d) * u_B + b) * u_H + j;
#endif
  float hp = float(load1(i));
#if defined(CELL_LSTM)
  float cp = float(load2(i));
  float pi = 0.0, po = 0.0, pf = 0.0;
#ifdef HAS_P
  uint p = d * 3u * u_H + j;
  pi = float(load6(p));
  po = float(load6(p + u_H));
  pf = float(load6(p + 2u * u_H));
#endif
  // x + h @ R^T + Wb + Rb of gate k (0 i, 1 o, 2 f, 3 c)
#define PRE(k) (float(load3(xw + k * u_H)) + float(load4(hr + k * u_H)) + float(load5(wb + k * u_H)) + \
                float(load5(rb + k * u_H)))
  float ig = act_f(d, gate_in(PRE(0u) + pi * cp));
#ifdef INPUT_FORGET
  float fg = 1.0 - ig;
#else
  float fg = act_f(d, gate_in(PRE(2u) + pf * cp));
#endif
  float cc = act_g(d, gate_in(PRE(3u)));
  float c = fg * cp + ig * cc;
  float og = act_f(d, gate_in(PRE(1u) + po * c));
  float h = og * act_h(d, c);
  if (live) {
    store1(i, CT1(h));
    store2(i, CT2(c));
    store0(y, CT0(h));
  } else {
    store0(y, CT0(0.0));
  }
#elif defined(CELL_GRU)
#define PRE(k) (float(load3(xw + k * u_H)) + float(load4(hr + k * u_H)) + float(load5(wb + k * u_H)) + \
                float(load5(rb + k * u_H)))
  float r = act_f(d, gate_in(PRE(1u)));
#ifdef GRU_STAGE1
  store8(i, CT8(r * hp));
#else
  float z = act_f(d, gate_in(PRE(0u)));
  float xn = float(load3(xw + 2u * u_H)) + float(load5(wb + 2u * u_H));
  float rbn = float(load5(rb + 2u * u_H));
#ifdef GRU_LBR
  float n = act_g(d, gate_in(xn + r * (float(load4(hr + 2u * u_H)) + rbn)));
#else
  float n = act_g(d, gate_in(xn + float(load8(i)) + rbn));
#endif
  float h = (1.0 - z) * n + z * hp;
  if (live) {
    store1(i, CT1(h));
    store0(y, CT0(h));
  } else {
    store0(y, CT0(0.0));
  }
#endif
#else  // CELL_RNN
  float h = act_f(d, gate_in(float(load3(xw)) + float(load4(hr)) + float(load5(wb)) + float(load5(rb))));
  if (live) {
    store1(i, CT1(h));
    store0(y, CT0(h));
  } else {
    store0(y, CT0(0.0));
  }
#endif
}
