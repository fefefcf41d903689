// Sort along the last dim: a merge sort of (key, index) pairs in passes whose invocations loop a
// bounded number of times (log2 of the row length at most), so rows of any length fit the
// device's loop limit. Elements compare by (key, original index): the order is total, so the
// sort is stable (ties keep their original order) and every pass is a permutation.
// Keys are 32-bit unsigned integers ordered as the values: floats by their bits (sign flipped,
// negatives inverted; -0 as +0; every NaN as the largest key, after +Inf), integers offset by
// 2^31; DESCENDING inverts the key (NaN first, ties still in their original order).
// SEGMENT_SORT (segment sort): rows cut into segments of u_P (a power of two <= BLOCK); a workgroup
//   sorts BLOCK / u_P consecutive segments in shared memory with Batcher's bitonic network
//   (K. E. Batcher, "Sorting networks and their applications", 1968), padding with keys past
//   every element. Operands: 0 = indices out, 1 = input (strided rows), 2 = keys out.
// Otherwise (merge pass): sorted runs of u_w become runs of 2 u_w: each invocation finds its
//   element's rank in the partner run by binary search and writes it at its merged position.
//   Operands: 0 = indices out, 1 = keys in, 2 = indices in, 3 = keys out.
// Pairs live contiguously as [rows, u_L] (keys and indices in separate int32 tensors); FINAL
// writes only the indices (the result; the values are gathered from the input afterwards).
layout(local_size_x = LOCAL_X) in;

uniform uint u_L;
uniform uint u_rows;

bool pair_less(uint ka, uint ia, uint kb, uint ib) { return ka < kb || (ka == kb && ia < ib); }

#ifdef SEGMENT_SORT
uniform uint u_P;
uniform uint u_segs;  // segments per row
uniform uint u_groups;
uniform uint u_rows_shape[RD];
uniform uint u_rows_stride[RD];
uniform uint u_in_off;
uniform uint u_in_step;

#ifdef DESCENDING
#define DIR(k) (~(k))
#else
#define DIR(k) (k)
#endif
uint sort_key(CT1 v) {
#ifdef KEY_FLOAT
  float f = float(v);
  if (is_nan(f)) return DIR(0xffffffffu);
  uint u = f == 0.0 ? 0u : floatBitsToUint(f);
  return DIR((u & 0x80000000u) != 0u ? ~u : u | 0x80000000u);
#else
  return DIR(uint(int(v)) ^ 0x80000000u);
#endif
}

#define BLOCK (E * LOCAL_X)
#define PAIRS (BLOCK / 2u / LOCAL_X)  // compare-exchanges per invocation and step
shared uint s_key[BLOCK];
shared uint s_idx[BLOCK];

void main() {
  uint wg = WORKGROUP_ID_1D;
  if (wg >= u_groups) return;  // the whole workgroup
  uint lid = gl_LocalInvocationID.x;
  uint per = BLOCK / u_P;  // segments per workgroup
  for (uint j = 0u; j < E; ++j) {
    uint e = j * LOCAL_X + lid;
    uint g = wg * per + e / u_P;  // segment
    uint row = g / u_segs, pos = (g - row * u_segs) * u_P + e % u_P;
    uint key = 0xffffffffu, idx = 0xffffffffu;
    if (row < u_rows && pos < u_L) {
      uint base = u_in_off, r = row;
      for (int d = RD - 1; d >= 0; --d) {
        base += (r % u_rows_shape[d]) * u_rows_stride[d];
        r /= u_rows_shape[d];
      }
      key = sort_key(load1(base + pos * u_in_step));
      idx = pos;
    }
    s_key[e] = key;
    s_idx[e] = idx;
  }
  workgroup_sync();
  for (uint k = 2u; LOOP(k <= u_P); k <<= 1u) {
    for (uint s = k >> 1u; LOOP(s > 0u); s >>= 1u) {
      for (uint q = 0u; q < PAIRS; ++q) {
        uint t = q * LOCAL_X + lid;
        uint a = (t / s) * 2u * s + t % s, b = a + s;
        // ascending where bit k of a is clear; the last merge of a segment is ascending
        bool up = k == u_P || (a & k) == 0u;
        uint ka = s_key[a], ia = s_idx[a], kb = s_key[b], ib = s_idx[b];
        if (pair_less(kb, ib, ka, ia) == up) {
          s_key[a] = kb;
          s_idx[a] = ib;
          s_key[b] = ka;
          s_idx[b] = ia;
        }
      }
      workgroup_sync();
    }
  }
  for (uint j = 0u; j < E; ++j) {
    uint e = j * LOCAL_X + lid;
    uint g = wg * per + e / u_P;
    uint row = g / u_segs, pos = (g - row * u_segs) * u_P + e % u_P;
    if (row < u_rows && pos < u_L) {
      t0[row * u_L + pos] = s_idx[e];
#ifndef FINAL
      t2[row * u_L + pos] = s_key[e];
#endif
    }
  }
}

#else  // merge pass
uniform uint u_w;
uniform uint u_count;

void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  uint row = e / u_L, i = e - row * u_L, base = row * u_L;
  uint key = t1[e], idx = t2[e];
  uint start = i - i % u_w;                                  // this run
  uint other = (start / u_w) % 2u == 0u ? start + u_w : start - u_w;  // the partner run
  uint pos = i;
  if (other < u_L) {
    // Rank among the partner run: its elements before (key, idx).
    uint lo = 0u, hi = min(other + u_w, u_L) - other;
    while (LOOP(lo < hi)) {
      uint mid = (lo + hi) >> 1u;
      if (pair_less(t1[base + other + mid], t2[base + other + mid], key, idx))
        lo = mid + 1u;
      else
        hi = mid;
    }
    pos = min(start, other) + (i - start) + lo;
  }
  t0[base + pos] = idx;
#ifndef FINAL
  t3[base + pos] = key;
#endif
}
#endif
