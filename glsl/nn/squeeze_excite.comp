// Squeeze-and-excitation (Hu et al. 2018, "Squeeze-and-Excitation Networks") in one dispatch,
// src/nn/squeeze_excite.cpp: for each image n of x [N, C, H, W] (contiguous, f32),
//   m = the mean of each channel's plane                        [C]
//   h = act1(W1 m + b1)     W1 [Cr, C] row-major                 [Cr]
//   s = act2(W2 h + b2)     W2 [C, Cr] row-major                 [C]
//   y[n, c, :, :] = x[n, c, :, :] * s[c]
// one workgroup per image (the model runtime's SE blocks of small planes: the GlobalAveragePool,
// the two 1x1 convolutions on [N, C, 1, 1] and the scale, four dispatches, in one). m, h and s
// stay in shared memory; the means are overwritten by s. A latency-bound kernel (one workgroup
// reads and writes the image): as many invocations as the device allows (up to 1024), and QUADS
// (H W % 4 == 0, x and y at offset 0) x read and y written as vec4s, the means over quads.
//
// Operands: 0 = y, 1 = x, 2 = W1, 3 = b1, 4 = W2, 5 = b2 (all f32; x and y contiguous).
// The means and both products are row sums (rows_sum): u_lanes[p] invocations (a power of two
// dividing LOCAL_X) share a row, reading its consecutive elements (QUADS: x's quads, rows of
// H W / 4), LOCAL_X / u_lanes[p] rows a round, the lanes' partial sums added in lane order by one
// invocation per row.
// Activations by gltensor::Activation's code (act_by_code), u_act[0] with u_p[0], u_p[1], u_act[1] with u_p[2], u_p[3].
// Loops of one invocation, each counting its exit test (plan_squeeze_excite): per phase p of R
// rows of K, ceil(R / (LOCAL_X / L)) + 1 rounds of ceil(K / 4 L) + 1 and 3 + 1 (the tail) and
// L + 1 trips; then ceil(C H W / 4 LOCAL_X) + 1 + 3 + 1 (QUADS: K and C H W in quads).
// The kernel is latency-bound: the row sums and the scale take 4 loads a trip (independent
// accumulators, the 4 values loaded before they are stored), so that their latencies overlap (the
// H200 ran a loop of one load a trip at 19 us for cls's 9 blocks on average).
layout(local_size_x = LOCAL_X) in;

#include "activations.glsl"

uniform uint u_n;       // N
uniform uint u_c;       // C
uniform uint u_cr;      // Cr
uniform uint u_hw;      // H W
uniform uint u_lanes[3];  // invocations per row: the means, W1's rows, W2's rows
uniform uint u_act[2];
uniform float u_p[4];

shared float sv[MAX_C];     // the means, then s
shared float sh[MAX_C];     // h
shared float part[LOCAL_X]; // the lanes' partial sums of a round

#ifdef QUADS
layout(std430, binding = 0) writeonly buffer QuadY { vec4 qY[]; };
layout(std430, binding = 1) readonly buffer QuadX { vec4 qX[]; };
#define HWK (u_hw / 4u)  // a row of x in quads
#define VT vec4
VT x_at(uint base, uint i) { return qX[base / 4u + i]; }  // x's quad i of the image at base
void y_at(uint base, uint i, VT v) { qY[base / 4u + i] = v; }
#else
#define HWK u_hw
#define VT float
VT x_at(uint base, uint i) { return float(load1(base + i)); }
void y_at(uint base, uint i, VT v) { store0(base + i, CT0(v)); }
#endif

// Element k of row r of phase p's products: x's plane r (p 0), W1's row r times m (1), W2's row r
// times h (2).
float row_elem(uint p, uint base, uint r, uint k) {
#ifdef QUADS
  if (p == 0u) {
    vec4 q = x_at(base, r * HWK + k);
    return (q.x + q.y) + (q.z + q.w);
  }
#else
  if (p == 0u) return x_at(base, r * HWK + k);
#endif
  if (p == 1u) return float(load2(r * u_c + k)) * sv[k];
  return float(load4(r * u_cr + k)) * sh[k];
}

// Phase p's R row sums of K elements each, finished: the means into sv (p 0), h into sh (1), s
// into sv (2; every read of the means is past the barrier ending phase 1).
void rows_sum(uint p, uint base, uint R, uint K, uint L) {
  uint t = gl_LocalInvocationID.x;
  uint per = LOCAL_X / L;
  for (uint r0 = 0u; LOOP(r0 < R); r0 += per) {
    uint r = r0 + t / L;
    float acc = 0.0;
    if (r < R) {
      float a1 = 0.0, a2 = 0.0, a3 = 0.0;
      uint k = t % L;
      for (; LOOP(k + 3u * L < K); k += 4u * L) {
        acc += row_elem(p, base, r, k);
        a1 += row_elem(p, base, r, k + L);
        a2 += row_elem(p, base, r, k + 2u * L);
        a3 += row_elem(p, base, r, k + 3u * L);
      }
      for (; LOOP(k < K); k += L) acc += row_elem(p, base, r, k);
      acc += (a1 + a2) + a3;
    }
    part[t] = acc;
    workgroup_sync();
    if (t < per && r0 + t < R) {
      float s = 0.0;
      for (uint l = 0u; LOOP(l < L); ++l) s += part[t * L + l];
      uint rr = r0 + t;
      if (p == 0u)
        sv[rr] = s / float(u_hw);
      else if (p == 1u)
        sh[rr] = act_by_code(u_act[0], s + float(load3(rr)), u_p[0], u_p[1]);
      else
        sv[rr] = act_by_code(u_act[1], s + float(load5(rr)), u_p[2], u_p[3]);
    }
    workgroup_sync();
  }
}

void main() {
  uint n = WORKGROUP_ID_1D;
  if (n >= u_n) return;  // (groups_1d's grid past the images: the whole workgroup)
  uint base = n * u_c * u_hw;
  rows_sum(0u, base, u_c, HWK, u_lanes[0]);
  rows_sum(1u, base, u_cr, u_c, u_lanes[1]);
  rows_sum(2u, base, u_c, u_cr, u_lanes[2]);
  uint total = u_c * HWK;
  uint i = gl_LocalInvocationID.x;
  for (; LOOP(i + 3u * LOCAL_X < total); i += 4u * LOCAL_X) {
    VT v0 = x_at(base, i), v1 = x_at(base, i + LOCAL_X), v2 = x_at(base, i + 2u * LOCAL_X);
    VT v3 = x_at(base, i + 3u * LOCAL_X);
    y_at(base, i, v0 * sv[i / HWK]);
    y_at(base, i + LOCAL_X, v1 * sv[(i + LOCAL_X) / HWK]);
    y_at(base, i + 2u * LOCAL_X, v2 * sv[(i + 2u * LOCAL_X) / HWK]);
    y_at(base, i + 3u * LOCAL_X, v3 * sv[(i + 3u * LOCAL_X) / HWK]);
  }
  for (; LOOP(i < total); i += LOCAL_X) y_at(base, i, x_at(base, i) * sv[i / HWK]);
}
