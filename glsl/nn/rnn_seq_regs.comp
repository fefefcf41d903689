// The ONNX recurrent layers' time loop in one dispatch with R in registers (src/nn/rnn_seq.cpp,
// nn/rnn_plan.hpp: hidden sizes up to 128 on GPUs, up to 256 as GRID; LSTM, GRU with GRU_LBR,
// RNN): u_steps time steps from step u_step0 on, one workgroup per (direction d, batch row b),
// the persistent form of cuDNN's RNN within one workgroup. KS invocations per hidden unit j
// (lane j KS + part; under SUBGROUP lanes are numbered by subgroup, gl_SubgroupID gl_SubgroupSize
// + gl_SubgroupInvocationID, else lane = gl_LocalInvocationID.x), each holding all G gate rows of
// its unit over M = HK / KS columns of R: chunks of W consecutive columns (W = 4 where M % 4 ==
// 0, QUAD_COLS: 128-bit loads of h and R, else 1), chunk q of part p at column W (p + KS q); the
// first QR = RR / W chunks of each gate row in registers loaded once per dispatch, the others
// read from R's buffer each step (the same every step: cached). Per step: the unit's x W^T loaded
// first (its latency overlapping the GEMV), the G partial sums of h @ R^T over the
// invocation's columns, summed over the KS parts by subgroup shuffles (SUBGROUP: the KS lanes of
// a unit are consecutive lanes of one subgroup; else through shared memory and a barrier), every
// part then runs the unit's cell (rnn.glsl, as rnn.comp) on the same sums, so that c stays in a
// register of each; part 0 writes the new h into the other of two shared h buffers and Y; one
// barrier a step. HK = H, KS (a power of 2 dividing HK), QUAD_COLS and RR (a multiple of W, at
// most M) are compile-time constants. A chunk continues from the h and c the previous one left.
// Step s of direction d is time T - 1 - s when bit d of u_rev is set, else s. Bits 0 and 1 of
// u_zero: h and c start from zeros (the first chunk without an initial state; the buffers are
// not read). HAS_SEQ: at times t >= sequence_lens[b] the state stays and Y is 0 (as ONNX
// specifies).
//
// GRID (NG > 1 workgroups per direction and batch row, each with HK / NG units: past one
// workgroup's registers): each step's new h also goes to XH, and the workgroups of a (d, b) meet
// at a counter in CNT (its target NG (step + 1)), polled by one invocation, then read the whole h
// from XH into shared memory: 3 barriers a step; x W^T loaded a step ahead. It needs all D B NG
// workgroups running at once: the plan takes GRID only where they are at most the multiprocessors
// CUDA reports for the GPU (runtime/cuda_memory.hpp's cuda_multiprocessors; each workgroup fits one)
// and 16; a poll that still gives up (2^20 reads) raises ErrorFlags::kStall (binding 10, the flag
// word): the host throws.
//
// Operands: 0 = Y (layout 0: [T, D, B, H]; LAYOUT1: [B, T, D, H]), 1 = h [D, B, H] (in place),
//           2 = c [D, B, H] (LSTM, in place), 3 = XW [D, T, B, G H], 4 = R [D, G H, H] (as ONNX
//           gives it; QUAD_COLS: also read as quads, quadR), 5 = bias [D, 2 G H] (Wb then Rb),
//           6 = P [D, 3 H] (HAS_P; i, o, f), 7 = sequence_lens [B] (HAS_SEQ); GRID: 8 = XH [2, D B, H]
//           (h of every other step), 9 = CNT [D B] (uint, zero at the start), 10 = the error flag word
//           (ErrorFlags).
// Loops of one invocation (rnn_seq_regs_loops): the step loop's; every other loop has a
// compile-time trip count.
layout(local_size_x = LOCAL_X) in;

#include "rnn.glsl"

uniform uint u_B;
uniform uint u_T;
uniform uint u_D;
uniform uint u_step0;
uniform uint u_steps;
uniform uint u_rev;
uniform uint u_zero;  // bit 0: h, bit 1: c start from zeros (not read)

#ifdef QUAD_COLS
#define W 4u
#else
#define W 1u
#endif
#define M (HK / KS)
#define NQ (M / W)   // chunks of a gate row per invocation
#define QR (RR / W)  // of them in registers
#define NC (HK / W)  // chunks of h
#ifdef QUAD_COLS
#define VT vec4
shared vec4 hs[2u * NC];
// chunk c of gate row `row` (of D G HK) of R
vec4 r_chunk(uint row, uint c) { return quadR(row * uint(NC) + c); }
#define H_SET(buf, j, v) hs[(buf) * uint(NC) + ((j) >> 2u)][(j) & 3u] = (v)
#else
#define VT float
shared float hs[2u * HK];
float r_chunk(uint row, uint c) { return float(load4(row * uint(HK) + c)); }
#define H_SET(buf, j, v) hs[(buf) * uint(HK) + (j)] = (v)
#endif
#ifndef SUBGROUP
shared vec4 part_s[LOCAL_X];
#endif
#ifndef NG
#define NG 1u
#endif
#define UW (HK / NG)  // units per workgroup
#ifdef GRID
layout(std430, binding = 8) coherent buffer XhBuf { float xh[]; };
layout(std430, binding = 9) coherent buffer CntBuf { uint cnt[]; };
layout(std430, binding = 10) buffer Flag { uint err_flag[]; };
#endif

// The unit's x W^T + Wb of time t (x-dependent terms of each gate)
vec4 x_at(uint d, uint b, uint j, uint t) {
  uint xw = ((d * u_T + t) * u_B + b) * (G * HK) + j;
  vec4 x = vec4(0.0);
#if defined(CELL_LSTM)
  x = vec4(float(load3(xw)), float(load3(xw + HK)), float(load3(xw + 2u * HK)), float(load3(xw + 3u * HK)));
#elif defined(CELL_GRU)
  x.xyz = vec3(float(load3(xw)), float(load3(xw + HK)), float(load3(xw + 2u * HK)));
#else
  x.x = float(load3(xw));
#endif
  return x;
}

void main() {
  // a grid split past the dispatch limit rounds up (Launch::groups_1d): whole workgroups past the
  // last exit before any barrier
  if (WORKGROUP_ID_1D >= u_D * u_B * NG) return;
  uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
  // a unit's KS parts on consecutive lanes of one subgroup, however invocations map to subgroups
  uint lane = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  uint lane = tid;
#endif
  uint db = WORKGROUP_ID_1D / NG, slice = WORKGROUP_ID_1D % NG;
  uint d = db / u_B, b = db % u_B;
  uint GH = G * HK;
  // invocations past the last unit (LOCAL_X rounds up to whole subgroups) run the last unit's
  // arithmetic alongside (the shuffles want every lane) and write nothing
  bool unit = lane < uint(UW * KS);
  uint j = slice * UW + min(lane / uint(KS), uint(UW - 1u)), part = lane % uint(KS);
  bool writer = unit && part == 0u;
  uint state = (d * u_B + b) * HK + j;
  bool rev = ((u_rev >> d) & 1u) != 0u;
  uint row0 = d * GH + j;  // gate k's row of R: row0 + k HK
  VT rr[G * (QR > 0u ? QR : 1u)];
  for (uint k = 0u; k < uint(G); ++k)
    for (uint q = 0u; q < uint(QR); ++q) rr[k * uint(QR) + q] = r_chunk(row0 + k * uint(HK), part + uint(KS) * q);
  // the unit's x-independent terms of each gate: Wb + Rb (GRU_LBR: the candidate's Wbn only, its
  // Rbn goes inside r . (h @ Rn^T + Rbn))
  uint wb = d * 2u * GH + j;
  float hp = (u_zero & 1u) != 0u ? 0.0 : float(load1(state));
  float c = 0.0;
  vec4 bias = vec4(0.0);
  vec3 p = vec3(0.0);
#if defined(CELL_LSTM)
  c = (u_zero & 2u) != 0u ? 0.0 : float(load2(state));
  bias = vec4(float(load5(wb)) + float(load5(wb + GH)), float(load5(wb + HK)) + float(load5(wb + GH + HK)),
              float(load5(wb + 2u * HK)) + float(load5(wb + GH + 2u * HK)),
              float(load5(wb + 3u * HK)) + float(load5(wb + GH + 3u * HK)));
#ifdef HAS_P
  uint pp = d * 3u * HK + j;
  p = vec3(float(load6(pp)), float(load6(pp + HK)), float(load6(pp + 2u * HK)));
#endif
#elif defined(CELL_GRU) && defined(GRU_LBR)
  bias = vec4(float(load5(wb)) + float(load5(wb + GH)), float(load5(wb + HK)) + float(load5(wb + GH + HK)),
              float(load5(wb + 2u * HK)), float(load5(wb + GH + 2u * HK)));
#else
  bias.x = float(load5(wb)) + float(load5(wb + GH));
#endif
#ifdef GRID
  // the whole initial h (every slice's units)
  for (uint i = tid; i < uint(HK); i += uint(LOCAL_X)) {
    float v = (u_zero & 1u) != 0u ? 0.0 : float(load1((d * u_B + b) * HK + i));
    H_SET(0u, i, v);
  }
#else
  if (writer) H_SET(0u, j, hp);
#endif
  workgroup_sync();
  uint cur = 0u;
#ifdef HAS_SEQ
  int len = load7(b);
#endif
#ifdef GRID
  // the unit's x W^T one step ahead (its load has the whole previous step to arrive)
  vec4 xn = x_at(d, b, j, rev ? u_T - 1u - u_step0 : u_step0);
  bool stalled = false;
#endif
  for (uint s = 0u; LOOP(s < u_steps); ++s) {
    uint t = rev ? u_T - 1u - (u_step0 + s) : u_step0 + s;
#ifdef GRID
    vec4 x = xn;
    if (s + 1u < u_steps) xn = x_at(d, b, j, rev ? t - 1u : t + 1u);
#else
    // loaded first, its latency overlapping the GEMV (a step ahead it held 4 more registers in every
    // step: slower where R fills the registers, window 3)
    vec4 x = x_at(d, b, j, t);
#endif
    bool live = true;
#ifdef HAS_SEQ
    live = int(t) < len;
#endif
    // h @ R^T of the unit's G gate rows over this invocation's columns
    uint hb = cur * uint(NC) + part;
    vec4 a = vec4(0.0);
    for (uint q = 0u; q < uint(QR); ++q) {
      VT hv = hs[hb + uint(KS) * q];
      for (uint k = 0u; k < uint(G); ++k) a[k] += dot(rr[k * uint(QR) + q], hv);
    }
    for (uint q = uint(QR); q < uint(NQ); ++q) {
      VT hv = hs[hb + uint(KS) * q];
      for (uint k = 0u; k < uint(G); ++k) a[k] += dot(r_chunk(row0 + k * uint(HK), part + uint(KS) * q), hv);
    }
    // the sums over the unit's KS parts, in every part
#ifdef SUBGROUP
    for (uint o = 1u; o < uint(KS); o <<= 1u) a += subgroupShuffleXor(a, o);
#else
    part_s[tid] = a;
    workgroup_sync();
    a = vec4(0.0);
    for (uint q = 0u; q < uint(KS); ++q) a += part_s[tid / uint(KS) * uint(KS) + q];
#endif
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
    if (writer) {
#ifdef LAYOUT1
      uint y = ((b * u_T + t) * u_D + d) * HK + j;
#else
      uint y = ((t * u_D + d) * u_B + b) * HK + j;
#endif
      store0(y, CT0(live ? h : 0.0));
    }
    if (live) hp = h;
    cur ^= 1u;
#ifdef GRID
    // h stored and released, the workgroups counted; one invocation polls the count (window 2's form)
    uint xb = (cur * u_D * u_B + db) * HK;
    if (writer) xh[xb + j] = hp;
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) {
#ifdef GRID_STALL
      // GLTENSOR_RNN_GRID_STALL (tests): the last workgroup of direction 0, batch row 0 never counts itself
      if (db != 0u || slice != NG - 1u)
#endif
        atomicAdd(cnt[db], 1u);
      uint target = NG * (u_step0 + s + 1u);
      uint it = 0u;
      for (; !stalled && it < (1u << 20) && atomicAdd(cnt[db], 0u) < target; ++it) {
      }
      if (it == (1u << 20)) {
        atomicOr(err_flag[0], 8u);  // ErrorFlags::kStall
        stalled = true;             // no more waits: one bound per workgroup, then the host throws
      }
    }
    barrier();
    memoryBarrierBuffer();
    for (uint i = tid; i < uint(HK); i += uint(LOCAL_X)) H_SET(cur, i, xh[xb + i]);
#else
    if (writer) H_SET(cur, j, hp);
#endif
    workgroup_sync();
  }
  if (writer) {
    store1(state, CT1(hp));
#if defined(CELL_LSTM)
    store2(state, CT2(c));
#endif
  }
}
