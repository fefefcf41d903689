// The ONNX recurrent layers' time loop in one dispatch with R in registers (src/nn/rnn_seq.cpp,
// nn/rnn_plan.hpp: small hidden sizes on GPUs; LSTM, GRU with GRU_LBR, RNN): u_steps time steps
// from step u_step0 on, one workgroup per (direction d, batch row b), one invocation per gate row
// (gate k, unit j: row k HK + j), which keeps its row of R (HK floats) in registers for the whole
// dispatch. Per step: each row's h @ R^T (h from shared memory) plus its x W^T and biases into
// shared memory; a barrier; the first HK invocations run their unit's cell (rnn.glsl, as
// rnn.comp), c in a register, h back to shared memory and Y; a barrier. HK = H (a compile-time
// constant: the row's registers). A chunk continues from the h and c the previous one left.
// Step s of direction d is time T - 1 - s when bit d of u_rev is set, else s. HAS_SEQ: at times
// t >= sequence_lens[b] the state stays and Y is 0 (as ONNX specifies).
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = R [D, G H, H] (as ONNX
//           gives it), 5 = bias [D, 2 G H] (Wb then Rb), 6 = P [D, 3 H] (HAS_P; i, o, f),
//           7 = sequence_lens [B] (HAS_SEQ).
// Loops of one invocation (rnn_seq_regs_loops): HK + 1 to load R, per step 1 + (HK + 1) + 2.
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_B;
uniform uint u_T;
uniform uint u_D;
uniform uint u_step0;
uniform uint u_steps;
uniform uint u_rev;

shared float hs[HK];
shared float pre_s[G * HK];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint d = WORKGROUP_ID_1D / u_B, b = WORKGROUP_ID_1D % u_B;
  uint GH = G * HK;
  uint state = (d * u_B + b) * HK;
  bool row = tid < GH;
  bool unit = tid < HK;
  bool rev = ((u_rev >> d) & 1u) != 0u;
  float rr[HK];
  float bsum = 0.0;
  if (row) {
    uint r = (d * GH + tid) * HK;
    for (uint m = 0u; LOOP(m < HK); ++m) rr[m] = float(load4(r + m));
#if defined(CELL_GRU)
    // GRU_LBR: the candidate's Rbn goes inside r . (h @ Rn^T + Rbn), not into its pre-activation
    bsum = float(load5(d * 2u * GH + tid)) + (tid >= 2u * HK ? 0.0 : float(load5(d * 2u * GH + GH + tid)));
#else
    bsum = float(load5(d * 2u * GH + tid)) + float(load5(d * 2u * GH + GH + tid));
#endif
  }
  float c = 0.0;
  vec3 p = vec3(0.0);
  if (unit) {
    hs[tid] = float(load1(state + tid));
#if defined(CELL_LSTM)
    c = float(load2(state + tid));
#ifdef HAS_P
    uint pp = d * 3u * HK + tid;
    p = vec3(float(load6(pp)), float(load6(pp + HK)), float(load6(pp + 2u * HK)));
#endif
#endif
  }
  workgroup_sync();
  for (uint s = 0u; LOOP(s < u_steps); ++s) {
    uint t = rev ? u_T - 1u - (u_step0 + s) : u_step0 + s;
    uint xw = ((d * u_T + t) * u_B + b) * GH;
    if (row) {
      float acc = 0.0;
      for (uint m = 0u; LOOP(m < HK); ++m) acc += hs[m] * rr[m];
#if defined(CELL_GRU)
      // the candidate row keeps h @ Rn^T alone (its x part and biases are added in the cell)
      pre_s[tid] = tid >= 2u * HK ? acc : acc + float(load3(xw + tid)) + bsum;
#else
      pre_s[tid] = acc + float(load3(xw + tid)) + bsum;
#endif
    }
    workgroup_sync();
    if (unit) {
#ifdef HAS_SEQ
      bool live = int(t) < load7(b);
#else
      bool live = true;
#endif
#ifdef LAYOUT1
      uint y = ((b * u_T + t) * u_D + d) * HK + tid;
#else
      uint y = ((t * u_D + d) * u_B + b) * HK + tid;
#endif
      float hp = hs[tid];
#if defined(CELL_LSTM)
      float cn = c;
      float h = lstm_cell(d, vec4(pre_s[tid], pre_s[HK + tid], pre_s[2u * HK + tid], pre_s[3u * HK + tid]), p, cn);
      if (live) c = cn;
#elif defined(CELL_GRU) && defined(GRU_LBR)
      float z = act_f(d, gate_in(pre_s[tid]));
      float r = act_f(d, gate_in(pre_s[HK + tid]));
      uint wb = d * 2u * GH + 2u * HK + tid;
      float xn = float(load3(xw + 2u * HK + tid)) + float(load5(wb));
      float h = gru_h(d, z, xn + r * (pre_s[2u * HK + tid] + float(load5(wb + GH))), hp);
#else  // CELL_RNN
      float h = act_f(d, gate_in(pre_s[tid]));
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
