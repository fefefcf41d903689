// The fully fused MLP (Müller et al. 2021, "Real-time Neural Radiance Caching for Path Tracing",
// section 4; tiny-cuda-nn's FullyFusedMLP), src/nn/fused_mlp.cpp: a chain of u_layers dense
// layers in one dispatch,
//   h_0 = x,  h_{l+1} = act_l(alpha_l * h_l @ W_l + beta_l * b_l),  y = h_{u_layers},
// over rows that are independent: one workgroup takes BM rows and runs every layer for them, its
// activations in shared memory (two buffers of BM x WMAX: the layer's input and its output), a
// workgroup barrier between layers, no global one. Rows past u_rows compute on zeros and are not
// stored. Invocation t owns the items t, t + LOCAL_X, ... of a layer: an item is one output column
// j of 4 consecutive rows (one weight read for 4 FMAs). f32 arithmetic, sums in k order.
//
// Operands: 0 = y [u_rows, N_last], 1 = x [u_rows, K_0], 2 = the packed parameters (f32 or f16):
//           W_l [K_l, N_l] row-major at element u_w[l], b_l [N_l] at u_b[l].
// Per layer l: u_width[l] = K_l, u_width[l + 1] = N_l (<= WMAX), u_act[l] = the activation's
// code (gltensor::Activation's order: 0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 sigmoid, 5 tanh,
// 6 silu, 7 leaky_relu(p0), 8 hardsigmoid(p0, p1), 9 hardswish, 10 clip(p0, p1)).
// Loops of one invocation, each counting its exit test (fused_mlp_loop_iterations):
// ceil(BM K_0 / LOCAL_X) + 1 to load x, u_layers + 1 layers, per layer
// ceil(BM / 4 N_l / LOCAL_X) items of K_l + 1 trips, + 1.
layout(local_size_x = LOCAL_X) in;

#include "activations.glsl"

#define MAX_LAYERS 8
uniform uint u_rows;
uniform uint u_layers;
uniform uint u_width[MAX_LAYERS + 1];
uniform uint u_w[MAX_LAYERS];
uniform uint u_b[MAX_LAYERS];
uniform uint u_act[MAX_LAYERS];
uniform float u_alpha[MAX_LAYERS];
uniform float u_beta[MAX_LAYERS];
uniform float u_p0[MAX_LAYERS];
uniform float u_p1[MAX_LAYERS];

shared float h[2u * BM * WMAX];

float act(uint l, float x) {
  switch (u_act[l]) {
    case 1u:
      return act_relu(x);
    case 2u:
      return act_gelu(x);
    case 3u:
      return act_gelu_tanh(x);
    case 4u:
      return act_sigmoid(x);
    case 5u:
      return act_tanh(x);
    case 6u:
      return act_silu(x);
    case 7u:
      return act_leaky_relu(x, u_p0[l]);
    case 8u:
      return act_hardsigmoid(x, u_p0[l], u_p1[l]);
    case 9u:
      return act_hardswish(x);
    case 10u:
      return act_clip(x, u_p0[l], u_p1[l]);
    default:
      return x;
  }
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint row0 = WORKGROUP_ID_1D * BM;
  uint rows = min(BM, u_rows - row0);  // rows of this block
  uint K = u_width[0];
  for (uint i = t; LOOP(i < BM * K); i += LOCAL_X) {
    uint r = i / K;
    uint k = i - r * K;
    h[r * WMAX + k] = r < rows ? float(load1((row0 + r) * K + k)) : 0.0;
  }
  barrier();
  uint src = 0u;
  for (uint l = 0u; LOOP(l < u_layers); ++l) {
    uint N = u_width[l + 1u];
    uint dst = BM * WMAX - src;
    bool last = l + 1u == u_layers;
    float alpha = u_alpha[l];
    float beta = u_beta[l];
    for (uint it = t; LOOP(it < BM / 4u * N); it += LOCAL_X) {
      uint r0 = it / N * 4u;
      uint j = it - r0 / 4u * N;
      uint a = src + r0 * WMAX;
      uint wj = u_w[l] + j;
      vec4 acc = vec4(0.0);
      for (uint k = 0u; LOOP(k < K); ++k)
        acc += vec4(h[a + k], h[a + WMAX + k], h[a + 2u * WMAX + k], h[a + 3u * WMAX + k]) * float(load2(wj + k * N));
      float b = beta * float(load2(u_b[l] + j));
      // (written out: no loop for the loop limit to count)
#define OUT(i, c)                                   \
  {                                                 \
    float v = act(l, alpha * acc.c + b);            \
    if (!last)                                      \
      h[dst + (r0 + i) * WMAX + j] = v;             \
    else if (r0 + i < rows)                         \
      store0((row0 + r0 + i) * N + j, CT0(v));      \
  }
      OUT(0u, x) OUT(1u, y) OUT(2u, z) OUT(3u, w)
#undef OUT
    }
    barrier();
    src = dst;
    K = N;
  }
}
