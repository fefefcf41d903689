#!/usr/bin/env bash
# Fresh Debian 12 machine: installs dependencies (apt), builds gltensor, prints the devices it
# finds and trains the main demo (Fashion-MNIST MLP, 3 epochs; a few minutes on llvmpipe).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
./build/tools/gltensor-info
./build/demos/fashion_mnist --model mlp --epochs 3 --out fashion_mnist_out
