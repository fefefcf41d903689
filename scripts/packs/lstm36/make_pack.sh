#!/usr/bin/env bash
# Makes lstm36's GPU pack: P=/work/main/gpu-multi/lstm36 bash scripts/packs/lstm36/make_pack.sh
# bin/ (this worktree's gltensor-run, gltensor_model_bench, test_rnn, stripped), lib/ (its libgltensor.so.0),
# libs.tar.xz (libmain/: main's, MAIN_LIB, default /work/main/build's), glsl/ (sabotaged copies of
# rnn_seq_regs.comp for GLTENSOR_GLSL_DIR), py/ (torchcmp's scripts), torchcmp.sh, run.sh, COMMIT.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/lstm36}; SHARED=${SHARED:-/work/shared/gpu}
MAIN_LIB=${MAIN_LIB:-/work/main/build/libgltensor.so.0}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "/tmp/lstm36-result-prev-$(date +%H%M%S).txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py" "$P/glsl/shuffle" "$P/glsl/nowait" "$P/glsl/nombar" "$P/glsl/noy" "$P/glsl/nox" "$P/glsl/stall"; T=$(mktemp -d); mkdir -p "$T/libmain"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$WT/build/tests/test_rnn" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp -L "$MAIN_LIB" "$T/libmain/libgltensor.so.0"
strip "$P"/bin/* "$P"/lib/* "$T"/lib*/*
tar -C "$T" -cf - libmain | xz -T1 -6 > "$P/libs.tar.xz"; rm -rf "$T"
# sabotages of what only a GPU runs: the subgroup sums (llvmpipe has no shuffles) and the GRID form's wait
python3 - "$WT/glsl/nn/rnn_seq_regs.comp" "$P/glsl" <<'PY'
import sys
s = open(sys.argv[1]).read()
for d, old, new in (("shuffle", "for (uint o = 1u; o < uint(KS); o <<= 1u)", "for (uint o = 2u; o < uint(KS); o <<= 1u)"),
                    ("nowait", "atomicAdd(cnt[db], 0u) < target", "atomicAdd(cnt[db], 0u) < 0u")):
    assert old in s
    open(f"{sys.argv[2]}/{d}/rnn_seq_regs.comp", "w").write(s.replace(old, new, 1))
# probes for where a step's time goes (timing only; noy and nox give wrong outputs): barrier() without
# memoryBarrierShared(), no Y stores, no x W^T loads
probes = (("nombar", "void main() {", "#define workgroup_sync() barrier()\nvoid main() {"),
          ("noy", "store0(y, CT0(live ? h : 0.0));", "if (u_T == 0u) store0(y, CT0(live ? h : 0.0));"),
          ("nox", "vec4 x_at(uint d, uint b, uint j, uint t) {", "vec4 x_at(uint d, uint b, uint j, uint t) {\n  if (u_T > 0u) return vec4(0.01);"))
for d, old, new in probes:
    assert old in s
    open(f"{sys.argv[2]}/{d}/rnn_seq_regs.comp", "w").write(s.replace(old, new, 1))
# every GRID poll gives up at once (a bound of 0 polls): ErrorFlags::kStall, the host's LimitError
assert s.count("(1u << 20)") >= 2
open(f"{sys.argv[2]}/stall/rnn_seq_regs.comp", "w").write(s.replace("(1u << 20)", "0u"))
PY
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
cp "$WT/scripts/packs/lstm36/${RUN:-run.sh}" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
