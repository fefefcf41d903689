#!/usr/bin/env bash
# Builds gltensor and runs every test with ctest (Mesa llvmpipe when no GPU is present).
# Env: BUILD_DIR (default build), CMAKE_EXTRA (extra cmake arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${CMAKE_EXTRA:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
