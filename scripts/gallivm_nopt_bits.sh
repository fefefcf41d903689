#!/usr/bin/env bash
# Whether Mesa's GALLIVM_PERF=nopt changes any output bit (scripts/gallivm_nopt_bits.cpp: matmul,
# softmax, gelu, layer_norm, conv2d, attention, and PP-OCRv4 det and v2.0 cls where the models are
# there), each run cold (Mesa's shader cache off, an empty program cache).
# Usage: scripts/gallivm_nopt_bits.sh [BUILD_DIR]   (exit 0: identical)
set -eu
B=${1:-build}
W=$(mktemp -d)
g++ -std=c++20 -O1 -Iinclude scripts/gallivm_nopt_bits.cpp -o "$W/nopt_bits" -L"$B" -lgltensor -Wl,-rpath,"$PWD/$B"
M=${GLTENSOR_MODEL_CACHE:-.cache}/models/ocr
models=()
[ -f "$M/ch_PP-OCRv4_det_infer.onnx" ] && models+=("$M/ch_PP-OCRv4_det_infer.onnx" 1,3,96,128)
[ -f "$M/ch_ppocr_mobile_v2.0_cls_infer.onnx" ] && models+=("$M/ch_ppocr_mobile_v2.0_cls_infer.onnx" 2,3,48,192)
for p in opt nopt; do
  perf=()
  [ $p = nopt ] && perf=(GALLIVM_PERF=nopt)
  env -u GALLIVM_PERF "${perf[@]}" MESA_SHADER_CACHE_DISABLE=true GLTENSOR_CACHE_DIR="$W/cache-$p" \
    /usr/bin/time -f "$p: %U s user, %e s wall" "$W/nopt_bits" "$W/out.$p" "${models[@]}"
done
cmp "$W/out.opt" "$W/out.nopt" && echo "identical: $(wc -c <"$W/out.opt") bytes"
rm -rf "$W"
