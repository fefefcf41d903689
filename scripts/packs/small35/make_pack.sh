#!/usr/bin/env bash
# Makes small35's GPU pack: P=/work/main/gpu-multi/small35 bash scripts/packs/small35/make_pack.sh
# bin/ (this worktree's release gltensor-run, gltensor_model_bench, gltensor_transfer_lab and the changed tests,
# stripped), lib/
# (libgltensor.so.0), py/ (torchcmp's scripts and shared/gpu's onnx_torch.py), torchcmp.sh, run.sh, COMMIT;
# BASE=DIR (a main build dir): base/ with its gltensor-run and lib/libgltensor.so.0. Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/small35}; SHARED=${SHARED:-/work/shared/gpu}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$WT/build/bench/gltensor_transfer_lab" "$P/bin/"
for t in test_pool test_nn test_plans test_model_attention; do cp "$WT/build/tests/$t" "$P/bin/"; done
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
cp "$WT/scripts/packs/small35/run.sh" "$P/run.sh"
if [ -n "${BASE:-}" ]; then
  mkdir -p "$P/base/lib"
  cp "$BASE/tools/gltensor-run" "$P/base/" && cp -L "$BASE/libgltensor.so.0" "$P/base/lib/"
  strip "$P/base/gltensor-run" "$P/base/lib/libgltensor.so.0"
fi
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
