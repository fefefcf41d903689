#!/usr/bin/env bash
# Makes suite18's GPU pack: P=/work/main/gpu-multi/suite18 [B=build] GLTENSOR_MODEL_CACHE=/work/main/.cache
# bash scripts/packs/suite18/make_pack.sh
# bin/ (this worktree's release test programs whose tests changed, and those of the planners that now share
# runtime/int_math.hpp's ceil_div; stripped, xz), lib/ (its libgltensor.so.0, xz), models/ (the OCR models, xz),
# run.sh, COMMIT. No kernel changed on the branch: the changed tests (test_ocr_models, test_attention's
# FiniteDifferences, test_quant's GridPastOneDispatch under a lowered dispatch limit) on GLES and desktop GL.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite18}; B=$WT/${B:-build}
M=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite18/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/models/models/ocr"
for t in test_ocr_models test_attention test_quant test_plans test_nn_plans test_kv_cache test_model_signal_ops \
  test_model_se test_fused_mlp; do
  strip -o "$P/bin/$t" "$B/tests/$t"
done
strip -o "$P/lib/libgltensor.so.0" "$B/libgltensor.so.0"
cp "$M"/*.onnx "$M"/ppocr_keys_v1.txt "$P/models/models/ocr/"
xz -T2 -6 "$P"/bin/* "$P"/lib/* "$P"/models/models/ocr/*
cp "$WT/scripts/packs/suite18/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
