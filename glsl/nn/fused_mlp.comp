// The fully fused MLP (Müller et al. 2021, "Real-time Neural Radiance Caching for Path Tracing",
// section 4; tiny-cuda-nn's FullyFusedMLP), src/nn/fused_mlp.cpp: a chain of u_layers dense
// layers in one dispatch,
//   h_0 = x,  h_{l+1} = act_l(alpha_l * h_l @ W_l + beta_l * b_l),  y = h_{u_layers},
// over rows that are independent: one workgroup takes BM rows and runs every layer for them, its
// activations in shared memory (two buffers of BM x WMAX: the layer's input and its output), a
// workgroup barrier between layers, no global one. Rows past u_rows compute on zeros and are not
// stored. Invocation t owns the items t, t + LOCAL_X, ... of a layer: an item is one output column
// j of 4 consecutive rows (one weight read for 4 FMAs) over one of SPLIT slices of K (SPLIT > 1:
// the slices' sums in shared memory, then added in slice order by one invocation per column and
// row quad, a barrier between). f32 arithmetic, sums in k order within a slice.
//
// Operands: 0 = y [u_rows, N_last], 1 = x [u_rows, K_0] (row r at x_row(r): groups of u_x_f rows
//           u_x_rs apart, groups u_x_gs apart, rows that may overlap: an STFT's frames of its
//           signals), 2 = the packed parameters (f32 or f16):
//           W_l [K_l, N_l] row-major at element u_w[l], b_l [N_l] at u_b[l].
// Per layer l: u_width[l] = K_l, u_width[l + 1] = N_l (<= WMAX), u_act[l] = the activation's
// code (gltensor::Activation's order: 0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 sigmoid, 5 tanh,
// 6 silu, 7 leaky_relu(p0), 8 hardsigmoid(p0, p1), 9 hardswish, 10 clip(p0, p1)).
// Loops of one invocation, each counting its exit test (plan_fused_mlp): ceil(BM K_0 / LOCAL_X)
// + 1 to load x, u_layers + 1 layers, per layer ceil(BM / 4 N_l SPLIT / LOCAL_X) items of
// ceil(K_l / SPLIT) + 1 trips, + 1; SPLIT > 1: ceil(BM / 4 N_l / LOCAL_X) sums of SPLIT + 1, + 1.
//
// PF > 0 (the prefetch form, plan_fused_mlp's pf): every layer has at most LOCAL_X items
// (BM / 4 N_l SPLIT) and at most PF k per slice, so invocation t owns item t of every layer and
// holds its weights (PF floats, zeros past the slice) and its bias (BM / 4 N_l sums: item t's
// column t % N_l) in registers. Layer 0's are loaded before x is staged, layer l + 1's right after
// layer l's products, so their latency overlaps the barriers and the slices' sums instead of
// standing before every k (the loads of the loop above wait one after another: a latency-bound
// kernel at 34 rows). Its activations and partial sums are kept by row quad (h4, part4: a vec4
// holds 4 rows of one column), so an item reads its 4 rows of a k with one shared load and writes
// its 4 outputs with one store. The same products and sums in the same order as the loop form.
layout(local_size_x = LOCAL_X) in;

#include "activations.glsl"

#define MAX_LAYERS 8
uniform uint u_rows;
uniform uint u_x_off;  // x's first element
uniform uint u_x_f;    // x's rows per group (u_rows for one group)
uniform uint u_x_rs;   // x's row stride in a group (K_0 for a contiguous x)
uniform uint u_x_gs;   // x's group stride
uint x_row(uint r) {
  uint g = r / u_x_f;
  return u_x_off + g * u_x_gs + (r - g * u_x_f) * u_x_rs;
}
uniform uint u_layers;
uniform uint u_width[MAX_LAYERS + 1];
uniform uint u_w[MAX_LAYERS];
uniform uint u_b[MAX_LAYERS];
uniform uint u_act[MAX_LAYERS];
uniform float u_alpha[MAX_LAYERS];
uniform float u_beta[MAX_LAYERS];
uniform float u_p0[MAX_LAYERS];
uniform float u_p1[MAX_LAYERS];

#define SPLITU uint(SPLIT)
#if PF > 0
// The prefetch form's activations by row quad: element (4 q + c, k) of a buffer at [q WMAX + k].c
// (one 128-bit shared load for an item's 4 rows of one k, one store for its 4 outputs).
shared vec4 h4[2u * BM / 4u * WMAX];
#if SPLIT > 1
shared vec4 part4[SPLITU * BM / 4u * WMAX];  // slice s's sums of row quad q at (s BM / 4 + q) WMAX + j
#endif
#else
shared float h[2u * BM * WMAX];
#if SPLIT > 1
shared float part[SPLITU * BM * WMAX];  // the K slices' partial sums of a layer
#endif
#endif

float act(uint l, float x) { return act_by_code(u_act[l], x, u_p0[l], u_p1[l]); }

#if PF > 0
// Layer l's weights of item t (W_l[k0 + i][j] for i < PF, 0 past its slice or past the items) and
// beta_l b_l[t % N_l] (0 past the sums' items).
void fetch(uint l, uint t, out float w[PF], out float b) {
  uint K = u_width[l];
  uint N = u_width[l + 1u];
  uint KS = (K + SPLITU - 1u) / SPLITU;
  uint j = t % N;
  uint k0 = t / N / (BM / 4u) * KS;
  uint kend = t < BM / 4u * N * SPLITU ? min(K, k0 + KS) : 0u;
  for (uint i = 0u; i < uint(PF); ++i) {
    float v = float(load2(u_w[l] + j + (k0 + i) * N));  // (load2 clamps its index)
    w[i] = k0 + i < kend ? v : 0.0;
  }
  float v = u_beta[l] * float(load2(u_b[l] + j));
  b = t < BM / 4u * N ? v : 0.0;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint row0 = WORKGROUP_ID_1D * BM;
  if (row0 >= u_rows) return;  // a workgroup past the grid's end (the whole workgroup)
  uint rows = min(BM, u_rows - row0);
  float w[PF];
  float bnext;
  fetch(0u, t, w, bnext);
  uint K = u_width[0];
  for (uint i = t; LOOP(i < BM / 4u * K); i += LOCAL_X) {  // x's row quads (0 past the block's rows)
    uint q = i / K;
    uint k = i - q * K;
    vec4 x;
    for (uint c = 0u; c < 4u; ++c) {
      uint r = q * 4u + c;
      float v = float(load1(x_row(row0 + min(r, rows - 1u)) + k));
      x[c] = r < rows ? v : 0.0;
    }
    h4[q * WMAX + k] = x;
  }
  workgroup_sync();
  uint src = 0u;
  for (uint l = 0u; LOOP(l < u_layers); ++l) {
    uint N = u_width[l + 1u];
    uint dst = BM / 4u * WMAX - src;
    bool last = l + 1u == u_layers;
    float alpha = u_alpha[l];
    float b = bnext;
    uint KS = (K + SPLITU - 1u) / SPLITU;
    uint j = t % N;
    uint rest = t / N;
    uint q = rest % (BM / 4u);
    uint k0 = rest / (BM / 4u) * KS;
    vec4 acc = vec4(0.0);
    if (t < BM / 4u * N * SPLITU) {
      uint a = src + q * WMAX + k0;
      uint kend = min(K, k0 + KS);  // (<= k0 for the slices past K: none of their k)
      for (uint i = 0u; i < uint(PF); ++i)
        if (k0 + i < kend) acc += h4[a + i] * w[i];
    }
    if (!last) fetch(l + 1u, t, w, bnext);  // in flight through the sums and barriers below
#if SPLIT > 1
    if (t < BM / 4u * N * SPLITU) part4[(rest / (BM / 4u) * (BM / 4u) + q) * WMAX + j] = acc;
    workgroup_sync();
    q = min(t / N, BM / 4u - 1u);  // (t past the sums' items: any quad, not stored)
    acc = vec4(0.0);
    for (uint s = 0u; s < SPLITU; ++s)  // the slices' sums, in slice order
      acc += part4[(s * (BM / 4u) + q) * WMAX + j];
#endif
    if (t < BM / 4u * N) {
      vec4 v = vec4(act(l, alpha * acc.x + b), act(l, alpha * acc.y + b), act(l, alpha * acc.z + b),
                    act(l, alpha * acc.w + b));
      if (!last) {
        h4[dst + q * WMAX + j] = v;
      } else {
        for (uint c = 0u; c < 4u; ++c)
          if (q * 4u + c < rows) store0((row0 + q * 4u + c) * N + j, CT0(v[c]));
      }
    }
    workgroup_sync();
    src = dst;
    K = N;
  }
}
#else
void main() {
  uint t = gl_LocalInvocationID.x;
  uint row0 = WORKGROUP_ID_1D * BM;
  if (row0 >= u_rows) return;          // a workgroup past the grid's end (the whole workgroup)
  uint rows = min(BM, u_rows - row0);  // rows of this block
  uint K = u_width[0];
  for (uint i = t; LOOP(i < BM * K); i += LOCAL_X) {
    uint r = i / K;
    uint k = i - r * K;
    // Rows past the block's last are 0, from the last row's load (no load past x's end).
    float x = float(load1(x_row(row0 + min(r, rows - 1u)) + k));
    h[r * WMAX + k] = r < rows ? x : 0.0;
  }
  barrier();
  uint src = 0u;
  for (uint l = 0u; LOOP(l < u_layers); ++l) {
    uint N = u_width[l + 1u];
    uint dst = BM * WMAX - src;
    bool last = l + 1u == u_layers;
    float alpha = u_alpha[l];
    float beta = u_beta[l];
    uint KS = (K + SPLITU - 1u) / SPLITU;  // k per slice
    for (uint it = t; LOOP(it < BM / 4u * N * SPLITU); it += LOCAL_X) {
      uint j = it % N;
      uint rest = it / N;
      uint r0 = rest % (BM / 4u) * 4u;
      uint k0 = rest / (BM / 4u) * KS;  // the slice's first k
      uint a = src + r0 * WMAX;
      uint wj = u_w[l] + j;
      vec4 acc = vec4(0.0);
      for (uint k = k0; LOOP(k < min(K, k0 + KS)); ++k)
        acc += vec4(h[a + k], h[a + WMAX + k], h[a + 2u * WMAX + k], h[a + 3u * WMAX + k]) * float(load2(wj + k * N));
#if SPLIT > 1
      uint p = (rest / (BM / 4u) * BM + r0) * WMAX + j;
      part[p] = acc.x;
      part[p + WMAX] = acc.y;
      part[p + 2u * WMAX] = acc.z;
      part[p + 3u * WMAX] = acc.w;
    }
    barrier();
    // the slices' sums, in slice order
    for (uint it = t; LOOP(it < BM / 4u * N); it += LOCAL_X) {
      uint j = it % N;
      uint r0 = it / N * 4u;
      vec4 acc = vec4(0.0);
      for (uint s = 0u; s < SPLITU; ++s) {
        uint p = (s * BM + r0) * WMAX + j;
        acc += vec4(part[p], part[p + WMAX], part[p + 2u * WMAX], part[p + 3u * WMAX]);
      }
#endif
      float b = beta * float(load2(u_b[l] + j));
      // (written out: no loop for the loop limit to count)
#define OUT(i, c)                              \
  {                                            \
    float v = act(l, alpha * acc.c + b);       \
    if (!last)                                 \
      h[dst + (r0 + i) * WMAX + j] = v;        \
    else if (r0 + i < rows)                    \
      store0((row0 + r0 + i) * N + j, CT0(v)); \
  }
      OUT(0u, x) OUT(1u, y) OUT(2u, z) OUT(3u, w)
#undef OUT
    }
    barrier();
    src = dst;
    K = N;
  }
}
#endif
