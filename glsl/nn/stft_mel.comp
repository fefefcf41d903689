// The log-mel front end in one dispatch (src/nn/stft_mel.hpp): for frame f of signal b of x [B, L]
//   X[k]       = sum_{j < n} x[b, f step + j] w[j] e^{-2 pi i j k / n}      (k < BINS)
//   y[b, f, c] = act(sum_k |X[k]|^2 M[k, c] + bias[c])                      (c < u_mel)
// one workgroup per FRAMES frames of a signal (ONNX's STFT of a real signal, its power spectrum,
// the mel MatMul, its Add and Log: fuse_stft_mel's node; the two matmuls of fuse_stft_power's plan
// in one dispatch).
// - The frames, windowed, folded by the real DFT's symmetry into s_sd: for j <= n / 2
//   (x[j] + x[n - j], x[j] - x[n - j]) (j = 0 and j = n / 2: (x[j], 0)), so that
//   Re X[k] = sum_j s[j] cos(2 pi j k / n) and Im X[k] = sum_j d[j] (-sin(2 pi j k / n)): half the
//   products of the unfolded sums.
// - The twiddles (cos, -sin)(2 pi t / n), t < n, made on the host in float64, in s_tw; bin k's
//   twiddle of j is t = j k mod n, kept by adding k (mod n) each step.
// - Each bin's sums over j are split over SLICES invocations (j = s, s + SLICES, ...), LOCAL_X /
//   SLICES bins a round; the slices' partial sums are added in slice order into |X[k]|^2, s_pow.
// - The mel product reads only bins [ranges[c, 0], ranges[c, 1]) of column c (M's nonzeros).
// Operands: 0 = y [B, F, u_mel], 1 = x [B, L] (contiguous, from u_x0), 2 = w [n], 3 = twiddles
// [n, 2], 4 = M [BINS, u_mel], 5 = ranges [u_mel, 2] (floats), 6 = bias [u_mel]; all f32.
// Activation by gltensor::Activation's code (act_by_code), u_act with u_p[0], u_p[1].
// Loops of one invocation, each counting its exit test (plan_stft_mel): ceil(n / LOCAL_X) + 1,
// ceil(FRAMES H / LOCAL_X) + 1 (H = n / 2 + 1), R + 1 rounds (R = ceil(BINS / (LOCAL_X /
// SLICES))) of ceil(H / SLICES) + 1 and (ceil(FRAMES LOCAL_X / SLICES / LOCAL_X) + 1) (SLICES + 1),
// then ceil(FRAMES u_mel / LOCAL_X) + 1 of the longest range + 1.
layout(local_size_x = LOCAL_X) in;

#include "activations.glsl"

uniform uint u_batch;   // B
uniform uint u_frames;  // F per signal
uniform uint u_groups;  // workgroups per signal: ceil(F / FRAMES)
uniform uint u_len;     // L
uniform uint u_step;    // frame step
uniform uint u_x0;      // x's offset in elements
uniform uint u_mel;     // N
uniform uint u_act;
uniform float u_p[2];

#define HALF (N_FFT / 2u + 1u)
#define LANES (LOCAL_X / SLICES)

shared vec2 s_sd[FRAMES * HALF];       // the folded windowed frames
shared vec2 s_tw[N_FFT];               // the twiddles
shared vec2 s_part[FRAMES * LOCAL_X];  // the slices' partial sums of a round
shared float s_pow[FRAMES * BINS];     // |X[k]|^2

void main() {
  uint g = WORKGROUP_ID_1D;
  uint b = g / u_groups, f0 = (g % u_groups) * FRAMES;
  if (b >= u_batch) return;  // (groups_1d's grid past the frames: the whole workgroup)
  uint t = gl_LocalInvocationID.x;
  for (uint i = t; LOOP(i < N_FFT); i += LOCAL_X) s_tw[i] = vec2(float(load3(2u * i)), float(load3(2u * i + 1u)));
  for (uint i = t; LOOP(i < FRAMES * HALF); i += LOCAL_X) {
    uint f = i / HALF, j = i % HALF;
    vec2 v = vec2(0.0);
    if (f0 + f < u_frames) {
      uint base = u_x0 + b * u_len + (f0 + f) * u_step;
      float a = float(load1(base + j)) * float(load2(j));
      if (j == 0u || 2u * j == N_FFT) {
        v = vec2(a, 0.0);
      } else {
        float c = float(load1(base + N_FFT - j)) * float(load2(N_FFT - j));
        v = vec2(a + c, a - c);
      }
    }
    s_sd[i] = v;
  }
  workgroup_sync();
  uint s = t % SLICES, lane = t / SLICES;
  for (uint k0 = 0u; LOOP(k0 < BINS); k0 += LANES) {
    uint k = k0 + lane;
    vec2 acc[FRAMES];
    for (uint f = 0u; f < FRAMES; ++f) acc[f] = vec2(0.0);
    if (k < BINS) {
      // twiddle index j k mod n from j = s on, stepping SLICES k mod n (both < n: the sum < 2 n)
      uint idx = (k * s) % N_FFT, dk = (k * SLICES) % N_FFT;
      for (uint j = s; LOOP(j < HALF); j += SLICES) {
        vec2 tw = s_tw[idx];
        for (uint f = 0u; f < FRAMES; ++f) acc[f] += s_sd[f * HALF + j] * tw;
        idx += dk;
        idx = min(idx, idx - N_FFT);  // (uint: idx - n wraps past idx where idx < n)
      }
    }
    for (uint f = 0u; f < FRAMES; ++f) s_part[f * LOCAL_X + t] = acc[f];
    workgroup_sync();
    for (uint i = t; LOOP(i < FRAMES * LANES); i += LOCAL_X) {
      uint f = i / LANES, l = i % LANES;
      if (k0 + l < BINS) {
        vec2 r = vec2(0.0);
        for (uint q = 0u; q < SLICES; ++q) r += s_part[f * LOCAL_X + l * SLICES + q];
        s_pow[f * BINS + k0 + l] = r.x * r.x + r.y * r.y;
      }
    }
    workgroup_sync();
  }
  for (uint i = t; LOOP(i < FRAMES * u_mel); i += LOCAL_X) {
    uint f = i / u_mel, c = i % u_mel;
    if (f0 + f < u_frames) {
      uint lo = uint(float(load5(2u * c))), hi = uint(float(load5(2u * c + 1u)));
      float acc = 0.0;
      for (uint k = lo; LOOP(k < hi); ++k) acc += s_pow[f * BINS + k] * float(load4(k * u_mel + c));
      acc = act_by_code(u_act, acc + float(load6(c)), u_p[0], u_p[1]);
      store0((b * u_frames + f0 + f) * u_mel + c, CT0(acc));
    }
  }
}
