// RMSNorm (Zhang & Sennrich 2019) and residual add + RMSNorm over contiguous rows [rows, L] (L:
// the normalized trailing dims), f32 arithmetic on any float storage (src/nn/rms_norm.cpp):
//
//   y = v * rstd [* weight],  rstd = 1 / sqrt(mean(v^2) + eps),  v = x (or x + residual: HAS_RES)
//
// Grid (u_P, rows): workgroup (p, row) handles chunk p of the row, elements [p * u_chunk,
// (p + 1) * u_chunk), u_chunk = LOCAL_X * u_iters, u_iters per invocation strided by LOCAL_X.
// With u_P = 1 (rows short enough for one workgroup's loops) one dispatch does everything;
// longer rows first write per-chunk partial sums (the *_PARTIAL variants, [rows, u_P] f32) that
// the apply variants (PARTIALS) add up. One variant per launch, chosen by a define:
//
//   RMS_FWD_PARTIAL  partials[row * u_P + p] = sum of v^2 over chunk p.
//   RMS_FWD          rstd of the row (from the row, or from its partials), then y over chunk p;
//                    HAS_RES also stores v = x + residual; HAS_RSTD stores rstd[row] (f32) for
//                    the backward.
//   RMS_BWD_PARTIAL  partials[row * u_P + p] = sum of gy * w * v over chunk p.
//   RMS_BWD          dot = sum(gy * w * v) over the row (or its partials), then over chunk p:
//                    dv = rstd * gy * w - v * rstd^3 * dot / L.
//   RMS_DW           invocation (col, block): partials[block * L + col] = sum over the u_R rows of
//                    the block of gy * v * rstd (dweight's per-block partials, added up on the
//                    host side by a reduction when there are several blocks: no float atomics).
//
// Operands (host: src/nn/rms_norm.cpp; a stand-in is bound where an operand is absent):
//   RMS_FWD_PARTIAL: 0 = partials out, 1 = x, 3 = residual (HAS_RES)
//   RMS_FWD:         0 = y, 1 = x, 2 = weight (HAS_W), 3 = residual (HAS_RES), 4 = v out (HAS_RES),
//                    5 = rstd out (HAS_RSTD), 6 = partials (PARTIALS)
//   RMS_BWD_PARTIAL: 0 = partials out, 1 = gy, 2 = v, 3 = weight (HAS_W)
//   RMS_BWD:         0 = dv, 1 = gy, 2 = v, 3 = weight (HAS_W), 4 = rstd, 5 = partials (PARTIALS)
//   RMS_DW:          0 = partials out [blocks, L], 1 = gy, 2 = v, 3 = rstd
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_L;

#ifdef RMS_DW
uniform uint u_R;  // rows per block
void main() {
  uint col = GLOBAL_ID.x, block = WORKGROUP_ID.y;
  if (col >= u_L) return;
  uint r0 = block * u_R;
  float acc = 0.0;
  for (uint k = 0u; LOOP(k < u_R); ++k) {
    uint r = r0 + k;
    if (r >= u_rows) break;
    uint e = r * u_L + col;
    acc += float(load1(e)) * float(load2(e)) * float(load3(r));
  }
  store0(block * u_L + col, CT0(acc));
}
#else

uniform uint u_iters;  // elements per invocation in a chunk
uniform uint u_chunk;  // LOCAL_X * u_iters
uniform uint u_P;      // chunks per row
#if defined(RMS_FWD) || defined(RMS_BWD)
uniform float u_inv_L;  // 1 / L
#endif
#ifdef RMS_FWD
uniform float u_eps;
#endif

shared float s_red[LOCAL_X];

// Sum of `acc` over the workgroup (tree in shared memory); every invocation gets the result.
float workgroup_sum(float acc) {
  uint tid = gl_LocalInvocationID.x;
  s_red[tid] = acc;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_red[tid] += s_red[tid + k];
    workgroup_sync();
  }
  return s_red[0];
}

#if defined(RMS_FWD) || defined(RMS_FWD_PARTIAL)
float value(uint e) {
#ifdef HAS_RES
  return float(load1(e)) + float(load3(e));
#else
  return float(load1(e));
#endif
}
// The element term summed over a row: v^2.
float term(uint e, uint i) {
  float v = value(e);
  return v * v;
}
#else
#ifdef HAS_W
#define WEIGHT(i) float(load3(i))
#else
#define WEIGHT(i) 1.0
#endif
// The element term summed over a row: gy * w * v.
float term(uint e, uint i) { return float(load1(e)) * WEIGHT(i) * float(load2(e)); }
#endif

// Sum of term() over chunk p of the row.
float chunk_sum(uint base, uint p) {
  float acc = 0.0;
  uint i = p * u_chunk + gl_LocalInvocationID.x;
  for (uint k = 0u; LOOP(k < u_iters); ++k, i += LOCAL_X) {
    if (i >= u_L) break;
    acc += term(base + i, i);
  }
  return acc;
}

void main() {
  uint p = WORKGROUP_ID.x, row = WORKGROUP_ID.y;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uint base = row * u_L;
#if defined(RMS_FWD_PARTIAL) || defined(RMS_BWD_PARTIAL)
  float total = workgroup_sum(chunk_sum(base, p));
  if (tid == 0u) store0(row * u_P + p, CT0(total));
#else
  // The row's sum: over the whole row (u_P = 1, chunk 0 is the row) or over its partials.
#ifdef PARTIALS
  float acc = 0.0;
  for (uint k = tid; LOOP(k < u_P); k += LOCAL_X) acc += float(PARTIALS_LOAD(row * u_P + k));
  float total = workgroup_sum(acc);
#else
  float total = workgroup_sum(chunk_sum(base, 0u));
#endif

#ifdef RMS_FWD
  float rstd = inversesqrt(total * u_inv_L + u_eps);
#ifdef HAS_RSTD
  if (p == 0u && tid == 0u) store5(row, CT5(rstd));
#endif
  uint i = p * u_chunk + tid;
  for (uint k = 0u; LOOP(k < u_iters); ++k, i += LOCAL_X) {
    if (i >= u_L) break;
    float v = value(base + i);
#ifdef HAS_RES
    store4(base + i, CT4(v));
#endif
    float y = v * rstd;
#ifdef HAS_W
    y *= float(load2(i));
#endif
    store0(base + i, CT0(y));
  }
#else  // RMS_BWD
  float rstd = float(load4(row));
  float c = rstd * rstd * rstd * total * u_inv_L;
  uint i = p * u_chunk + tid;
  for (uint k = 0u; LOOP(k < u_iters); ++k, i += LOCAL_X) {
    if (i >= u_L) break;
    uint e = base + i;
    store0(e, CT0(rstd * float(load1(e)) * WEIGHT(i) - float(load2(e)) * c));
  }
#endif
#endif
}
#endif
