// Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011). Element e uses counter (e, 0, offset_lo, offset_hi) and key
// (seed_lo, seed_hi), so results depend only on (seed, offset, e): reproducible on any device.
// DIST (host: `#define DIST dist_<name>`): dist_uniform [lo, hi), dist_normal (mean, std;
// Box-Muller), dist_bernoulli(p) -> 0/1, dist_dropout: out = x * mask / (1 - p) with
// mask ~ bernoulli(1 - p) (operand 1 = x). OFFSET_BUF (dropout only): the value v of operand 2
// (int32, one element, read as unsigned when the kernel runs) is added to u_offset's high word
// (offset u_offset + v 2^32), so that a replayed dispatch (Recording) draws at the offset its
// tensor holds then, and the pair (generator's offset, v) names the draw: a replay (the captured
// generator offset, a new v) never repeats an eager draw's offset (a new generator offset), as
// a sum of the two could (an eager draw at o + 1 with v = 2 and a replay at o with v = 3).
// SAVE_OFFSET (with OFFSET_BUF): element 0 of operand 3 (int32) gets the value v read, so that
// the dropout's backward draws the same mask from it (the offset tensor may change before then).
// The names' values are private to this file.
#define dist_uniform 0
#define dist_normal 1
#define dist_bernoulli 2
#define dist_dropout 3

layout(local_size_x = LOCAL_X) in;

uniform uint u_count;
uniform uvec2 u_seed;
uniform uvec2 u_offset;
uniform float u_a;
uniform float u_b;

#include "philox.glsl"

// (0, 1]: never 0, so log() is finite.
float unit(uint x) { return (float(x >> 8) + 1.0) * (1.0 / 16777216.0); }

void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
#ifdef OFFSET_BUF
  uvec2 offset = uvec2(u_offset.x, u_offset.y + uint(load2(0u)));
#ifdef SAVE_OFFSET
  if (e == 0u) store3(0u, load2(0u));
#endif
#else
  uvec2 offset = u_offset;
#endif
  uvec4 r = philox(uvec4(e, 0u, offset.x, offset.y), u_seed);
#if DIST == dist_uniform
  float v = u_a + (u_b - u_a) * (unit(r.x) - 1.0 / 16777216.0);
#elif DIST == dist_normal
  float v = u_a + u_b * sqrt(-2.0 * log(unit(r.x))) * cos(6.283185307179586 * unit(r.y));
#elif DIST == dist_bernoulli
  float v = unit(r.x) <= u_a ? 1.0 : 0.0;
#else
  float keep = 1.0 - u_a;
  float v = unit(r.x) <= keep ? float(load1(e)) / keep : 0.0;
#endif
  store0(e, CT0(v));
}
