// Streaming kernels for kernel lab mode `pages` (bench/kernel_lab.cpp): why add over 2^26 floats
// (three 256 MiB buffers) streams slower than at 2^24, and which access order or allocation
// fixes it. n4 quads (vec4) of a, b (in) and c (out). Chosen by the lab:
//   LOCAL      workgroup size (invocations)
//   OP         op_add (c = a + b), op_fill (c = i), op_read2 (reads a and b, writes c[i] only
//              where a + b equals u_magic: never, the lab sets it to NaN)
//   RUN        run_one: one quad per invocation over a 2-D grid of rows of gl_NumWorkGroups.x
//              workgroups (the library's order);
//              run_chunk: each workgroup streams its own contiguous chunk of u_chunk quads
//              (persistent workgroups, 1-D grid), U quads per trip, loads before stores;
//              run_pf: run_one, and invocation 0 of each workgroup first loads a, b and c PF quads
//              ahead (a TLB prefetch: the pages are walked before the stream reaches them)
//   U          quads per trip of run_chunk
//   PF         run_pf's distance in quads
layout(local_size_x = LOCAL) in;
#ifdef PF
#define QUAL_OUT restrict
#else
#define QUAL_OUT writeonly restrict
#endif
layout(std430, binding = 0) readonly restrict buffer A_ { vec4 a[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { vec4 b[]; };
layout(std430, binding = 2) QUAL_OUT buffer C_ { vec4 c[]; };
uniform uint n4;
uniform uint u_chunk;
uniform float u_magic;

void op_add(uint i) { c[i] = a[i] + b[i]; }
void op_fill(uint i) { c[i] = vec4(float(i)); }
void op_read2(uint i) {
  vec4 v = a[i] + b[i];
  if (v.x == u_magic) c[i] = v;
}

uint row_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

void run_one() {
  uint i = row_index();
  if (i < n4) OP(i);
}

#ifdef PF
void run_pf() {
  uint i = row_index();
  if (gl_LocalInvocationID.x == 0u && i + uint(PF) < n4) {
    uint j = i + uint(PF);
    vec4 t = a[j] + b[j] + c[j];
    if (t.x == u_magic) c[i] = t;  // never (NaN): keeps the loads
  }
  if (i < n4) OP(i);
}
#endif

#ifdef U
void run_chunk() {
  uint lo = gl_WorkGroupID.x * u_chunk;
  uint hi = min(lo + u_chunk, n4);
  for (uint base = lo + gl_LocalInvocationID.x; base < hi; base += uint(LOCAL * U)) {
    vec4 r[U];
    for (int k = 0; k < U; ++k) {
      uint i = base + uint(k * LOCAL);
      r[k] = i < hi ? a[i] + b[i] : vec4(0.0);
    }
    for (int k = 0; k < U; ++k) {
      uint i = base + uint(k * LOCAL);
      if (i < hi) c[i] = r[k];
    }
  }
}
#endif

void main() { RUN(); }
