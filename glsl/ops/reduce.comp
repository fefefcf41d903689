// Reductions over any set of dims. The host permutes the input to [kept dims..., reduced dims...]
// (as strides, no copy); one workgroup reduces one output element, or one chunk of it in
// stage_partial (partial states to st[]), finished by stage_combine over the partials;
// stage_whole does both in one pass. A state is (v = (a, b, c), i = index or EMPTY); NaN propagates as in PyTorch.
// RED (host: `#define RED red_<name>`): red_sum, red_prod, red_max, red_min, red_argmax, red_argmin,
// red_var (Welford/Chan), red_logsumexp, red_l1, red_l2, red_all, red_any. STAGE: stage_whole,
// stage_partial, stage_combine.
// Sources: Chan, Golub, LeVeque, "Algorithms for computing the sample variance" (1983).
// The names' values are private to this file.
#define red_sum 0
#define red_prod 1
#define red_max 2
#define red_min 3
#define red_argmax 4
#define red_argmin 5
#define red_var 6
#define red_logsumexp 7
#define red_l1 8
#define red_l2 9
#define red_all 10
#define red_any 11
#define stage_whole 0
#define stage_partial 1
#define stage_combine 2

layout(local_size_x = LOCAL_X) in;
struct RS {
  vec3 v;
  int i;
};
layout(std430, binding = 2) buffer States { RS st[]; };

uniform uint u_nout;
uniform uint u_R;      // reduced elements per output
uniform uint u_chunk;  // reduced elements per workgroup (stage_partial)
uniform uint u_G;      // chunks per output
uniform uint u_kshape[KD];
uniform uint u_kstride[KD];
uniform uint u_rshape[RD];
uniform uint u_rstride[RD];
uniform uint u_in_off;
uniform uint u_out_off;
uniform float u_correction;
uniform int u_post;  // 1: divide by R (mean); 2: sqrt (std, after var)

shared RS s_st[LOCAL_X];

const int EMPTY = -1;

RS identity() {
#if RED == red_prod || RED == red_all
  return RS(vec3(1.0, 0.0, 0.0), EMPTY);
#elif RED == red_logsumexp
  return RS(vec3(-F_INF, 0.0, 0.0), EMPTY);
#else
  return RS(vec3(0.0, 0.0, 0.0), EMPTY);
#endif
}

RS lift(float x, uint r) {
#if RED == red_var
  return RS(vec3(1.0, x, 0.0), int(r));
#elif RED == red_logsumexp
  return RS(vec3(x, 1.0, 0.0), int(r));
#elif RED == red_l1
  return RS(vec3(abs(x), 0.0, 0.0), int(r));
#elif RED == red_l2
  return RS(vec3(x * x, 0.0, 0.0), int(r));
#elif RED == red_all || RED == red_any
  return RS(vec3((x != 0.0 || is_nan(x)) ? 1.0 : 0.0, 0.0, 0.0), int(r));
#else
  return RS(vec3(x, 0.0, 0.0), int(r));
#endif
}

RS combine(RS p, RS q) {
  int pi = p.i, qi = q.i;
  if (pi == EMPTY) return q;
  if (qi == EMPTY) return p;
  int mi = min(pi, qi);
#if RED == red_sum || RED == red_l1 || RED == red_l2
  return RS(vec3(p.v.x + q.v.x, 0.0, 0.0), mi);
#elif RED == red_prod
  return RS(vec3(p.v.x * q.v.x, 0.0, 0.0), mi);
#elif RED == red_max || RED == red_min || RED == red_argmax || RED == red_argmin
  bool pn = is_nan(p.v.x), qn = is_nan(q.v.x);
  if (pn && qn) return pi < qi ? p : q;
  if (pn) return p;
  if (qn) return q;
#if RED == red_max || RED == red_argmax
  if (p.v.x > q.v.x) return p;
  if (q.v.x > p.v.x) return q;
#else
  if (p.v.x < q.v.x) return p;
  if (q.v.x < p.v.x) return q;
#endif
  return pi < qi ? p : q;  // ties: first index
#elif RED == red_var
  float n = p.v.x + q.v.x;
  float d = q.v.y - p.v.y;
  float mean = p.v.y + d * (q.v.x / n);
  float m2 = p.v.z + q.v.z + d * d * (p.v.x * q.v.x / n);
  return RS(vec3(n, mean, m2), mi);
#elif RED == red_logsumexp
  if (is_nan(p.v.x) || is_nan(q.v.x)) return RS(vec3(F_NAN, 1.0, 0.0), mi);
  float m = max(p.v.x, q.v.x);
  if (m == -F_INF) return RS(vec3(m, 0.0, 0.0), mi);
  if (m == F_INF) return RS(vec3(m, 1.0, 0.0), mi);
  return RS(vec3(m, p.v.y * exp(p.v.x - m) + q.v.y * exp(q.v.x - m), 0.0), mi);
#elif RED == red_all
  return RS(vec3(p.v.x * q.v.x, 0.0, 0.0), mi);
#elif RED == red_any
  return RS(vec3(max(p.v.x, q.v.x), 0.0, 0.0), mi);
#endif
}

CT0 finish(RS s) {
#if RED == red_argmax || RED == red_argmin
  return CT0(max(s.i, 0));
#elif RED == red_var
  float denom = max(s.v.x - u_correction, 0.0);
  float v = s.v.z / denom;
  if (s.i == EMPTY) v = F_NAN;
  return CT0(u_post == 2 ? sqrt(v) : v);
#elif RED == red_logsumexp
  if (s.v.x == -F_INF || is_nan(s.v.x) || s.v.x == F_INF) return CT0(s.v.x);
  return CT0(s.v.x + log(s.v.y));
#elif RED == red_l2
  return CT0(sqrt(s.v.x));
#else
  if (u_post == 1) return CT0(s.v.x / float(u_R));
  return CT0(s.v.x);
#endif
}

uint kept_offset(uint o) {
  uint off = u_in_off;
  for (int d = KD - 1; d >= 0; --d) {
    off += (o % u_kshape[d]) * u_kstride[d];
    o /= u_kshape[d];
  }
  return off;
}

uint red_offset(uint r) {
  uint off = 0u;
  for (int d = RD - 1; d >= 0; --d) {
    off += (r % u_rshape[d]) * u_rstride[d];
    r /= u_rshape[d];
  }
  return off;
}

void main() {
  uint wid = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
#if STAGE == stage_combine
  uint o = wid;
  if (o >= u_nout) return;
  RS acc = identity();
  for (uint j = tid; LOOP(j < u_G); j += LOCAL_X) acc = combine(acc, st[o * u_G + j]);
#else
  uint o = wid / u_G;
  uint g = wid % u_G;
  if (o >= u_nout) return;
  uint base = kept_offset(o);
  uint r0 = g * u_chunk;
  uint r1 = min(u_R, r0 + u_chunk);
  RS acc = identity();
  for (uint r = r0 + tid; LOOP(r < r1); r += LOCAL_X) acc = combine(acc, lift(float(load1(base + red_offset(r))), r));
#endif
  s_st[tid] = acc;
  workgroup_sync();
  for (uint s = LOCAL_X / 2u; s > 0u; s >>= 1u) {
    if (tid < s) s_st[tid] = combine(s_st[tid], s_st[tid + s]);
    workgroup_sync();
  }
  if (tid == 0u) {
#if STAGE == stage_partial
    st[wid] = s_st[0];
#else
    store0(u_out_off + o, finish(s_st[0]));
#endif
  }
}
