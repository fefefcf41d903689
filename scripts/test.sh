#!/usr/bin/env bash
# Installs what is missing (.ci/install-deps: silent when everything is there), builds gltensor
# with its tests, tools, demos and benchmarks, and runs every test with ctest (Mesa llvmpipe when
# no GPU is present). Env: BUILD_DIR (default build), CMAKE_EXTRA (extra cmake arguments),
# CTEST_EXTRA (extra ctest arguments, e.g. -LE slow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${CMAKE_EXTRA:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${CTEST_EXTRA:-}
