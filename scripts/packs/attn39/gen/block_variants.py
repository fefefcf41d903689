#!/usr/bin/env python3
"""GLSL variants of glsl/nn/attention_block.comp for GLTENSOR_GLSL_DIR (attn39's pack; the same interface, measured
or tested without a rebuild): block_variants.py SRC OUTDIR [BASE] writes OUTDIR/<name>/attention_block.comp: the
sabotages and probes from SRC, the loop forms from BASE (default SRC; make_pack.sh passes fab3fd7's kernel, the one
windows 2-3 measured them on; since b2344c8 the kernel is ilpfu8's form).

Sabotages (test_nn Attention.BlockKernelMatchesReference must fail): sab_l (a row group's sum without its last of 8
partials), sab_m (a row group's maximum without the first partial of each 8: review39's R4), sab_m8 (the
row maximum without the first of the 8), sab_causal (the causal mask one key early: the diagonal masked), sab_scale (row 3 of each group x 1.001).
Timing probes (wrong outputs, GPU time only): t1 (phase 1 only: one shared value stored per invocation), t12 (phases 1
and 2). Loop forms: p3plain (phase 3 one key a trip, no 4-key unroll), p1k2 (phase 1 two keys an item, j and j + ceil(S / 2):
each Q quad read from shared memory serves 8 dot products, not 4), br (k and v quads behind a branch, as windows 1-2's
kernel: against fab3fd7's clamped index), il (phase 1's items interleaved: the RG row groups of one key on
consecutive invocations, so that a subgroup's k loads touch 8 rows, not 32, and its score stores are consecutive; Q's
rows padded by a quad per row group against bank conflicts), p3r8 (phase 3 with 8 rows an invocation: half the key
trips and v loads; its partials need 8 LOCAL_X quads: only where SH_QUADS has them, 16 rows of 256 at S > 256), ilr8 (il and p3r8); pf (phase 1 with the item's 16 k quads loaded into registers together,
the next item's loaded while this one's are multiplied: window 2's probes put 27 us in phase 1), ilpf (il and pf),
u8 (phase 3 eight keys a trip), ilpfu8 (all three)."""
import os, sys

src, out = sys.argv[1], sys.argv[2]
base = sys.argv[3] if len(sys.argv) > 3 else src
text = open(src).read()


def variant(name, pairs):
    t = text
    for old, new in pairs:
        if old not in t:
            sys.exit(f"{name}: {old!r} not in {src}")
        t = t.replace(old, new, 1)
    os.makedirs(os.path.join(out, name), exist_ok=True)
    open(os.path.join(out, name, "attention_block.comp"), "w").write(t)


variant("sab_l", [("for (uint a = 0u; a < 8u; ++a) l += red8", "for (uint a = 0u; a < 7u; ++a) l += red8")])
variant("sab_m", [("for (uint b = 0u; b < NI8; ++b) x = max", "for (uint b = 1u; b < NI8; ++b) x = max")])
variant("sab_m8", [("for (uint a = 0u; a < 8u; ++a) M = max", "for (uint a = 1u; a < 8u; ++a) M = max")])
variant("sab_causal", [("greaterThan(uvec4(j)", "greaterThanEqual(uvec4(j)")])
variant("sab_scale", [("CT0(acc * rinv[g][rr])", "CT0(acc * rinv[g][rr] * (rr == 3u ? 1.001 : 1.0))")])
probe = "  store0(WORKGROUP_ID.x * LOCAL_X + tid, CT0(sh[tid].x));\n  return;\n"
variant("t1", [("  // 2. per row: M,", probe + "  // 2. per row: M,")])
variant("t12", [("  // 3. O = P V:", probe + "  // 3. O = P V:")])
text = open(base).read()  # the loop forms below: on BASE
variant("p3plain", [("for (; LOOP(j + 3u * KP < kend); j += 4u * KP) {", "for (; LOOP(j + 3u * KP < 0u); j += 4u * KP) {")])
P1_OLD = """  for (uint it = tid; LOOP(it < RG * u_S); it += LOCAL_X) {
    uint g = it / u_S, j = it - g * u_S;
    vec4 s = vec4(0.0);
    for (uint dq = 0u; dq < DQU; ++dq) {
      vec4 kq = k_quad(k_off, j, dq);
      s.x += dot(qs[(4u * g) * DQU + dq], kq);
      s.y += dot(qs[(4u * g + 1u) * DQU + dq], kq);
      s.z += dot(qs[(4u * g + 2u) * DQU + dq], kq);
      s.w += dot(qs[(4u * g + 3u) * DQU + dq], kq);
    }
    if (u_causal != 0) {
      uint r = q0 + 4u * g;
      s = mix(s, vec4(-F_INF), greaterThan(uvec4(j), uvec4(r, r + 1u, r + 2u, r + 3u)));
    }
    sh[j * RG + g] = s;
  }
"""
P1_K2 = """  uint H = (u_S + 1u) / 2u;
  for (uint it = tid; LOOP(it < RG * H); it += LOCAL_X) {
    uint g = it / H, j = it - g * H, j1 = j + H;
    bool two = j1 < u_S;
    vec4 s = vec4(0.0), t = vec4(0.0);
    for (uint dq = 0u; dq < DQU; ++dq) {
      vec4 kq = k_quad(k_off, j, dq), kr = two ? k_quad(k_off, j1, dq) : vec4(0.0);
      vec4 a = qs[(4u * g) * DQU + dq], b = qs[(4u * g + 1u) * DQU + dq], c = qs[(4u * g + 2u) * DQU + dq],
           d = qs[(4u * g + 3u) * DQU + dq];
      s += vec4(dot(a, kq), dot(b, kq), dot(c, kq), dot(d, kq));
      t += vec4(dot(a, kr), dot(b, kr), dot(c, kr), dot(d, kr));
    }
    if (u_causal != 0) {
      uint r = q0 + 4u * g;
      uvec4 rows = uvec4(r, r + 1u, r + 2u, r + 3u);
      s = mix(s, vec4(-F_INF), greaterThan(uvec4(j), rows));
      t = mix(t, vec4(-F_INF), greaterThan(uvec4(j1), rows));
    }
    sh[j * RG + g] = s;
    if (two) sh[j1 * RG + g] = t;
  }
"""
variant("p1k2", [(P1_OLD, P1_K2)])
variant("br", [("""  vec4 x = qK[(off + j * u_k_ss) / 4u + min(dq, u_E / 4u - 1u)];
  return 4u * dq < u_E ? x : vec4(0.0);""", """  if (4u * dq >= u_E) return vec4(0.0);
  return qK[(off + j * u_k_ss) / 4u + dq];"""), ("""  return qV[(off + j * u_v_ss) / 4u + min(dq, u_Ev / 4u - 1u)];""", """  if (4u * dq >= u_Ev) return vec4(0.0);
  return qV[(off + j * u_v_ss) / 4u + dq];""")])
IL = [("shared vec4 qs[BRU * DQU];", "shared vec4 qs[BRU * DQU + RG];"),
                ("qs[e] = q_quad(q_off, q0 + e / DQU, e % DQU) * u_scale;",
                 "qs[e + e / (4u * DQU)] = q_quad(q_off, q0 + e / DQU, e % DQU) * u_scale;"),
                ("uint g = it / u_S, j = it - g * u_S;", "uint g = it % RG, j = it / RG;"),
                ("s.x += dot(qs[(4u * g) * DQU + dq], kq);", "s.x += dot(qs[(4u * g) * DQU + g + dq], kq);"),
                ("s.y += dot(qs[(4u * g + 1u) * DQU + dq], kq);", "s.y += dot(qs[(4u * g + 1u) * DQU + g + dq], kq);"),
                ("s.z += dot(qs[(4u * g + 2u) * DQU + dq], kq);", "s.z += dot(qs[(4u * g + 2u) * DQU + g + dq], kq);"),
                ("s.w += dot(qs[(4u * g + 3u) * DQU + dq], kq);", "s.w += dot(qs[(4u * g + 3u) * DQU + g + dq], kq);")]
variant("il", IL)
P3_OLD = text[text.index("  // 3. O = P V:"):]
P3_R8 = """  // 3. O = P V with 8 rows (row groups 2h, 2h + 1) an invocation: (dq, h, kp)
#define RH (RG / 2u)
#define KP8 (LOCAL_X / (DQU * RH))
  uint dq3 = tid % DQU, h3 = (tid / DQU) % RH, kp = tid / (DQU * RH);
  uint kend = u_causal != 0 ? min(u_S, q0 + BRU) : u_S;
  vec4 o0 = vec4(0.0), o1 = vec4(0.0), o2 = vec4(0.0), o3 = vec4(0.0);
  vec4 o4 = vec4(0.0), o5 = vec4(0.0), o6 = vec4(0.0), o7 = vec4(0.0);
  uint j = kp;
  for (; LOOP(j + KP8 < kend); j += 2u * KP8) {
    vec4 v0 = v_quad(v_off, j, dq3), v1 = v_quad(v_off, j + KP8, dq3);
    vec4 a0 = sh[j * RG + 2u * h3], b0 = sh[j * RG + 2u * h3 + 1u];
    vec4 a1 = sh[(j + KP8) * RG + 2u * h3], b1 = sh[(j + KP8) * RG + 2u * h3 + 1u];
    o0 += a0.x * v0 + a1.x * v1;
    o1 += a0.y * v0 + a1.y * v1;
    o2 += a0.z * v0 + a1.z * v1;
    o3 += a0.w * v0 + a1.w * v1;
    o4 += b0.x * v0 + b1.x * v1;
    o5 += b0.y * v0 + b1.y * v1;
    o6 += b0.z * v0 + b1.z * v1;
    o7 += b0.w * v0 + b1.w * v1;
  }
  for (; LOOP(j < kend); j += KP8) {
    vec4 vq = v_quad(v_off, j, dq3);
    vec4 a = sh[j * RG + 2u * h3], b = sh[j * RG + 2u * h3 + 1u];
    o0 += a.x * vq;
    o1 += a.y * vq;
    o2 += a.z * vq;
    o3 += a.w * vq;
    o4 += b.x * vq;
    o5 += b.y * vq;
    o6 += b.z * vq;
    o7 += b.w * vq;
  }
  workgroup_sync();  // every p read: the partials take P's memory
  sh[tid] = o0;
  sh[LOCAL_X + tid] = o1;
  sh[2u * LOCAL_X + tid] = o2;
  sh[3u * LOCAL_X + tid] = o3;
  sh[4u * LOCAL_X + tid] = o4;
  sh[5u * LOCAL_X + tid] = o5;
  sh[6u * LOCAL_X + tid] = o6;
  sh[7u * LOCAL_X + tid] = o7;
  workgroup_sync();
  uint rows = min(BRU, u_L - q0);
  uint base = (z * u_L + q0) * u_Ev;
  for (uint e = tid; LOOP(e < rows * u_Ev); e += LOCAL_X) {
    uint r = e / u_Ev, c = e % u_Ev, g = r / 4u, rr = r % 4u;
    uint at = ((g % 2u) * 4u + rr) * LOCAL_X + (c / 4u) + DQU * (g / 2u);
    float acc = 0.0;
    for (uint k = 0u; k < KP8; ++k) acc += sh[at + k * DQU * RH][c % 4u];
    store0(base + e, CT0(acc * rinv[g][rr]));
  }
}
"""
variant("p3r8", [(P3_OLD, P3_R8)])
variant("ilr8", IL + [(P3_OLD, P3_R8)])
def p1_pf(il):
    gj = "uint g = it % RG, j = it / RG;" if il else "uint g = it / u_S, j = it - g * u_S;"
    gjn = "uint gn = itn % RG, jn = itn / RG;" if il else "uint gn = itn / u_S, jn = itn - gn * u_S;"
    qi = (lambda r: f"qs[(4u * g + {r}) * DQU + g + dq]") if il else (lambda r: f"qs[(4u * g + {r}) * DQU + dq]")
    return f"""  vec4 kn[DQ];
  if (tid < RG * u_S) {{
    uint it = tid;
    {gj}
    for (uint dq = 0u; dq < DQU; ++dq) kn[dq] = k_quad(k_off, j, dq);
  }}
  for (uint it = tid; LOOP(it < RG * u_S); it += LOCAL_X) {{
    {gj}
    vec4 kc[DQ];
    for (uint dq = 0u; dq < DQU; ++dq) kc[dq] = kn[dq];
    uint itn = it + LOCAL_X;
    if (itn < RG * u_S) {{  // the next item's k row, in flight while this one is multiplied
      {gjn}
      for (uint dq = 0u; dq < DQU; ++dq) kn[dq] = k_quad(k_off, jn, dq);
    }}
    vec4 s = vec4(0.0);
    for (uint dq = 0u; dq < DQU; ++dq) {{
      s.x += dot({qi("0u")}, kc[dq]);
      s.y += dot({qi("1u")}, kc[dq]);
      s.z += dot({qi("2u")}, kc[dq]);
      s.w += dot({qi("3u")}, kc[dq]);
    }}
    if (u_causal != 0) {{
      uint r = q0 + 4u * g;
      s = mix(s, vec4(-F_INF), greaterThan(uvec4(j), uvec4(r, r + 1u, r + 2u, r + 3u)));
    }}
    sh[j * RG + g] = s;
  }}
"""
ILQ = IL[:2]  # the padded Q layout only
variant("pf", [(P1_OLD, p1_pf(False))])
variant("ilpf", ILQ + [(P1_OLD, p1_pf(True))])
P3U4 = text[text.index("  for (; LOOP(j + 3u * KP < kend); j += 4u * KP) {"):text.index("  for (; LOOP(j < kend); j += KP) {")]
P3U8 = """  for (; LOOP(j + 7u * KP < kend); j += 8u * KP) {  // 8 keys a trip: their v loads in flight together
    vec4 v[8], p[8];
    for (uint u = 0u; u < 8u; ++u) {
      v[u] = v_quad(v_off, j + u * KP, dq3);
      p[u] = sh[(j + u * KP) * RG + g3];
    }
    for (uint u = 0u; u < 8u; ++u) {
      o0 += p[u].x * v[u];
      o1 += p[u].y * v[u];
      o2 += p[u].z * v[u];
      o3 += p[u].w * v[u];
    }
  }
""" + P3U4
variant("u8", [(P3U4, P3U8)])
variant("ilpfu8", ILQ + [(P1_OLD, p1_pf(True)), (P3U4, P3U8)])
