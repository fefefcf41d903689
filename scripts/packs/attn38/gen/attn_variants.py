#!/usr/bin/env python3
"""attention.comp's GLSL variants for GLTENSOR_GLSL_DIR (attn38's window 2): the same interface, the loops written
so that a tile's shared loads are issued together. gen/attn_variants.py SRC OUTDIR writes OUTDIR/<name>/attention.comp
for pv4 (the P.V loop four keys a trip), dq2 (the score loop two head-dim quads a trip), merge (COMBINE's tail: every
chunk's loads issued before their use), early (the first K / V tile's loads issued before Q is stored) and all."""
import sys, os

src = open(sys.argv[1]).read()
out = sys.argv[2]


def rep(s, old, new):
    assert s.count(old) == 1, old[:60]
    return s.replace(old, new)


PV_OLD = src[src.index("    for (uint j = 0u; j < BKV; ++j) {\n      vec4 a = PS(j, ty);"):src.index("  }\n#ifdef COMBINE\n  // Unnormalized")]
PV_NEW = """#if DQL == 16
#define PV_STEP(j)                                                   \\
  {                                                                  \\
    vec4 a = PS(j, ty), b0 = Vs[(j) * 16u + tx], b1 = Vs[(j) * 16u + 8u + tx]; \\
    o[1] += a.x * b1;                                                \\
    o[3] += a.y * b1;                                                \\
    o[5] += a.z * b1;                                                \\
    o[7] += a.w * b1;                                                \\
    o[0] += a.x * b0;                                                \\
    o[2] += a.y * b0;                                                \\
    o[4] += a.z * b0;                                                \\
    o[6] += a.w * b0;                                                \\
  }
#elif DQL == 8
#define PV_STEP(j)                                                   \\
  {                                                                  \\
    vec4 a = PS(j, ty), b0 = Vs[(j) * 16u + tx];                     \\
    o[0] += a.x * b0;                                                \\
    o[2] += a.y * b0;                                                \\
    o[4] += a.z * b0;                                                \\
    o[6] += a.w * b0;                                                \\
  }
#else
#define PV_STEP(j)                                                   \\
  {                                                                  \\
    vec4 a = PS(j, ty), b0 = tx < DQLU ? Vs[(j) * 16u + tx] : vec4(0.0); \\
    o[0] += a.x * b0;                                                \\
    o[2] += a.y * b0;                                                \\
    o[4] += a.z * b0;                                                \\
    o[6] += a.w * b0;                                                \\
  }
#endif
    for (uint j = 0u; j < BKV; j += 4u) {  // (attn38 pv4: four keys a trip, their loads together)
      PV_STEP(j)
      PV_STEP(j + 1u)
      PV_STEP(j + 2u)
      PV_STEP(j + 3u)
    }
"""

MERGE_OLD1 = src[src.index("    float M = -F_INF;\n    for (uint c = 0u; LOOP(c < nch); ++c) {"):src.index("    float den = 0.0;")]
MERGE_NEW1 = """    float M = -F_INF;
    for (uint c0 = 0u; LOOP(c0 < nch); c0 += 4u) {  // (attn38 merge: four chunks' (m, l) loads together)
      vec4 ml[4];
      for (uint i = 0u; i < 4u; ++i) ml[i] = c0 + i < nch ? ws4[WS_ML + PART(c0 + i, r)] : vec4(0.0);
      for (uint i = 0u; i < 4u; ++i) {
        if (c0 + i >= nch) break;
        CW(c0 + i, tid) = ml[i].x;
        CW(nch + 1u + c0 + i, tid) = ml[i].y;
        if (ml[i].y != 0.0) M = is_nan(M) ? M : ((ml[i].x > M || is_nan(ml[i].x)) ? ml[i].x : M);
      }
    }
"""
MERGE_OLD2 = """  for (uint c = 0u; LOOP(c < nch); ++c)
    for (uint n = 0u; n < 8u; ++n) {
      uint e = tid + n * LOCAL_X, i = e / 16u, qd = e % 16u;
      if (q0 + i < u_L && qd < evq) acc[n] += CW(c, i) * ws4[PART(c, q0 + i) * 16u + qd];
    }"""
MERGE_NEW2 = """  for (uint c = 0u; LOOP(c < nch); c += 2u) {  // (attn38 merge: two chunks' 16 quads loaded together)
    vec4 w0[8], w1[8];
    for (uint n = 0u; n < 8u; ++n) {
      uint e = tid + n * LOCAL_X, i = e / 16u, qd = e % 16u;
      bool in_ = q0 + i < u_L && qd < evq;
      w0[n] = in_ ? ws4[PART(c, q0 + i) * 16u + qd] : vec4(0.0);
      w1[n] = in_ && c + 1u < nch ? ws4[PART(c + 1u, q0 + i) * 16u + qd] : vec4(0.0);
    }
    for (uint n = 0u; n < 8u; ++n) {
      uint i = (tid + n * LOCAL_X) / 16u;
      acc[n] += CW(c, i) * w0[n];
      if (c + 1u < nch) acc[n] += CW(c + 1u, i) * w1[n];
    }
  }"""

EARLY_OLD = src[src.index("  {\n    vec4 pq[NLQ];"):src.index("  vec4 m = vec4(-F_INF), l = vec4(0.0);")]
EARLY_NEW = """  uint kend = u_causal != 0 ? min(u_S, q0 + BQ) : u_S;
#ifdef SPLIT_KV
  uint kbegin = WORKGROUP_ID.z * u_kchunk;
  kend = min(kend, kbegin + u_kchunk);
#else
  uint kbegin = 0u;
#endif
  // (attn38 early: Q's and the first K / V tile's loads issued together, then Q stored)
  vec4 pq[NLQ];
  for (uint n = 0u; n < NLQ; ++n) {
    uint e = tid + n * LOCAL_X;
    pq[n] = q_quad(q_off, q0 + e / DQLU, e % DQLU);
  }
  vec4 pk[NLD], pv[NLD];
  for (uint n = 0u; n < NLD; ++n) {
    uint e = tid + n * LOCAL_X;
    pk[n] = k_quad(k_off, kbegin + e / DQLU, e % DQLU);
    pv[n] = v_quad(v_off, kbegin + e / DQLU, e % DQLU);
  }
  for (uint n = 0u; n < NLQ; ++n) {
    uint e = tid + n * LOCAL_X;
    QS(e / DQLU, e % DQLU) = pq[n] * u_scale;
  }
"""
assert "uint kend = u_causal" in EARLY_OLD and "pk[n] = k_quad(k_off, kbegin" in EARLY_OLD


def write(name, s):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    open(os.path.join(out, name, "attention.comp"), "w").write(s)


pv4 = rep(src, PV_OLD, PV_NEW)
merge = rep(rep(src, MERGE_OLD1, MERGE_NEW1), MERGE_OLD2, MERGE_NEW2)
early = rep(src, EARLY_OLD, EARLY_NEW)
write("pv4", pv4)
write("merge", merge)
write("early", early)
write("all", rep(rep(rep(pv4, MERGE_OLD1, MERGE_NEW1), MERGE_OLD2, MERGE_NEW2), EARLY_OLD, EARLY_NEW))

# Timing probes (wrong outputs: GPU time only): t0 runs no key tile (the workgroup's fixed cost: batch offsets, Q and
# the first K / V loads, the stores and merge), t1 at most one tile per workgroup.
LOOP_OLD = "  for (uint k0 = kbegin; LOOP(k0 < kend); k0 += BKV) {"
write("t0", rep(src, LOOP_OLD, "  for (uint k0 = kbegin; LOOP(k0 < min(kend, kbegin)); k0 += BKV) {  // (attn38 t0: no tile)"))
write("t1", rep(src, LOOP_OLD, "  for (uint k0 = kbegin; LOOP(k0 < min(kend, kbegin + BKV)); k0 += BKV) {  // (attn38 t1: one tile)"))
