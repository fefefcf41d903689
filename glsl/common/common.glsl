// Shared helpers: IEEE special values and 16-bit float conversions (round to nearest even).
precision highp float;
precision highp int;

const float F_NAN = uintBitsToFloat(0x7fc00000u);
const float F_INF = uintBitsToFloat(0x7f800000u);

// Bit tests: compilers may fold x != x away, bit patterns cannot be folded.
bool is_nan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool is_inf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool is_nan(int x) { return false; }
bool is_inf(int x) { return false; }

// a / b rounded to nearest, as IEEE division is (the float64/numpy references, llvmpipe). GPUs
// divide approximately (NVIDIA's GLSL division is within ~2 ulp), which moves exact quotients
// such as 25.5 off a rounding tie and gives other answers than CI's (the H100 gave 25 for 26 in
// ONNX's DynamicQuantizeLinear test): one Newton step with the exact residual (fma) gives the
// correctly rounded quotient. Infinite and NaN quotients pass unchanged. GLSL ES 3.10 has no fma.
float div_rn(float a, float b) {
  float q = a / b;
#if !defined(GL_ES) || __VERSION__ >= 320
  if (abs(q) <= 3.4028234e38) q += fma(-q, b, a) / b;
#endif
  return q;
}

float f16_bits_to_f32(uint h) { return unpackHalf2x16(h & 0xffffu).x; }

// IEEE binary16 with round to nearest even, overflow to Inf, NaN kept quiet.
uint f32_to_f16_bits(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to Inf (>= 65520)
  if (a < 0x38800000u) {                        // subnormal half or zero (< 2^-14)
    if (a < 0x33000000u) return sign;           // < 2^-25 rounds to 0
    uint e = a >> 23;
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;                      // 14..24 (= 113 - e + 13)
    uint r = m >> shift;
    uint rem = m & ((1u << shift) - 1u);
    uint half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (r & 1u) == 1u)) r += 1u;
    return sign | r;
  }
  uint r = a - 0x38000000u;  // rebias exponent 127 -> 15
  uint mant = r & 0x1fffu;
  r >>= 13;
  if (mant > 0x1000u || (mant == 0x1000u && (r & 1u) == 1u)) r += 1u;
  return sign | r;
}

float bf16_bits_to_f32(uint h) { return uintBitsToFloat((h & 0xffffu) << 16); }

uint f32_to_bf16_bits(float f) {
  uint x = floatBitsToUint(f);
  if (is_nan(f)) return ((x >> 16) & 0x8000u) | 0x7fc0u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

// Special functions shared by the unary ops and fused epilogues. GLSL only bounds log() near 1
// by an absolute error (2^-21), so small arguments use series instead of exp/log near 1.
// expm1: Taylor series for |x| < 0.5 (truncation < 3e-10 relative); tanh via expm1 (no overflow,
// accurate near 0); log1p: 2 atanh(x / (2 + x)) series for |x| < 0.5;
// erfc: Numerical Recipes' Chebyshev fit (relative error < 1.2e-7); erf: Taylor series near 0.
float expm1_f(float x) {
  if (is_nan(x) || x > 88.8) return exp(x);
  if (x < -20.0) return -1.0;
  if (abs(x) < 0.5)
    return x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 +
           x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x * (1.0 / 362880.0)))))))));
  return exp(x) - 1.0;
}

float log1p_f(float x) {
  if (is_nan(x) || x < -1.0) return F_NAN;
  if (x == -1.0) return -F_INF;
  if (is_inf(x)) return x;
  if (abs(x) < 0.5) {
    float s = x / (2.0 + x), s2 = s * s;
    return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 * (1.0 / 11.0 +
           s2 * (1.0 / 13.0)))))));
  }
  return log(1.0 + x);
}

float tanh_f(float x) {
  if (is_nan(x)) return x;
  float a = abs(x);
  float r = 1.0;
  if (a <= 9.5) {
    float e = expm1_f(-2.0 * a);
    r = -e / (2.0 + e);
  }
  return x < 0.0 ? -r : r;
}

float erfc_f(float x) {
  if (is_nan(x)) return x;
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 +
                    t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
                    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? r : 2.0 - r;
}

float erf_f(float x) {
  if (is_nan(x)) return x;
  if (abs(x) < 0.5) {
    float x2 = x * x;
    return x * (1.1283791670955126 + x2 * (-0.3761263890318375 + x2 * (0.11283791670955126 +
           x2 * (-0.026866170645131252 + x2 * (0.005223977625442188 + x2 * -0.0008548327023450852)))));
  }
  return 1.0 - erfc_f(x);
}

// Execution barrier plus visibility of shared-memory writes to the whole workgroup. barrier()
// alone does not make shared writes visible on every driver (seen on NVIDIA: stale reads).
void workgroup_sync() {
  memoryBarrierShared();
  barrier();
}

// Grid coordinates. The launch layer (src/runtime/launch.hpp) splits grids larger than the
// device's workgroup counts into several dispatches: u_group_base is the first workgroup of this
// dispatch and u_grid the whole grid, in workgroups. Kernels use these, never gl_WorkGroupID,
// gl_GlobalInvocationID or gl_NumWorkGroups.
uniform uvec3 u_group_base;
uniform uvec3 u_grid;
#define WORKGROUP_ID (gl_WorkGroupID + u_group_base)
#define GLOBAL_ID (WORKGROUP_ID * gl_WorkGroupSize + gl_LocalInvocationID)
// Workgroup / invocation index of a 1-D grid laid out as rows of u_grid.x workgroups
// (Launch::groups_1d / Launch::invocations); indices past the end exist and must exit.
#define WORKGROUP_ID_1D (WORKGROUP_ID.x + WORKGROUP_ID.y * u_grid.x)
#define GLOBAL_ID_1D (GLOBAL_ID.x + GLOBAL_ID.y * u_grid.x * LOCAL_X)

// Loop lengths, checked by the kernels themselves. A loop whose trip count depends on the input
// is written `for (init; LOOP(cond); step)`. Normally LOOP(c) is (c). With CHECK_LOOPS (the
// device opened with GLTENSOR_CHECK_LOOPS=1: the program cache adds it to every program whose
// main can reach a LOOP(), glsl_reaches_loop; the others are compiled as without it) each
// invocation counts the trips of its LOOP()s together, and one that passes the launch's declared
// loop_iterations (u_loop_declared) raises its launch's slot (u_loop_slot) of the device's error
// flag buffer to its count; the host raises LimitError naming the kernel and both counts
// (src/runtime/error_flags.hpp). Trips only: llvmpipe also counts each loop's exit test, which
// many declarations leave out (up to one per loop entered: the check allows that slack). Loops
// with constant trip counts, compare-and-swap retry loops (their trips depend on contention, not
// on the input), and loops over register arrays of attention_flash.comp (llvmpipe gave wrong
// results with the counter in them) stay plain `for`s.
#ifdef CHECK_LOOPS
layout(std430, binding = CHECK_LOOPS_BINDING) buffer LoopCheck { uint loop_check[]; };
uniform uint u_loop_declared;
uniform uint u_loop_slot;
uint loop_count_ = 0u;
bool loop_tick_() {
  loop_count_ += 1u;
  if (loop_count_ > u_loop_declared) atomicMax(loop_check[u_loop_slot], loop_count_);
  return true;
}
#define LOOP(cond) ((cond) && loop_tick_())
#else
#define LOOP(cond) (cond)
#endif
