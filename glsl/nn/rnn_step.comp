// One time step of the ONNX recurrent layers (LSTM, GRU with GRU_LBR, RNN) in one dispatch: the
// recurrent GEMV h @ R^T and the cell update together (src/nn/rnn.cpp's fused per-step path, for
// hidden sizes past the sequence kernel's bounds). One workgroup per (direction d, batch row b,
// slice of S hidden units), every direction in the same dispatch; LOCAL_X = G S KS invocations:
// invocation (gate k, unit u, part p) sums h[m] R[d, k H + j, m] over m = p, p + KS, ... (j the
// slice's unit u), the KS parts are summed in shared memory, then the slice's first S
// invocations run the cell (rnn.glsl, as rnn.comp and rnn_seq.comp). h is read from one buffer
// and written to another (h_{t-1} is read by every workgroup of the row while some write h_t),
// and so is c (LSTM); the host alternates the pair between steps and binds the final outputs
// Y_h / Y_c as the last step's targets, so no buffer is read and written by many steps but the
// pair. The cell's operands (XW, biases, h_{t-1}, c_{t-1}, P) are loaded before the GEMV, so
// that their latency overlaps it. Step u_step of direction d is time T - 1 - u_step when bit d of
// u_rev is set, else u_step. HAS_SEQ: at times t >= sequence_lens[b] h and c are copied over and Y is 0.
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h_t [D, B, H] (written),
//           2 = c_t [D, B, H] (LSTM, written), 3 = XW [D, T, B, G H], 4 = R [D, G H, H] (as ONNX
//           gives it: rows contiguous), 5 = bias [D, 2 G H] (Wb then Rb), 6 = P [D, 3 H] (HAS_P;
//           i, o, f), 7 = sequence_lens [B] (HAS_SEQ), 8 = h_{t-1} [D, B, H], 9 = c_{t-1} [D, B, H]
//           (LSTM).
// Loops of one invocation: ceil(H / KS) + 1 for the GEMV, log2(KS) + 1 for the sum of parts.
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_B;
uniform uint u_H;
uniform uint u_T;
uniform uint u_D;
uniform uint u_step;
uniform uint u_rev;

shared float red[LOCAL_X];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint slices = (u_H + S - 1u) / S;
  // a grid split past the dispatch limit rounds up (Launch::groups_1d): whole workgroups past the
  // last exit before any barrier
  if (WORKGROUP_ID_1D >= u_D * u_B * slices) return;
  uint slice = WORKGROUP_ID_1D % slices;
  uint db = WORKGROUP_ID_1D / slices;  // d B + b
  uint b = db % u_B, d = db / u_B;
  // The cell's operands, loaded by the slice's first S invocations before the GEMV (their latency
  // overlaps it): x W^T + Wb + Rb of each gate (GRU_LBR's candidate: x W^T + Wbn, Rbn apart),
  // h_{t-1} and c_{t-1} of the unit, the peepholes.
  uint ju = slice * S + tid;
  bool cell = tid < S && ju < u_H;
  uint t = ((u_rev >> d) & 1u) != 0u ? u_T - 1u - u_step : u_step;
  uint GH = G * u_H;
  uint i = db * u_H + ju;  // the unit's element of h and c
  vec4 xb = vec4(0.0);
  vec3 p = vec3(0.0);
  float hp = 0.0, c = 0.0, rbn = 0.0;
  bool live = true;
  if (cell) {
    uint xw = ((d * u_T + t) * u_B + b) * GH + ju;
    uint wb = d * 2u * GH + ju;
#define XB(k) (float(load3(xw + (k) * u_H)) + float(load5(wb + (k) * u_H)) + float(load5(wb + GH + (k) * u_H)))
#if defined(CELL_LSTM)
    xb = vec4(XB(0u), XB(1u), XB(2u), XB(3u));
    c = float(load9(i));
#ifdef HAS_P
    uint pp = d * 3u * u_H + ju;
    p = vec3(float(load6(pp)), float(load6(pp + u_H)), float(load6(pp + 2u * u_H)));
#endif
#elif defined(CELL_GRU) && defined(GRU_LBR)  // (GRU without it: rnn.comp's two stages)
    xb = vec4(XB(0u), XB(1u), float(load3(xw + 2u * u_H)) + float(load5(wb + 2u * u_H)), 0.0);
    rbn = float(load5(wb + GH + 2u * u_H));
#else  // CELL_RNN
    xb.x = XB(0u);
#endif
    hp = float(load8(i));
#ifdef HAS_SEQ
    live = int(t) < load7(b);
#endif
  }
  uint row = tid / KS, part = tid % KS;  // row = k S + u
  uint k = row / S, j = slice * S + row % S;
  float acc = 0.0;
  if (j < u_H) {
    uint r = (d * G * u_H + k * u_H + j) * u_H;  // R[d, k H + j, :]
    uint h0 = db * u_H;
    for (uint m = part; LOOP(m < u_H); m += KS) acc += float(load8(h0 + m)) * float(load4(r + m));
  }
  red[tid] = acc;
  workgroup_sync();
  for (uint st = KS / 2u; LOOP(st > 0u); st >>= 1u) {
    if (part < st) red[tid] += red[tid + st];
    workgroup_sync();
  }
  if (!cell) return;
#ifdef LAYOUT1
  uint y = ((b * u_T + t) * u_D + d) * u_H + ju;
#else
  uint y = ((t * u_D + d) * u_B + b) * u_H + ju;
#endif
  // h @ R^T of gate k of this unit: red[(k S + tid) KS]
#define HR(k) red[((k) * S + tid) * KS]
#if defined(CELL_LSTM)
  float cp = c;
  float h = lstm_cell(d, xb + vec4(HR(0u), HR(1u), HR(2u), HR(3u)), p, c);
  store2(i, CT2(live ? c : cp));
#elif defined(CELL_GRU) && defined(GRU_LBR)
  float z = act_f(d, gate_in(xb.x + HR(0u)));
  float r = act_f(d, gate_in(xb.y + HR(1u)));
  float h = gru_h(d, z, xb.z + r * (HR(2u) + rbn), hp);
#else  // CELL_RNN
  float h = act_f(d, gate_in(xb.x + HR(0u)));
#endif
  store1(i, CT1(live ? h : hp));
  store0(y, CT0(live ? h : 0.0));
}
