#!/usr/bin/env bash
# Fresh Debian 12 machine: installs the dependencies (apt), fetches the OCR demo's models (npm,
# scripts/fetch-models.sh ocr; not ONNX Runtime, which only the tests use), builds the library,
# gltensor-info and the demos (not the tests, benchmarks or other tools: scripts/test.sh builds
# those), prints the devices it finds and runs each demo on its default inputs. Where the models
# cannot be fetched it says why and what to do, runs everything else and skips the OCR demo
# (saying so again at the end; the exit status is still 0 when everything else ran).
# Adding a demo: its CMake target to `demos`, and a `step` that runs it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
demos=(fashion_mnist chargpt ocr)
step() { echo; echo "== quickstart: $*"; }

step "installing dependencies (.ci/install-deps)"
bash .ci/install-deps
step "fetching the OCR demo's models (scripts/fetch-models.sh ocr)"
ocr_skipped=""
if ! bash scripts/fetch-models.sh ocr; then
  ocr_skipped="its models could not be fetched (scripts/fetch-models.sh's message above says why and what to do;"
  ocr_skipped+=" then run 'bash scripts/fetch-models.sh ocr && ./build/demos/ocr')"
  echo "quickstart: going on without the OCR demo"
fi
step "building gltensor, gltensor-info and the demos (${demos[*]}) in build/ with $(nproc) jobs"
t0=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target gltensor gltensor-info "${demos[@]}"
echo "built in $((SECONDS - t0)) s"

step "devices (gltensor-info)"
./build/tools/gltensor-info

step "Fashion-MNIST: MLP 784-256-128-10, 3 epochs (outputs in a new folder under fashion_mnist_out/)"
./build/demos/fashion_mnist --model mlp --epochs 3

step "chargpt: a 2-layer GPT trained byte by byte on the fortune cookie files, small config (outputs under chargpt_out/)"
./build/demos/chargpt --config small

if [ -z "$ocr_skipped" ]; then
  step "OCR: PaddleOCR PP-OCRv4 (detection + recognition) on gltensor::Model, on its own sample image -> ocr_out.png"
  ./build/demos/ocr --out ocr_out.png
else
  step "OCR: skipped: $ocr_skipped"
fi
