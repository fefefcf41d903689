#!/usr/bin/env bash
# Makes host38's GPU pack (issue 21: the host's wait and a run's fixed costs), run by the lead as
# `bash gpu-multi/host38/run.sh`:   P=/work/main/gpu-multi/host38 bash scripts/packs/host38/make_pack.sh
# bin/ + lib/: this worktree's release gltensor-run, gltensor_io_bench, gltensor_model_bench, the test programs of what
# the branch changes (where built) and libgltensor.so.0
# (stripped); main/bin + main/lib: main's build (MAIN=/work/main/build) of gltensor-run and the library, for the
# A/B in one call; py/: torchcmp.py, onnx_torch_ext.py, shared/gpu's onnx_torch.py; run.sh; torchcmp.sh (torchcmp's
# run.sh, the table without PP-OCR's rows: no OCR models in this pack); COMMIT files.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/host38}; MAIN=${MAIN:-/work/main/build}
SHARED=${SHARED:-/work/shared/gpu}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py" "$P/main/bin" "$P/main/lib"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_io_bench" "$WT/build/bench/gltensor_model_bench" "$P/bin/"
for t in test_model_replay test_model_run test_model_host_io test_recording test_pool; do
  [ -e "$WT/build/tests/$t" ] && cp "$WT/build/tests/$t" "$P/bin/"
done
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp "$MAIN/tools/gltensor-run" "$P/main/bin/"
cp -L "$MAIN/libgltensor.so.0" "$P/main/lib/"
strip "$P"/bin/* "$P"/lib/* "$P"/main/bin/* "$P"/main/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/host38/run.sh" "$P/run.sh"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN/.." log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
