// Sampling one token per row of logits (include/gltensor/sampling.hpp, src/nn/sampling.cpp): one
// workgroup of LOCAL_X (64 or 256) invocations per row of u_V logits (contiguous), the result int32.
//   GREEDY: the first index of the largest logit (a (value, index) tree reduction).
//   otherwise: p_i = exp2((x_i - max) * u_inv_temp) (u_inv_temp = log2(e) / temperature), then
//     top-k (TOP_K): keep x_i >= the u_top_k-th largest logit, found bit by bit on order-preserving
//       keys of the floats (radix select: the largest key t with count(key >= t) >= k);
//     top-p (TOP_P): keep key_i >= the largest t with mass(kept, key >= t) >= u_top_p * mass(kept);
//     draw: target = u * mass(kept), u uniform in (0, 1) from Philox4x32-10 on counter
//       (row, counter[row] (HAS_COUNTER) or 0, u_offset) and key u_seed; invocation 0 walks the
//       segment sums (each invocation sums a contiguous segment of the row) and then the segment
//       holding target.
// NaN logits count as -inf (never kept).
// Operands: 0 out (int32 [rows]), 1 logits, 2 counter (HAS_COUNTER, int32 [rows]).
// Loops (src/nn/sampling.cpp): per pass over the row ceil(V / LOCAL_X) plus a log2(LOCAL_X)
// reduction; 1 + 32 (TOP_K) + 33 (TOP_P) + 1 such passes, then LOCAL_X + ceil(V / LOCAL_X) walking.
layout(local_size_x = LOCAL_X) in;

#include "philox.glsl"

uniform uint u_V;
uniform float u_inv_temp;
uniform uint u_top_k;
uniform float u_top_p;
uniform uvec2 u_seed;
uniform uvec2 u_offset;

shared float redf[LOCAL_X];
shared uint redu[LOCAL_X];
shared uint redi[LOCAL_X];

// Order-preserving key of a float (NaN: 0, below every number's key, as -inf's 0x007fffff).
uint fkey(float x) {
  if (is_nan(x)) return 0u;
  uint u = floatBitsToUint(x);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

float sum_all(float v) {
  uint tid = gl_LocalInvocationID.x;
  workgroup_sync();
  redf[tid] = v;
  workgroup_sync();
  for (uint w = LOCAL_X / 2u; w > 0u; w >>= 1u) {
    if (tid < w) redf[tid] += redf[tid + w];
    workgroup_sync();
  }
  return redf[0];
}

uint count_all(uint v) {
  uint tid = gl_LocalInvocationID.x;
  workgroup_sync();
  redu[tid] = v;
  workgroup_sync();
  for (uint w = LOCAL_X / 2u; w > 0u; w >>= 1u) {
    if (tid < w) redu[tid] += redu[tid + w];
    workgroup_sync();
  }
  return redu[0];
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint row = WORKGROUP_ID.x;
  uint base = row * u_V;
  // the largest logit (GREEDY: and its first index)
  uint bk = 0u, bi = 0xffffffffu;
  for (uint i = tid; LOOP(i < u_V); i += LOCAL_X) {
    uint k = fkey(float(load1(base + i)));
    if (k > bk || bi == 0xffffffffu) {
      bk = k;
      bi = i;
    }
  }
  redu[tid] = bk;
  redi[tid] = bi;
  workgroup_sync();
  for (uint w = LOCAL_X / 2u; w > 0u; w >>= 1u) {
    if (tid < w) {
      uint ok = redu[tid + w], oi = redi[tid + w], mi = redi[tid];
      if (oi != 0xffffffffu && (mi == 0xffffffffu || ok > redu[tid] || (ok == redu[tid] && oi < mi))) {
        redu[tid] = ok;
        redi[tid] = oi;
      }
    }
    workgroup_sync();
  }
  uint top_key = redu[0], top_i = redi[0];
#ifdef GREEDY
  if (tid == 0u) store0(row, CT0(top_i == 0xffffffffu || top_key <= 0x007fffffu ? 0u : top_i));
#else
  uint ub = top_key ^ ((top_key & 0x80000000u) != 0u ? 0x80000000u : 0xffffffffu);
  float mx = uintBitsToFloat(ub);  // the largest logit
  // keys below 0x00800000 are -inf or NaN: never kept
  uint thr = 0x00800000u;
#ifdef TOP_K
  {
    uint t = 0u;
    for (int bit = 31; bit >= 0; --bit) {
      uint cand = t | (1u << uint(bit));
      uint c = 0u;
      for (uint i = tid; LOOP(i < u_V); i += LOCAL_X) c += fkey(float(load1(base + i))) >= cand ? 1u : 0u;
      if (count_all(c) >= u_top_k) t = cand;
    }
    thr = max(thr, t);
  }
#endif
#define PROB(x) exp2(((x) - mx) * u_inv_temp)
#ifdef TOP_P
  {
    float own = 0.0;
    for (uint i = tid; LOOP(i < u_V); i += LOCAL_X) {
      float x = float(load1(base + i));
      own += fkey(x) >= thr ? PROB(x) : 0.0;
    }
    float want = sum_all(own) * u_top_p;
    uint t = 0u;
    for (int bit = 31; bit >= 0; --bit) {
      uint cand = t | (1u << uint(bit));
      uint lim = max(cand, thr);
      float m = 0.0;
      for (uint i = tid; LOOP(i < u_V); i += LOCAL_X) {
        float x = float(load1(base + i));
        m += fkey(x) >= lim ? PROB(x) : 0.0;
      }
      if (sum_all(m) >= want) t = cand;
    }
    thr = max(thr, t);
  }
#endif
  // segment sums of the kept probabilities
  uint seg = (u_V + LOCAL_X - 1u) / LOCAL_X;
  uint s0 = min(tid * seg, u_V), s1 = min(s0 + seg, u_V);
  float own = 0.0;
  for (uint i = s0; LOOP(i < s1); ++i) {
    float x = float(load1(base + i));
    own += fkey(x) >= thr ? PROB(x) : 0.0;
  }
  workgroup_sync();
  redf[tid] = own;
  workgroup_sync();
  if (tid == 0u) {
#ifdef HAS_COUNTER
    uint ctr = uint(load2(row));
#else
    uint ctr = 0u;
#endif
    uint r = philox(uvec4(row, ctr, u_offset.x, u_offset.y), u_seed).x;
    float u = (float(r >> 8) + 0.5) * (1.0 / 16777216.0);
    float total = 0.0;
    for (uint s = 0u; s < LOCAL_X; ++s) total += redf[s];
    float target = u * total, cum = 0.0;
    uint sseg = 0u, last = 0u;
    bool found = false;
    for (uint s = 0u; s < LOCAL_X; ++s) {
      if (redf[s] > 0.0) last = s;
      if (!found && redf[s] > 0.0 && cum + redf[s] > target) {
        sseg = s;
        found = true;
      }
      if (!found) cum += redf[s];
    }
    if (!found) {  // rounding put target at the end: the last segment with mass
      sseg = last;
      cum = total - redf[last];
    }
    uint pick = 0u, lastkept = 0u;
    bool got = false;
    uint a0 = min(sseg * seg, u_V), a1 = min(a0 + seg, u_V);
    for (uint i = a0; LOOP(i < a1); ++i) {
      float x = float(load1(base + i));
      if (fkey(x) < thr) continue;
      lastkept = i;
      cum += PROB(x);
      if (!got && cum > target) {
        pick = i;
        got = true;
      }
    }
    if (!got) pick = lastkept;
    store0(row, CT0(total > 0.0 ? pick : 0u));
  }
#endif
}
