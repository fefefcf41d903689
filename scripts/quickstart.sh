#!/usr/bin/env bash
# Fresh Debian 12 machine: installs dependencies (apt; npm for ONNX Runtime and the OCR models),
# builds gltensor, prints the devices it finds, trains the main demo (Fashion-MNIST MLP,
# 3 epochs; a few minutes on llvmpipe) and runs the OCR demo on its own sample image
# (PaddleOCR PP-OCRv4 on gltensor::Model; about two minutes on llvmpipe) -> ocr_out.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
./build/tools/gltensor-info
./build/demos/fashion_mnist --model mlp --epochs 3 --out fashion_mnist_out
./build/demos/ocr --out ocr_out.png
