#!/usr/bin/env python3
"""Writes window 1's kernel copies (GLTENSOR_GLSL_DIR folders, timing labs only: their outputs are
wrong) into the pack folder given: epifma (imatmul_warp.comp's requantization as one FMA, round and
clamp per output from two per-row loads, the cost of a precomputed multiplier and addend), epinone
(no requantization: the sum clamped), icolnoop (icol.comp writes nothing: im2col's share)."""
import os
import sys

root = os.path.join(os.path.dirname(__file__), "../../..")
warp = open(os.path.join(root, "glsl/nn/imatmul_warp.comp")).read()
icol = open(os.path.join(root, "glsl/nn/icol.comp")).read()
start = warp.index("float iw_requant(float s, uint m) {")
end = warp.index("\n}\n", start) + 3
EPIFMA = """float iw_requant(float s, uint m) {
  float mult = float(load6(u_sb_per * m));
#ifdef HAS_BIAS
  float add = float(load7(m));
#else
  float add = 0.0;
#endif
  float r = clamp(roundEven(fma(s, mult, add)), float(QMIN), float(QMAX));
#ifdef DQ_OUT
  return r * mult;
#else
  return r;
#endif
}
"""
EPINONE = """float iw_requant(float s, uint m) { return clamp(s, float(QMIN), float(QMAX)); }
"""
NOOP = ("  if (q >= u_PQ) return;", "  if (q < 0xffffffffu) return;")
out = {"epifma": ("imatmul_warp.comp", warp[:start] + EPIFMA + warp[end:]),
       "epinone": ("imatmul_warp.comp", warp[:start] + EPINONE + warp[end:])}
assert NOOP[0] in icol
out["icolnoop"] = ("icol.comp", icol.replace(NOOP[0], NOOP[1], 1))
for name, (f, text) in out.items():
    d = os.path.join(sys.argv[1], "glsl-" + name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, f), "w").write(text)
