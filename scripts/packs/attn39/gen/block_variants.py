#!/usr/bin/env python3
"""GLSL variants of glsl/nn/attention_block.comp for GLTENSOR_GLSL_DIR (attn39's pack; the same interface, measured
or tested without a rebuild): block_variants.py SRC OUTDIR writes OUTDIR/<name>/attention_block.comp.

Sabotages (test_nn Attention.BlockKernelMatchesReference must fail): sab_l (a row group's sum without its last of 8
partials), sab_m (a row group's maximum without the first partial of each 8: review39's R4), sab_m8 (the
row maximum without the first of the 8), sab_causal (the causal mask one key early: the diagonal masked), sab_scale (row 3 of each group x 1.001).
Timing probes (wrong outputs, GPU time only): t1 (phase 1 only: one shared value stored per invocation), t12 (phases 1
and 2). Loop forms: p3plain (phase 3 one key a trip, no 4-key unroll)."""
import os, sys

src, out = sys.argv[1], sys.argv[2]
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
variant("p3plain", [("for (; LOOP(j + 3u * KP < kend); j += 4u * KP) {", "for (; LOOP(j + 3u * KP < 0u); j += 4u * KP) {")])
