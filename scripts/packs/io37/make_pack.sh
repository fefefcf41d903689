#!/usr/bin/env bash
# Makes io37's GPU pack (the lead runs it as `ONLY=io37 bash gpu-multi/run-all.sh`):
#   P=/work/main/gpu-multi/io37 bash scripts/packs/io37/make_pack.sh      (RUN=run2.sh: another run script;
#   TESTS="test_pool ...": these test programs of build/tests too)
# bin/ (this worktree's release gltensor-run, gltensor_io_bench, gltensor_model_bench, gltensor_transfer_lab, stripped), lib/ (its
# libgltensor.so.0), main/bin + main/lib (/work/main/build's gltensor-run and libgltensor.so.0), py/ (torchcmp.py,
# onnx_torch_ext.py, shared/gpu's onnx_torch.py), run.sh, COMMIT and main/COMMIT. About 13 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/io37}; MAIN=${MAIN:-/work/main}
SHARED=${SHARED:-/work/shared/gpu}; RUN=${RUN:-run.sh}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/main/bin" "$P/main/lib" "$P/py"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_io_bench" "$WT/build/bench/gltensor_model_bench" \
  "$WT/build/bench/gltensor_transfer_lab" "$P/bin/"
for t in ${TESTS:-}; do cp "$WT/build/tests/$t" "$P/bin/"; done
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp "$MAIN/build/tools/gltensor-run" "$P/main/bin/"; cp -L "$MAIN/build/libgltensor.so.0" "$P/main/lib/"
strip "$P"/bin/* "$P"/lib/* "$P"/main/bin/* "$P"/main/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/io37/$RUN" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
