#!/usr/bin/env bash
# Makes cnn38's GPU pack (the lead runs it as `bash gpu-multi/cnn38/run.sh`):
#   P=/work/main/gpu-multi/cnn38 bash scripts/packs/cnn38/make_pack.sh
# bin/ (this worktree's release gltensor-run, gltensor_model_bench and the tests in TESTS, default
# test_conv_winograd, stripped), lib/ (its libgltensor.so.0), base/ (main's build: BASE=/work/main/build's
# gltensor-run, gltensor_model_bench and lib/libgltensor.so.0, stripped), py/ (torchcmp.py, onnx_torch_ext.py,
# shared/gpu's onnx_torch.py, torchprof.py), ocr/ (PP-OCR's direction classifier only, for torchcmp's cls row),
# torchcmp.sh (torchcmp's run.sh), run.sh (RUN: this folder's script), COMMIT. The nets are written by
# gltensor_model_bench --save-models there (torchcmp.sh's first step). Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/cnn38}; BASE=${BASE:-/work/main/build}
SHARED=${SHARED:-/work/shared/gpu}; MC=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py" "$P/base/lib" "$P/ocr"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp "$BASE/tools/gltensor-run" "$BASE/bench/gltensor_model_bench" "$P/base/"
cp -L "$BASE/libgltensor.so.0" "$P/base/lib/"
for t in ${TESTS:-test_conv_winograd}; do cp "$WT/build/tests/$t" "$P/bin/"; done
strip "$P"/bin/* "$P"/lib/* "$P"/base/gltensor-run "$P"/base/gltensor_model_bench "$P"/base/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" \
  "$WT/scripts/packs/cnn38/torchprof.py" "$P/py/"
cp "$MC/models/ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$P/ocr/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
cp "$WT/scripts/packs/cnn38/${RUN:-run.sh}" "$P/run.sh"
# run2.sh's lab shaders: conv_winograd.comp without NVIDIA's unroll pragma (glsl-nounroll), with it in every stage
# (glsl-unrollall), and main's file (glsl-main: its three stages as main builds them)
mkdir -p "$P/glsl-nounroll" "$P/glsl-unrollall" "$P/glsl-main"
sed '/^#pragma optionNV(unroll all)$/d' "$WT/glsl/nn/conv_winograd.comp" > "$P/glsl-nounroll/conv_winograd.comp"
awk '/^#ifdef WG_FUSED$/ && !done { getline l; if (l ~ /pragma optionNV/) { print l; getline; done = 1; next } print; print l; next } { print }' \
  "$WT/glsl/nn/conv_winograd.comp" > "$P/glsl-unrollall/conv_winograd.comp"
cp "$BASE/../glsl/nn/conv_winograd.comp" "$P/glsl-main/"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
echo "base: $BASE ($(git -C "$BASE/.." log -1 --format=%h 2> /dev/null), libgltensor built $(date -r "$BASE/libgltensor.so.0" -u +%H:%M))" >> "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
