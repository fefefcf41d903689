// The ONNX recurrent layers' time loop in one dispatch (src/nn/rnn_seq.cpp, nn/rnn_plan.hpp):
// u_steps time steps from step u_step0 on, one workgroup per (direction d, batch row b), h in
// shared memory (two buffers: this step's and the next's), one barrier per step (GRU without
// GRU_LBR: two, r . h being the candidate's GEMV input). Invocation k owns the groups of W
// consecutive hidden units k, k + LOCAL_X, ... (W = 4 with QUADS: R^T read a quad at a time,
// h as vec4s; else 1) with all their gates: the GEMV h @ R^T of its gates, then the cell update
// (rnn.glsl: the cells' arithmetic, activations and clip, as rnn.comp). c (LSTM) is in shared
// memory too, read and written only by the unit's invocation, and loaded and stored once per
// dispatch as h is (c's buffer may be an output in host-visible memory: a replayed model's). A
// chunk continues from the h and c the previous one left in the buffers.
// Step s of direction d is time T - 1 - s when bit d of u_rev is set, else s. HAS_SEQ: at times
// t >= sequence_lens[b] the state stays and Y is 0 (as ONNX specifies).
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = R^T [D, H, G H]
//           (element (m, k H + j) = R[d, k H + j, m]: the units' rows contiguous across
//           invocations; QUADS: H a multiple of 4), 5 = bias [D, 2 G H] (Wb then Rb),
//           6 = P [D, 3 H] (HAS_P; i, o, f), 7 = sequence_lens [B] (HAS_SEQ).
// Loops of one invocation with U = ceil(H / W / LOCAL_X) groups, each counting its exit test
// (rnn_seq_loops): U + 1 to load and to store h, and per step 1 + phases * (U * (H / W + 2) + 2).
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_B;
uniform uint u_H;
uniform uint u_T;
uniform uint u_D;
uniform uint u_step0;
uniform uint u_steps;
uniform uint u_rev;

// FOR_W(X): X(i) for each unit i of a group, written out (no loop for the loop limit to count).
#ifdef QUADS
#define W 4u
#define VEC vec4
#define LOAD_R(e) quadR((e) >> 2u)
#define COMP(v, i) v[i]
#define FOR_W(X) X(0u) X(1u) X(2u) X(3u)
#else
#define W 1u
#define VEC float
#define LOAD_R(e) float(load4(e))
#define COMP(v, i) v
#define FOR_W(X) X(0u)
#endif

shared VEC hs[2u * MAX_H / W];
#if defined(CELL_LSTM)
shared VEC cs[MAX_H / W];  // c of the units
#endif
#if defined(CELL_GRU) && !defined(GRU_LBR)
shared VEC rh[MAX_H / W];  // r . h of this step
shared VEC zs[MAX_H / W];  // z of this step
#endif

// The workgroup's direction and batch row, and what follows from them.
#define H u_H
#define GH (G * u_H)
#define DIR (WORKGROUP_ID_1D / u_B)
#define ROW (WORKGROUP_ID_1D % u_B)
#define STATE ((DIR * u_B + ROW) * H)  // row of h and c
#define WB (DIR * 2u * GH)             // Wb of the direction; Rb follows at + GH

// x + h @ R^T + Wb + Rb of gate k of unit j (a: h @ R^T; xw: the step's row of XW)
float pre(uint xw, uint k, uint j, float a) {
  return float(load3(xw + k * H + j)) + a + float(load5(WB + k * H + j)) + float(load5(WB + GH + k * H + j));
}

// One unit's step from its gates' h @ R^T (a0..a3, as the cell has them): writes c and Y and
// returns the h to keep (GRU without GRU_LBR: writes r . h and z, and returns h_prev: the second
// phase computes h).
float unit_step(uint j, uint xw, uint y, bool live, float h_prev, float a0, float a1, float a2, float a3) {
#if defined(CELL_LSTM)
  vec3 p = vec3(0.0);
#ifdef HAS_P
  uint pp = DIR * 3u * H + j;
  p = vec3(float(load6(pp)), float(load6(pp + H)), float(load6(pp + 2u * H)));
#endif
  float c = COMP(cs[j / W], j % W);
  float h = lstm_cell(DIR, vec4(pre(xw, 0u, j, a0), pre(xw, 1u, j, a1), pre(xw, 2u, j, a2), pre(xw, 3u, j, a3)), p, c);
  if (live) COMP(cs[j / W], j % W) = c;
#elif defined(CELL_GRU)
  float z = act_f(DIR, gate_in(pre(xw, 0u, j, a0)));
  float r = act_f(DIR, gate_in(pre(xw, 1u, j, a1)));
#ifdef GRU_LBR
  float xn = float(load3(xw + 2u * H + j)) + float(load5(WB + 2u * H + j));
  float h = gru_h(DIR, z, xn + r * (a2 + float(load5(WB + GH + 2u * H + j))), h_prev);
#else
  COMP(rh[j / W], j % W) = r * h_prev;
  COMP(zs[j / W], j % W) = z;
  return h_prev;
#endif
#else  // CELL_RNN
  float h = act_f(DIR, gate_in(pre(xw, 0u, j, a0)));
#endif
#if !defined(CELL_GRU) || defined(GRU_LBR)
  store0(y + j, CT0(live ? h : 0.0));
  return live ? h : h_prev;
#endif
}

#if defined(CELL_GRU) && !defined(GRU_LBR)
// GRU's second phase for unit j: n = G(xn + (r . h) @ Rn^T + Rbn) from an = (r . h) @ Rn^T.
float gru_step2(uint j, uint xw, uint y, bool live, float h_prev, float z, float an) {
  float xn = float(load3(xw + 2u * H + j)) + float(load5(WB + 2u * H + j));
  float h = gru_h(DIR, z, xn + an + float(load5(WB + GH + 2u * H + j)), h_prev);
  store0(y + j, CT0(live ? h : 0.0));
  return live ? h : h_prev;
}
#endif

void main() {
  // a grid split past the dispatch limit rounds up (Launch::groups_1d): whole workgroups past the
  // last exit before any barrier
  if (WORKGROUP_ID_1D >= u_D * u_B) return;
  uint tid = gl_LocalInvocationID.x;
  uint d = DIR, b = ROW, state = STATE;
  uint rt = d * H * GH;  // R^T of direction d
  uint HW = H / W;       // groups of units
  bool rev = ((u_rev >> d) & 1u) != 0u;
#if defined(CELL_LSTM)
#define LOAD_H(i) COMP(hs[q], i) = float(load1(state + W * q + i)); COMP(cs[q], i) = float(load2(state + W * q + i));
#else
#define LOAD_H(i) COMP(hs[q], i) = float(load1(state + W * q + i));
#endif
  for (uint q = tid; LOOP(q < HW); q += uint(LOCAL_X)) {
    FOR_W(LOAD_H)
  }
  workgroup_sync();
  uint cur = 0u;  // hs[cur * MAX_H / W ...] is h before this step
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
    uint hp = cur * (MAX_H / W), hn = (1u - cur) * (MAX_H / W);
    for (uint q = tid; LOOP(q < HW); q += uint(LOCAL_X)) {
      // h @ R^T of the units' gates (GRU without GRU_LBR: z and r only)
      VEC a0 = VEC(0.0), a1 = VEC(0.0), a2 = VEC(0.0), a3 = VEC(0.0);
      uint e = rt + W * q;  // R^T row m's element of unit W q, gate 0
      for (uint mg = 0u; LOOP(mg < HW); ++mg, e += W * GH) {
        VEC hv = hs[hp + mg];
#if defined(CELL_LSTM)
#define ACC(i) { float hm = COMP(hv, i); uint ei = e + i * GH; a0 += hm * LOAD_R(ei); a1 += hm * LOAD_R(ei + H); \
                 a2 += hm * LOAD_R(ei + 2u * H); a3 += hm * LOAD_R(ei + 3u * H); }
#elif defined(GRU_LBR)
#define ACC(i) { float hm = COMP(hv, i); uint ei = e + i * GH; a0 += hm * LOAD_R(ei); a1 += hm * LOAD_R(ei + H); \
                 a2 += hm * LOAD_R(ei + 2u * H); }
#elif defined(CELL_GRU)
#define ACC(i) { float hm = COMP(hv, i); uint ei = e + i * GH; a0 += hm * LOAD_R(ei); a1 += hm * LOAD_R(ei + H); }
#else
#define ACC(i) a0 += COMP(hv, i) * LOAD_R(e + i * GH);
#endif
        FOR_W(ACC)
      }
      VEC hv = hs[hp + q], hnew;
#define UNIT(i) COMP(hnew, i) = unit_step(W * q + i, xw, y, live, COMP(hv, i), COMP(a0, i), COMP(a1, i), \
                                          COMP(a2, i), COMP(a3, i));
      FOR_W(UNIT)
      hs[hn + q] = hnew;
    }
#if defined(CELL_GRU) && !defined(GRU_LBR)
    workgroup_sync();
    // the candidate: n = G(xn + (r . h) @ Rn^T + Rbn)
    for (uint q = tid; LOOP(q < HW); q += uint(LOCAL_X)) {
      VEC an = VEC(0.0);
      uint e = rt + 2u * H + W * q;
      for (uint mg = 0u; LOOP(mg < HW); ++mg, e += W * GH) {
        VEC rv = rh[mg];
#define ACC_N(i) an += COMP(rv, i) * LOAD_R(e + i * GH);
        FOR_W(ACC_N)
      }
      VEC hv = hs[hp + q], zv = zs[q], hnew;
#define UNIT_N(i) COMP(hnew, i) = gru_step2(W * q + i, xw, y, live, COMP(hv, i), COMP(zv, i), COMP(an, i));
      FOR_W(UNIT_N)
      hs[hn + q] = hnew;
    }
#endif
    workgroup_sync();
    cur = 1u - cur;
  }
  uint hc = cur * (MAX_H / W);
#if defined(CELL_LSTM)
#define STORE_H(i) store1(state + W * q + i, CT1(COMP(hs[hc + q], i))); store2(state + W * q + i, CT2(COMP(cs[q], i)));
#else
#define STORE_H(i) store1(state + W * q + i, CT1(COMP(hs[hc + q], i)));
#endif
  for (uint q = tid; LOOP(q < HW); q += uint(LOCAL_X)) {
    FOR_W(STORE_H)
  }
}
