#!/usr/bin/env bash
# Fresh Debian 12 machine: installs the dependencies (apt), builds the library, gltensor-info and
# the demos (not the tests, benchmarks or other tools: scripts/test.sh builds those), prints the
# devices it finds and runs each demo on its default inputs.
# Adding a demo: its CMake target to `demos`, and a `step` that runs it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
demos=(fashion_mnist ocr)
step() { echo; echo "== quickstart: $*"; }

step "installing dependencies (.ci/install-deps)"
bash .ci/install-deps
step "building gltensor, gltensor-info and the demos (${demos[*]}) in build/ with $(nproc) jobs"
t0=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target gltensor gltensor-info "${demos[@]}"
echo "built in $((SECONDS - t0)) s"

step "devices (gltensor-info)"
./build/tools/gltensor-info

step "Fashion-MNIST: MLP 784-256-128-10, 3 epochs (outputs in a new folder under fashion_mnist_out/)"
./build/demos/fashion_mnist --model mlp --epochs 3

step "OCR: PaddleOCR PP-OCRv4 (detection + recognition) on gltensor::Model, on its own sample image -> ocr_out.png"
./build/demos/ocr --out ocr_out.png
