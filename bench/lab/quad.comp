// Streaming kernels over n4 quads (vec4) of the buffers a, b (in) and c (out), for measuring
// bandwidth (bench/kernel_lab.cpp, mode add / bufs / hints / offsets). Chosen by the lab:
//   LOCAL      workgroup size (invocations)
//   QUALIFIED  readonly restrict a and b, writeonly restrict c (absent: unqualified buffers)
//   OP         the work on quad i: op_add (c = a + b), op_copy (c = a), op_fill (c = i),
//              op_read (reads a, writes c[0] only if a value is 12345), op_read2 (a + b, the same)
//   RUN        the grid: run_one (one quad per invocation of a 2-D grid of rows of
//              gl_NumWorkGroups.x workgroups), run_four (4 quads per invocation, a workgroup's
//              invocations reading consecutive quads), run_stride (grid-stride loop over a 1-D
//              grid), run_n (QN quads per invocation of the 2-D grid, a workgroup's invocations
//              reading consecutive quads, every load issued before the first store: op_add only)
layout(local_size_x = LOCAL) in;
#ifdef QUALIFIED
#define QUAL_IN readonly restrict
#define QUAL_OUT writeonly restrict
#else
#define QUAL_IN
#define QUAL_OUT
#endif
layout(std430, binding = 0) QUAL_IN buffer A_ { vec4 a[]; };
layout(std430, binding = 1) QUAL_IN buffer B_ { vec4 b[]; };
layout(std430, binding = 2) QUAL_OUT buffer C_ { vec4 c[]; };
uniform uint n4;

void op_add(uint i) { c[i] = a[i] + b[i]; }
void op_copy(uint i) { c[i] = a[i]; }
void op_fill(uint i) { c[i] = vec4(float(i)); }
void op_read(uint i) {
  vec4 v = a[i];
  if (v.x == 12345.0) c[0] = v;
}
void op_read2(uint i) {
  vec4 v = a[i] + b[i];
  if (v.x == 12345.0) c[0] = v;
}

void run_one() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i < n4) OP(i);
}
void run_four() {
  uint base = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * gl_WorkGroupSize.x * 4u +
              gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i < n4) OP(i);
  }
}
void run_stride() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n4; i += stride) OP(i);
}

#ifdef QN
void run_n() {
  uint base = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * gl_WorkGroupSize.x * uint(QN) +
              gl_LocalInvocationID.x;
  vec4 r[QN];
  for (int k = 0; k < QN; ++k) {
    uint i = base + uint(k) * gl_WorkGroupSize.x;
    r[k] = i < n4 ? a[i] + b[i] : vec4(0.0);
  }
  for (int k = 0; k < QN; ++k) {
    uint i = base + uint(k) * gl_WorkGroupSize.x;
    if (i < n4) c[i] = r[k];
  }
}
#endif

void main() { RUN(); }
