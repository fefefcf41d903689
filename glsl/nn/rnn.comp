// One time step of the ONNX recurrent layers (LSTM, GRU, RNN), src/nn/rnn.cpp: the gates of every
// direction, batch entry and hidden unit, one invocation each, from X @ W^T of all steps
// (precomputed in one matmul) and h @ R^T of this step (one batched matmul over the directions).
// The per-step path's unfused form (nn/rnn_plan.hpp: software rasterizers, batches past 8, GRU
// without GRU_LBR; GPUs otherwise run rnn_step.comp); rnn_seq.comp runs small layers. The cells' arithmetic is rnn.glsl's; gate order as ONNX writes W,
// R and B: LSTM i, o, f, c; GRU z, r, h; RNN i. GRU without GRU_LBR takes two stages: GRU_STAGE1
// writes r . h, the second reads (r . h) @ Rn^T.
// Step u_step of direction d is time T - 1 - u_step when bit d of u_rev is set, else u_step.
// HAS_SEQ: at times t >= sequence_lens[b] the state stays and Y is 0 (as ONNX specifies).
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = HR [D, B, GR],
//           5 = bias [D, 2 G H] (Wb then Rb), 6 = P [D, 3 H] (HAS_P; i, o, f),
//           7 = sequence_lens [B] (HAS_SEQ), 8 = GRU without GRU_LBR: r . h [D, B, H] (written
//           by GRU_STAGE1) or (r . h) @ Rn^T [D, B, H] (read by the second stage).
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_count;  // D * B * H
uniform uint u_B;
uniform uint u_H;
uniform uint u_T;
uniform uint u_D;
uniform uint u_GR;  // row length of HR
uniform uint u_step;
uniform uint u_rev;

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
  float c = float(load2(i));
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
  float h = lstm_cell(d, vec4(PRE(0u), PRE(1u), PRE(2u), PRE(3u)), vec3(pi, po, pf), c);
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
  float h = gru_h(d, z, xn + r * (float(load4(hr + 2u * u_H)) + rbn), hp);
#else
  float h = gru_h(d, z, xn + float(load8(i)) + rbn, hp);
#endif
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
