#!/usr/bin/env bash
# Fresh Debian 12 machine: installs dependencies (apt), builds gltensor and runs the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
./build/tools/gltensor-info
