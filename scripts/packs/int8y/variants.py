#!/usr/bin/env python3
"""Writes window 2's kernel copies of glsl/nn/imatmul_warp.comp (GLTENSOR_GLSL_DIR folders) into
the pack folder given: nodiv (A's zero point not indexed by row: one division less per A word),
restrict (A and B read through readonly restrict blocks aliasing bindings 1 and 2), both."""
import os
import sys

src = open(os.path.join(os.path.dirname(__file__), "../../../glsl/nn/imatmul_warp.comp")).read()
NODIV = ("float z = float(load3(u_za_row * (i / u_qa_s)));", "float z = float(load3(0u));")
ALIAS = ("vec4 quadA(uint i);  //",
         "layout(std430, binding = 1) readonly restrict buffer IwA { uint iwa[]; };\n"
         "layout(std430, binding = 2) readonly restrict buffer IwB { uint iwb[]; };\nvec4 quadA(uint i);  //")
RA = ("iw_bytes(t1[i], A_SIGNED)", "iw_bytes(iwa[i], A_SIGNED)")
RB = ("iw_bytes(t2[i], B_SIGNED)", "iw_bytes(iwb[i], B_SIGNED)")
for name, subs in {"nodiv": [NODIV], "restrict": [ALIAS, RA, RB], "both": [NODIV, ALIAS, RA, RB]}.items():
    s = src
    for old, new in subs:
        assert old in s, old
        s = s.replace(old, new, 1)
    d = os.path.join(sys.argv[1], "glsl-" + name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "imatmul_warp.comp"), "w").write(s)
