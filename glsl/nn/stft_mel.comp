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
// - The twiddles e^{-2 pi i t / n} = (cos, -sin)(2 pi t / n), t < n, made on the host in float64,
//   in s_tw. Each bin's sums over j are split over SLICES invocations (j = s, s + SLICES, ...),
//   LOCAL_X / SLICES bins a round; the slices' partial sums are added in slice order into
//   |X[k]|^2, s_pow. TWQ 0: bin k's twiddle of j read from s_tw at j k mod n (kept by adding k
//   mod n each step); TWQ = Q: the slice's j = s + SLICES (q + Q r) as the product of
//   e^{-i theta k (s + SLICES q)} (Q of them in registers, read once a round) and
//   e^{-i theta k SLICES Q r} (one read per Q values of j): a shared load per Q products instead of
//   one each (the twiddles' loads, scattered over the banks, bound the table form), two roundings.
// - The mel product: ML invocations per column c (u_mel ML <= LOCAL_X), lane l of them holding
//   M[k, c] for the MQ bins k = l + ML q in registers, loaded before the DFT (their latency behind
//   it; MQ 0: read in the product's loop instead, for many bins a lane); every bin, zero weights
//   included (as the matmul: a NaN or an overflowed power reaches every column, Inf * 0 = NaN);
//   the lanes' sums added in lane order, then the bias and the activation.
// Operands: 0 = y [B, F, u_mel], 1 = x [B, L] (contiguous, from u_x0), 2 = w [n], 3 = twiddles
// [n, 2], 4 = M [BINS, u_mel], 5 = bias [u_mel]; all f32.
// Activation by gltensor::Activation's code (act_by_code), u_act with u_p[0], u_p[1].
// Loops of one invocation, each counting its exit test (plan_stft_mel): ceil(n / LOCAL_X) + 1,
// ceil(FRAMES H / LOCAL_X) + 1 (H = n / 2 + 1), R + 1 rounds (R = ceil(BINS / (LOCAL_X /
// SLICES))) of ceil(T / max(TWQ, 1)) + 1 (T = ceil(H / SLICES)) and (ceil(FRAMES LOCAL_X /
// SLICES / LOCAL_X) + 1) (SLICES + 1), then (MQ 0) FRAMES (ceil(BINS / ML) + 1), then
// ceil(FRAMES u_mel / LOCAL_X) + 1.
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
#define TWQU uint(TWQ)

shared vec2 s_sd[FRAMES * HALF];       // the folded windowed frames
shared vec2 s_tw[N_FFT];               // the twiddles
shared vec2 s_part[FRAMES * LOCAL_X];  // the slices' partial sums of a round, then the mel lanes'
shared float s_pow[FRAMES * BINS];     // |X[k]|^2

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

void main() {
  uint g = WORKGROUP_ID_1D;
  uint b = g / u_groups, f0 = (g % u_groups) * FRAMES;
  if (b >= u_batch) return;  // (groups_1d's grid past the frames: the whole workgroup)
  uint t = gl_LocalInvocationID.x;
  // this invocation's mel weights (lane ml of column mc), loaded first
  uint mc = t / ML, ml = t % ML;
#if MQ > 0
  float mw[MQ];
  for (uint q = 0u; q < uint(MQ); ++q) mw[q] = 0.0;
  if (mc < u_mel) {
    for (uint q = 0u; q < uint(MQ); ++q) {
      uint k = ml + ML * q;
      if (k < BINS) mw[q] = float(load4(k * u_mel + mc));
    }
  }
#endif
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
#if TWQ == 0
      // twiddle index j k mod n from j = s on, stepping SLICES k mod n (both < n: the sum < 2 n)
      uint idx = (k * s) % N_FFT, dk = (k * SLICES) % N_FFT;
      for (uint j = s; LOOP(j < HALF); j += SLICES) {
        vec2 tw = s_tw[idx];
        for (uint f = 0u; f < FRAMES; ++f) acc[f] += s_sd[f * HALF + j] * tw;
        idx += dk;
        idx = min(idx, idx - N_FFT);  // (uint: idx - n wraps past idx where idx < n)
      }
#else
      vec2 base[TWQ];
      for (uint q = 0u; q < TWQU; ++q) base[q] = s_tw[(k * (s + SLICES * q)) % N_FFT];
      uint idx = 0u, dk = (k * SLICES * TWQU) % N_FFT;
      for (uint j0 = s; LOOP(j0 < HALF); j0 += SLICES * TWQU) {
        vec2 o = s_tw[idx];
        for (uint q = 0u; q < TWQU; ++q) {
          uint j = j0 + SLICES * q;
          if (j < HALF) {
            vec2 tw = cmul(base[q], o);
            for (uint f = 0u; f < FRAMES; ++f) acc[f] += s_sd[f * HALF + j] * tw;
          }
        }
        idx += dk;
        idx = min(idx, idx - N_FFT);
      }
#endif
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
  // the mel lanes' sums (s_part's x; every read of the slices' sums is past the last barrier)
  if (mc < u_mel) {
    for (uint f = 0u; f < FRAMES; ++f) {
      float acc = 0.0;
#if MQ > 0
      for (uint q = 0u; q < uint(MQ); ++q) {
        uint k = ml + ML * q;
        if (k < BINS) acc += s_pow[f * BINS + k] * mw[q];
      }
#else
      for (uint k = ml; LOOP(k < BINS); k += ML) acc += s_pow[f * BINS + k] * float(load4(k * u_mel + mc));
#endif
      s_part[f * LOCAL_X + t].x = acc;
    }
  }
  workgroup_sync();
  for (uint i = t; LOOP(i < FRAMES * u_mel); i += LOCAL_X) {
    uint f = i / u_mel, c = i % u_mel;
    if (f0 + f < u_frames) {
      float acc = 0.0;
      for (uint l = 0u; l < ML; ++l) acc += s_part[f * LOCAL_X + c * ML + l].x;
      acc = act_by_code(u_act, acc + float(load5(c)), u_p[0], u_p[1]);
      store0((b * u_frames + f0 + f) * u_mel + c, CT0(acc));
    }
  }
}
