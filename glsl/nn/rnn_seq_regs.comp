// The ONNX recurrent layers' time loop in one dispatch with R in registers (src/nn/rnn_seq.cpp,
// nn/rnn_plan.hpp: hidden sizes up to 64 on GPUs, 128 with GLTENSOR_RNN=units; LSTM, GRU with
// GRU_LBR, RNN): u_steps time
// steps from step u_step0 on, one workgroup per (direction d, batch row b), KS invocations per
// gate row (gate k, unit j: row k HK + j; invocation row KS + part), each summing h[m] R[row, m]
// over its M = HK / KS columns m = part + KS i: the first RR of them (i < RR) from registers
// loaded once per dispatch, the others from R's buffer (cached: the same every step). Per step:
// the units' x W^T loaded first (its latency overlapping the GEMV), the parts into shared memory; a barrier; the first HK invocations sum their unit's gates' parts
// and add x W^T and the biases (kept in registers), run the cell (rnn.glsl, as rnn.comp), c in a
// register, h back to shared memory and Y; a barrier. HK = H, KS (a power of 2 dividing HK) and
// RR <= HK / KS are compile-time constants. A chunk continues from the h and c the previous one
// left. Step s of direction d is time T - 1 - s when bit d of u_rev is set, else s. HAS_SEQ: at
// times t >= sequence_lens[b] the state stays and Y is 0 (as ONNX specifies).
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = R [D, G H, H] (as ONNX
//           gives it), 5 = bias [D, 2 G H] (Wb then Rb), 6 = P [D, 3 H] (HAS_P; i, o, f),
//           7 = sequence_lens [B] (HAS_SEQ).
// Loops of one invocation (rnn_seq_regs_loops): RR + 1 to load R, per step 1 + (M + 2) + (KS + 1) + 2.
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_B;
uniform uint u_T;
uniform uint u_D;
uniform uint u_step0;
uniform uint u_steps;
uniform uint u_rev;

#define M (HK / KS)
shared float hs[HK];
shared float part_s[G * HK * KS];

void main() {
  // a grid split past the dispatch limit rounds up (Launch::groups_1d): whole workgroups past the
  // last exit before any barrier
  if (WORKGROUP_ID_1D >= u_D * u_B) return;
  uint tid = gl_LocalInvocationID.x;
  uint d = WORKGROUP_ID_1D / u_B, b = WORKGROUP_ID_1D % u_B;
  uint GH = G * HK;
  uint state = (d * u_B + b) * HK;
  uint row = tid / KS, part = tid % KS;
  bool in_row = row < GH;
  bool unit = tid < HK;
  bool rev = ((u_rev >> d) & 1u) != 0u;
  uint r0 = (d * GH + row) * HK + part;  // R[d, row, part]; column part + KS i at r0 + KS i
  float rr[RR];
  if (in_row) {
    for (uint i = 0u; LOOP(i < RR); ++i) rr[i] = float(load4(r0 + KS * i));
  }
  // the unit's x-independent terms of each gate: Wb + Rb (GRU_LBR: the candidate's Wbn only, its
  // Rbn goes inside r . (h @ Rn^T + Rbn))
  float c = 0.0;
  vec4 bias = vec4(0.0);
  vec3 p = vec3(0.0);
  if (unit) {
    uint wb = d * 2u * GH + tid;
    hs[tid] = float(load1(state + tid));
#if defined(CELL_LSTM)
    c = float(load2(state + tid));
    bias = vec4(float(load5(wb)) + float(load5(wb + GH)), float(load5(wb + HK)) + float(load5(wb + GH + HK)),
                float(load5(wb + 2u * HK)) + float(load5(wb + GH + 2u * HK)),
                float(load5(wb + 3u * HK)) + float(load5(wb + GH + 3u * HK)));
#ifdef HAS_P
    uint pp = d * 3u * HK + tid;
    p = vec3(float(load6(pp)), float(load6(pp + HK)), float(load6(pp + 2u * HK)));
#endif
#elif defined(CELL_GRU) && defined(GRU_LBR)
    bias = vec4(float(load5(wb)) + float(load5(wb + GH)), float(load5(wb + HK)) + float(load5(wb + GH + HK)),
                float(load5(wb + 2u * HK)), float(load5(wb + GH + 2u * HK)));
#else
    bias.x = float(load5(wb)) + float(load5(wb + GH));
#endif
  }
  workgroup_sync();
  for (uint s = 0u; LOOP(s < u_steps); ++s) {
    uint t = rev ? u_T - 1u - (u_step0 + s) : u_step0 + s;
    // the unit's x W^T of the step, loaded before the GEMV (its latency overlaps it)
    vec4 x = vec4(0.0);
    bool live = true;
    if (unit) {
      uint xw = ((d * u_T + t) * u_B + b) * GH + tid;
#if defined(CELL_LSTM)
      x = vec4(float(load3(xw)), float(load3(xw + HK)), float(load3(xw + 2u * HK)), float(load3(xw + 3u * HK)));
#elif defined(CELL_GRU)
      x.xyz = vec3(float(load3(xw)), float(load3(xw + HK)), float(load3(xw + 2u * HK)));
#else
      x.x = float(load3(xw));
#endif
#ifdef HAS_SEQ
      live = int(t) < load7(b);
#endif
    }
    if (in_row) {
      float acc = 0.0;
      for (uint i = 0u; LOOP(i < RR); ++i) acc += hs[part + KS * i] * rr[i];
      for (uint i = RR; LOOP(i < M); ++i) acc += hs[part + KS * i] * float(load4(r0 + KS * i));
      part_s[tid] = acc;
    }
    workgroup_sync();
    if (unit) {
#ifdef LAYOUT1
      uint y = ((b * u_T + t) * u_D + d) * HK + tid;
#else
      uint y = ((t * u_D + d) * u_B + b) * HK + tid;
#endif
      // h @ R^T of gate k of this unit: its KS parts
      vec4 a = vec4(0.0);
      for (uint q = 0u; LOOP(q < KS); ++q) {
        a.x += part_s[tid * KS + q];
#if defined(CELL_LSTM) || defined(CELL_GRU)
        a.y += part_s[(HK + tid) * KS + q];
        a.z += part_s[(2u * HK + tid) * KS + q];
#endif
#if defined(CELL_LSTM)
        a.w += part_s[(3u * HK + tid) * KS + q];
#endif
      }
      float hp = hs[tid];
#if defined(CELL_LSTM)
      float cn = c;
      float h = lstm_cell(d, a + x + bias, p, cn);
      if (live) c = cn;
#elif defined(CELL_GRU) && defined(GRU_LBR)
      float z = act_f(d, gate_in(a.x + x.x + bias.x));
      float r = act_f(d, gate_in(a.y + x.y + bias.y));
      float h = gru_h(d, z, x.z + bias.z + r * (a.z + bias.w), hp);
#else  // CELL_RNN
      float h = act_f(d, gate_in(a.x + x.x + bias.x));
#endif
      store0(y, CT0(live ? h : 0.0));
      hs[tid] = live ? h : hp;
    }
    workgroup_sync();
  }
  if (unit) {
    store1(state + tid, CT1(hs[tid]));
#if defined(CELL_LSTM)
    store2(state + tid, CT2(c));
#endif
  }
}
