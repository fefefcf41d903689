// The ONNX recurrent layers' time loop in one dispatch (src/nn/rnn_seq.cpp, nn/rnn_plan.hpp):
// u_steps time steps from step u_step0 on, one workgroup per (direction d, batch row b), h in
// shared memory (two buffers: this step's and the next's), one barrier per step (GRU without
// GRU_LBR: two, r . h being the candidate's GEMV input). Invocation k owns the hidden units
// k, k + LOCAL_X, ... with all their gates: the GEMV h @ R^T of its gates, then the cell update
// (rnn.glsl: the cells' arithmetic, activations and clip, as rnn.comp). c (LSTM) stays in its
// buffer, read and written only by the unit's invocation. A chunk continues from the h and c
// the previous one left in the buffers.
// Step s of direction d is time T - 1 - s when bit d of u_rev is set, else s. HAS_SEQ: at times
// t >= sequence_lens[b] the state stays and Y is 0 (as ONNX specifies).
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = R^T [D, H, G H]
//           (element (m, k H + j) = R[d, k H + j, m]: the units' rows contiguous across
//           invocations), 5 = bias [D, 2 G H] (Wb then Rb), 6 = P [D, 3 H] (HAS_P; i, o, f),
//           7 = sequence_lens [B] (HAS_SEQ).
// Loops of one invocation with U = ceil(H / LOCAL_X) units (rnn_seq_loops): 2 U to load and
// store h, and per step 1 + phases * U * (H + 1).
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_B;
uniform uint u_H;
uniform uint u_T;
uniform uint u_D;
uniform uint u_step0;
uniform uint u_steps;
uniform uint u_rev;

shared float hs[2u * MAX_H];
#if defined(CELL_GRU) && !defined(GRU_LBR)
shared float rh[MAX_H];  // r . h of this step
shared float zs[MAX_H];  // z of this step
#endif

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint b = WORKGROUP_ID_1D % u_B;
  uint d = WORKGROUP_ID_1D / u_B;
  uint H = u_H;
  uint GH = G * H;
  uint state = (d * u_B + b) * H;  // row of h and c
  uint rt = d * H * GH;            // R^T of direction d
  uint wb = d * 2u * GH;           // Wb of direction d; Rb follows at + GH
  bool rev = ((u_rev >> d) & 1u) != 0u;
  for (uint j = tid; LOOP(j < H); j += uint(LOCAL_X)) hs[j] = float(load1(state + j));
  workgroup_sync();
  uint cur = 0u;  // hs[cur * MAX_H ...] is h before this step
  for (uint s = 0u; LOOP(s < u_steps); ++s) {
    uint t = rev ? u_T - 1u - (u_step0 + s) : u_step0 + s;
#ifdef HAS_SEQ
    bool live = int(t) < load7(b);
#else
    bool live = true;
#endif
    uint xw = ((d * u_T + t) * u_B + b) * GH;
#ifdef LAYOUT1
    uint y = ((b * u_T + t) * u_D + d) * H;
#else
    uint y = ((t * u_D + d) * u_B + b) * H;
#endif
    uint hp = cur * uint(MAX_H), hn = (1u - cur) * uint(MAX_H);
    for (uint j = tid; LOOP(j < H); j += uint(LOCAL_X)) {
      // h @ R^T of the unit's gates (GRU without GRU_LBR: z and r only)
      float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
      for (uint m = 0u; LOOP(m < H); ++m) {
        float hm = hs[hp + m];
        uint r = rt + m * GH + j;
        a0 += hm * float(load4(r));
#if defined(CELL_LSTM) || defined(CELL_GRU)
        a1 += hm * float(load4(r + H));
#endif
#if defined(CELL_LSTM) || defined(GRU_LBR)
        a2 += hm * float(load4(r + 2u * H));
#endif
#ifdef CELL_LSTM
        a3 += hm * float(load4(r + 3u * H));
#endif
      }
      float h_prev = hs[hp + j];
      // x + h @ R^T + Wb + Rb of gate k
#define PRE(k, a) (float(load3(xw + k * H + j)) + a + float(load5(wb + k * H + j)) + float(load5(wb + GH + k * H + j)))
#if defined(CELL_LSTM)
      vec3 p = vec3(0.0);
#ifdef HAS_P
      uint pp = d * 3u * H + j;
      p = vec3(float(load6(pp)), float(load6(pp + H)), float(load6(pp + 2u * H)));
#endif
      float c = float(load2(state + j));
      float h = lstm_cell(d, vec4(PRE(0u, a0), PRE(1u, a1), PRE(2u, a2), PRE(3u, a3)), p, c);
      if (live) store2(state + j, CT2(c));
#elif defined(CELL_GRU)
      float z = act_f(d, gate_in(PRE(0u, a0)));
      float r = act_f(d, gate_in(PRE(1u, a1)));
#ifdef GRU_LBR
      float xn = float(load3(xw + 2u * H + j)) + float(load5(wb + 2u * H + j));
      float h = gru_h(d, z, xn + r * (a2 + float(load5(wb + GH + 2u * H + j))), h_prev);
#else
      rh[j] = r * h_prev;
      zs[j] = z;
#endif
#else  // CELL_RNN
      float h = act_f(d, gate_in(PRE(0u, a0)));
#endif
#if !defined(CELL_GRU) || defined(GRU_LBR)
      hs[hn + j] = live ? h : h_prev;
      store0(y + j, CT0(live ? h : 0.0));
#endif
    }
#if defined(CELL_GRU) && !defined(GRU_LBR)
    workgroup_sync();
    // the candidate: n = G(xn + (r . h) @ Rn^T + Rbn)
    for (uint j = tid; LOOP(j < H); j += uint(LOCAL_X)) {
      float an = 0.0;
      for (uint m = 0u; LOOP(m < H); ++m) an += rh[m] * float(load4(rt + m * GH + 2u * H + j));
      float xn = float(load3(xw + 2u * H + j)) + float(load5(wb + 2u * H + j));
      float h = gru_h(d, zs[j], xn + an + float(load5(wb + GH + 2u * H + j)), hs[hp + j]);
      hs[hn + j] = live ? h : hs[hp + j];
      store0(y + j, CT0(live ? h : 0.0));
    }
#endif
    workgroup_sync();
    cur = 1u - cur;
  }
  for (uint j = tid; LOOP(j < H); j += uint(LOCAL_X)) store1(state + j, CT1(hs[cur * uint(MAX_H) + j]));
}
