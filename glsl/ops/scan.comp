// Inclusive prefix sum along one dim, in the compute type of the output (f32 for floats, int for
// integers). Rows run over every other dim (rows.glsl); element i of a row is at its base + i *
// step.
// ROW_SCAN: one invocation per row, sequential (short rows).
// Blocked scan (reduce, then scan; Merrill & Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", 2016, section 2): rows cut into blocks of BLOCK = E * LOCAL_X elements,
// workgroup w taking block w % u_nb of row w / u_nb, so that no invocation loops over a row.
// BLOCK_SUMS: the sum of each block to t0[w] (contiguous [rows, u_nb]).
// BLOCK_SCAN: the block's inclusive scan (staged in shared memory: coalesced loads, a
//   sequential scan of E elements per invocation, a Hillis-Steele scan of the invocations'
//   totals), plus, with CARRY, the inclusive scan of the preceding blocks' sums (t2[w - 1],
//   BLOCK_SUMS' output scanned along its rows).
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;  // ROW_SCAN: rows; else workgroups (rows * u_nb)
uniform uint u_L;
uniform uint u_nb;
#include "rows.glsl"
uniform uint u_in_step;
uniform uint u_out_step;

#ifdef ROW_SCAN
void main() {
  uint row = GLOBAL_ID_1D;
  if (row >= u_count) return;
  uvec2 rb = row_bases(row);
  uint bi = rb.x, bo = rb.y;
  CT0 acc = CT0(0);
  for (uint i = 0u; LOOP(i < u_L); ++i) {
    acc += CT0(load1(bi + i * u_in_step));
    store0(bo + i * u_out_step, acc);
  }
}
#else
#define BLOCK (E * LOCAL_X)
shared CT0 s_tot[LOCAL_X];
#ifdef BLOCK_SCAN
shared CT0 s_data[BLOCK];
#endif

void main() {
  uint w = WORKGROUP_ID_1D;
  if (w >= u_count) return;  // the whole workgroup
  uint lid = gl_LocalInvocationID.x;
  uint row = w / u_nb, first = (w - row * u_nb) * BLOCK;
  uvec2 rb = row_bases(row);
  uint bi = rb.x, bo = rb.y;
#ifdef BLOCK_SUMS
  CT0 acc = CT0(0);
  for (uint j = 0u; j < E; ++j) {
    uint i = first + j * LOCAL_X + lid;
    if (i < u_L) acc += CT0(load1(bi + i * u_in_step));
  }
  s_tot[lid] = acc;
  workgroup_sync();
  for (uint off = LOCAL_X / 2u; off > 0u; off >>= 1u) {
    if (lid < off) s_tot[lid] += s_tot[lid + off];
    workgroup_sync();
  }
  if (lid == 0u) store0(w, s_tot[0]);
#else
  for (uint j = 0u; j < E; ++j) {
    uint i = first + j * LOCAL_X + lid;
    CT0 x = CT0(load1(bi + min(i, u_L - 1u) * u_in_step));  // clamped: no load past the row's end
    s_data[j * LOCAL_X + lid] = i < u_L ? x : CT0(0);
  }
  workgroup_sync();
  CT0 run = CT0(0);
  for (uint j = 0u; j < E; ++j) {
    run += s_data[lid * E + j];
    s_data[lid * E + j] = run;
  }
  s_tot[lid] = run;
  workgroup_sync();
  for (uint off = 1u; off < LOCAL_X; off <<= 1u) {
    CT0 v = s_tot[max(lid, off) - off];  // index in range, the value then dropped below off
    v = lid >= off ? v : CT0(0);
    workgroup_sync();
    s_tot[lid] += v;
    workgroup_sync();
  }
  CT0 prefix = s_tot[max(lid, 1u) - 1u];
  prefix = lid > 0u ? prefix : CT0(0);
#ifdef CARRY
  if (first > 0u) prefix += CT2(load2(w - 1u));
#endif
  for (uint j = 0u; j < E; ++j) s_data[lid * E + j] += prefix;
  workgroup_sync();
  for (uint j = 0u; j < E; ++j) {
    uint i = first + j * LOCAL_X + lid;
    if (i < u_L) store0(bo + i * u_out_step, s_data[j * LOCAL_X + lid]);
  }
#endif
}
#endif
