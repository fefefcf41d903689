#!/usr/bin/env bash
# Makes lstm37's GPU pack: P=/work/main/gpu-multi/lstm37 bash scripts/packs/lstm37/make_pack.sh
# bin/ (this worktree's gltensor-run, gltensor_model_bench, test_rnn, stripped), lib/ (its libgltensor.so.0),
# libs.tar.xz (libmain/: main's, MAIN_LIB, default /work/main/build's), glsl/ (copies of rnn_seq_regs.comp for
# GLTENSOR_GLSL_DIR: a sabotage and timing probes), py/ + torchcmp.sh (torchcmp's scripts), run.sh (RUN: another
# script of this folder), COMMIT.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/lstm37}; SHARED=${SHARED:-/work/shared/gpu}
MAIN_LIB=${MAIN_LIB:-/work/main/build/libgltensor.so.0}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "/tmp/lstm37-result-prev-$(date +%H%M%S).txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py" "$P/glsl"; T=$(mktemp -d); mkdir -p "$T/libmain"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$WT/build/tests/test_rnn" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp -L "$MAIN_LIB" "$T/libmain/libgltensor.so.0"
strip "$P"/bin/* "$P"/lib/* "$T"/lib*/*
tar -C "$T" -cf - libmain | xz -T1 -6 > "$P/libs.tar.xz"; rm -rf "$T"
python3 - "$WT/glsl/nn/rnn_seq_regs.comp" "$P/glsl" <<'PY'
import os, sys
s = open(sys.argv[1]).read()
R = {
    "noflag": ("atomicOr(err_flag[0], 8u);", "if (u_T == 0u) atomicOr(err_flag[0], 8u);"),
    "nox": ("vec4 x_at(uint d, uint b, uint j, uint t) {", "vec4 x_at(uint d, uint b, uint j, uint t) {\n  if (u_T > 0u) return vec4(0.01);"),
    "nocell": ("float h = lstm_cell(d, a + x + bias, p, cn);", "float h = 0.001 * (a.x + a.y + a.z + a.w + x.x + bias.x);\n    cn = h;"),
    "nobar": ("void main() {", "#define workgroup_sync() memoryBarrierShared()\nvoid main() {"),
    "baronly": ("void main() {", "#define workgroup_sync() barrier()\nvoid main() {"),
    "noy": ("if (s > 0u && pu < uint(HK)) y_put(", "if (u_T == 0u && s > 0u && pu < uint(HK)) y_put("),
    "noshuf": ("for (uint o = 1u; o < uint(KS); o <<= 1u) a += subgroupShuffleXor(a, o);", ""),
    # XPROJ's projecting lanes: no projection (x W^T left as it is), W read from memory each step (direction 0's
    # rows: right for one direction), and the default kernel's Y stores and x loads removed
    "noproj": ("if (s + 1u < u_steps) x_project(rr, pcol, b, rev ? t - 1u : t + 1u, (s + 1u) & 1u);", ""),
    "wmem": ("acc[c] += dot(w[c * uint(XQ) + q], xv);", "acc[c] += dot(wq[(pcol + c) * uint(XQ) + q], xv);"),
    "noydef": ("    if (writer) store0(y_index(d, b, j, t), CT0(live ? h : 0.0));", "    if (u_T == 0u) store0(y_index(d, b, j, t), CT0(live ? h : 0.0));"),
    "nogemv": ("for (uint k = 0u; k < uint(G); ++k) a[k] += dot(rr[k * uint(QR) + q], hv);",
               "for (uint k = 0u; k < uint(G); ++k) a[k] += hv[0] * 0.01;"),
}
# sabotage noflag (the stall's flag never written: the stall test must fail); timing probes (wrong outputs but
# baronly's): no x W^T loads, no cell (h a sum of the gates), no barriers, barrier() without memoryBarrierShared(),
# no Y stores, no subgroup sums, no GEMV, and combinations
copies = {k: [k] for k in R}
copies.update({"floor": ["nocell", "nogemv", "baronly", "noshuf"], "noyxdef": ["noydef", "nox"]})
for d, names in copies.items():
    t = s
    for n in names:
        old, new = R[n]
        assert t.count(old) == 1, (d, n)
        t = t.replace(old, new)
    os.makedirs(f"{sys.argv[2]}/{d}")
    open(f"{sys.argv[2]}/{d}/rnn_seq_regs.comp", "w").write(t)
# prev: the kernel of PREV (default cd1116e: XPROJ with the recurrence's lanes storing Y), for an A/B in one call
import subprocess
prev = subprocess.run(["git", "-C", os.path.dirname(sys.argv[1]), "show", os.environ.get("PREV", "cd1116e") + ":glsl/nn/rnn_seq_regs.comp"],
                      check=True, capture_output=True, text=True).stdout
os.makedirs(f"{sys.argv[2]}/prev")
open(f"{sys.argv[2]}/prev/rnn_seq_regs.comp", "w").write(prev)
# a probe of the cells' activations through the GLSL builtin tanh (sigmoid as 0.5 tanh(x / 2) + 0.5): rnn.glsl
g = open(os.path.join(os.path.dirname(sys.argv[1]), "rnn.glsl")).read()
for old, new in (("float rnn_tanh(float x) { return 2.0 / (1.0 + exp(-2.0 * x)) - 1.0; }", "float rnn_tanh(float x) { return tanh(x); }"),
                 ("float rnn_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }", "float rnn_sigmoid(float x) { return 0.5 * tanh(0.5 * x) + 0.5; }")):
    assert g.count(old) == 1, old
    g = g.replace(old, new)
os.makedirs(f"{sys.argv[2]}/tanhb")
open(f"{sys.argv[2]}/tanhb/rnn.glsl", "w").write(g)
PY
# LSTMs of 1, 64 and 256 steps at hidden 64, input 64, one direction (fixed cost and time per step)
/usr/bin/python3 - "$P/seq" <<'PY'
import os, sys
import numpy as np
from onnx import TensorProto as TP, helper as h, save
d = sys.argv[1]; os.makedirs(d, exist_ok=True); rng = np.random.default_rng(3)
for H in (64,):
    for T in (1, 64, 256):
        I, G = 64, 4
        w = rng.uniform(-0.3, 0.3, (1, G * H, I)).astype(np.float32)
        r = rng.uniform(-1.5, 1.5, (1, G * H, H)).astype(np.float32) / np.sqrt(H)
        b = rng.uniform(-0.5, 0.5, (1, 2 * G * H)).astype(np.float32)
        inits = [h.make_tensor(n, TP.FLOAT, a.shape, a.flatten()) for n, a in (("W", w), ("R", r), ("B", b))]
        node = h.make_node("LSTM", ["x", "W", "R", "B"], ["y", "yh", "yc"], hidden_size=H)
        vi = [h.make_tensor_value_info("y", TP.FLOAT, [T, 1, 1, H])] + [
            h.make_tensor_value_info(o, TP.FLOAT, [1, 1, H]) for o in ("yh", "yc")]
        g = h.make_graph([node], "lstm", [h.make_tensor_value_info("x", TP.FLOAT, [T, 1, I])], vi, inits)
        save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), os.path.join(d, f"lstm_t{T}_h{H}.onnx"))
PY
# probe xsh: XPROJ with x's rows loaded two steps ahead into shared memory (one quad a lane) instead of 16 quads a
# lane from memory in the step (scripts/packs/lstm37/probe-xsh.comp, the branch's kernel so changed)
mkdir -p "$P/glsl/xsh" && cp "$WT/scripts/packs/lstm37/probe-xsh.comp" "$P/glsl/xsh/rnn_seq_regs.comp"
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
cp "$WT/scripts/packs/lstm37/${RUN:-run.sh}" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
