#!/usr/bin/env bash
# Makes cnn36's GPU pack (the lead runs it as `bash gpu-multi/cnn36/run.sh`):
#   P=/work/main/gpu-multi/cnn36 bash scripts/packs/cnn36/make_pack.sh
# bin/ (this worktree's release gltensor-run and gltensor_model_bench, stripped), lib/ (its libgltensor.so.0),
# base/ (main's build: BASE=/work/main/build's gltensor-run, gltensor_model_bench and lib/libgltensor.so.0,
# stripped), py/ (torchcmp.py, onnx_torch_ext.py, shared/gpu's onnx_torch.py), torchcmp.sh (torchcmp's run.sh),
# run.sh, COMMIT. No OCR model (the nets are written by gltensor_model_bench --save-models there). Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/cnn36}; BASE=${BASE:-/work/main/build}
SHARED=${SHARED:-/work/shared/gpu}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py" "$P/base/lib"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp "$BASE/tools/gltensor-run" "$BASE/bench/gltensor_model_bench" "$P/base/"
cp -L "$BASE/libgltensor.so.0" "$P/base/lib/"
[ -n "${TESTS:-}" ] && for t in $TESTS; do cp "$WT/build/tests/$t" "$P/bin/"; done
strip "$P"/bin/* "$P"/lib/* "$P"/base/gltensor-run "$P"/base/gltensor_model_bench "$P"/base/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
cp "$WT/scripts/packs/cnn36/${RUN:-run.sh}" "$P/run.sh"
# run2.sh's lab shaders (window 2): conv_winograd.comp with quant_div's exact division computed always, then
# selected (glsl-alt1), or left out (glsl-alt2: inexact at ties, a diagnostic)
mkdir -p "$P/glsl-alt1" "$P/glsl-alt2"
sed 's|return abs(fract(t) - 0.5) < 1e-4 ? div_rn(v, s) : t;|float e = div_rn(v, s);\n  return abs(fract(t) - 0.5) < 1e-4 ? e : t;|' \
  "$WT/glsl/nn/conv_winograd.comp" > "$P/glsl-alt1/conv_winograd.comp"
sed 's|return abs(fract(t) - 0.5) < 1e-4 ? div_rn(v, s) : t;|return t;|' "$WT/glsl/nn/conv_winograd.comp" \
  > "$P/glsl-alt2/conv_winograd.comp"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
echo "base: $BASE ($(git -C "$BASE/.." log -1 --format=%h 2> /dev/null), libgltensor built $(date -r "$BASE/libgltensor.so.0" -u +%H:%M))" >> "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
