#!/usr/bin/env bash
# Makes mel37's GPU pack: P=/work/main/gpu-multi/mel37 bash scripts/packs/mel37/make_pack.sh
# builds.tar.xz: bin/ + lib/ (this worktree's release gltensor-run, test_model_signal_ops, test_model, test_nn_plans and libgltensor.so.0,
# stripped) and main/bin + main/lib (/work/main/build's gltensor-run and library), unpacked by run.sh into /tmp.
# py/ (torchcmp.py, onnx_torch_ext.py, shared/gpu's onnx_torch.py, ort_run.py), run.sh (FINAL=1: run-final.sh),
# COMMIT and main/COMMIT. A few MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/mel37}; MAIN=${MAIN:-/work/main}
SHARED=${SHARED:-/work/shared/gpu}
T=$(mktemp -d); [ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/mel37/result-last.txt"; rm -rf "$P"; mkdir -p "$P/py" "$P/main" "$T/bin" "$T/lib" "$T/main/bin" "$T/main/lib"
cp "$WT/build/tools/gltensor-run" "$WT/build/tests/test_model_signal_ops" "$WT/build/tests/test_model" "$WT/build/tests/test_nn_plans" "$T/bin/"; cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp "$MAIN/build/tools/gltensor-run" "$T/main/bin/"; cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/bin/* "$T"/main/lib/*
tar -C "$T" -cf - bin lib main | xz -T1 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$WT/tools/ort-reference/ort_run.py" "$P/py/"
if [ -n "${FINAL:-}" ]; then cp "$WT/scripts/packs/mel37/run-final.sh" "$P/run.sh"; else cp "$WT/scripts/packs/mel37/run.sh" "$P/run.sh"; fi
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
