// The KV cache's bookkeeping kernels (src/nn/kv_cache.cpp, include/gltensor/kv_cache.hpp); the
// sequences' lengths are int32 [B] on the GPU, read here, never passed as uniforms.
//   kv_append (one invocation per (b, h, t, e), e < max(E, Ev)): k [B, H, T, E] and v
//     [B, H, T, Ev] (any strides: u_k_st, u_v_st) into the contiguous caches [B, H, M, E] and
//     [B, H, M, Ev] at position lengths[b] + t. A position outside [0, M) is not written; it sets
//     bit 4 (ErrorFlags::kCacheFull) of the error flag word.
//     Operands: 0 k_cache, 1 v_cache, 2 k, 3 v, 4 lengths, 5 error flag.
//   kv_advance (one invocation per sequence): lengths[b] += u_n. Operands: 0 lengths.
//   kv_positions (one invocation per (b, t)): positions[b, t] = lengths[b] + t.
//     Operands: 0 positions (int32 [B, T]), 1 lengths.
// No loops.
#define kv_append 0
#define kv_advance 1
#define kv_positions 2
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;
#if MODE == kv_append
layout(std430, binding = 5) buffer Flag { uint err_flag[]; };
uniform uint u_W;  // max(E, Ev)
uniform uint u_H;
uniform uint u_T;
uniform uint u_M;
uniform uint u_E;
uniform uint u_Ev;
uniform uint u_k_st[4];
uniform uint u_v_st[4];
uniform uint u_k_off;
uniform uint u_v_off;

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  uint e = i % u_W, r = i / u_W;
  uint t = r % u_T, bh = r / u_T;
  uint h = bh % u_H, b = bh / u_H;
  int len = load4(b);
  if (len < 0 || uint(len) + t >= u_M) {
    if (e == 0u) atomicOr(err_flag[0], 4u);  // ErrorFlags::kCacheFull
    return;
  }
  uint pos = uint(len) + t;
  if (e < u_E)
    store0((bh * u_M + pos) * u_E + e,
           CT0(float(load2(u_k_off + b * u_k_st[0] + h * u_k_st[1] + t * u_k_st[2] + e * u_k_st[3]))));
  if (e < u_Ev)
    store1((bh * u_M + pos) * u_Ev + e,
           CT1(float(load3(u_v_off + b * u_v_st[0] + h * u_v_st[1] + t * u_v_st[2] + e * u_v_st[3]))));
}
#elif MODE == kv_advance
uniform int u_n;

void main() {
  uint b = GLOBAL_ID_1D;
  if (b >= u_count) return;
  store0(b, load0(b) + u_n);
}
#else
uniform uint u_T;

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  store0(i, load1(i / u_T) + int(i % u_T));
}
#endif
