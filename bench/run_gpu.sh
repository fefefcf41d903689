#!/usr/bin/env bash
# Runs gltensor's benchmarks and PyTorch's reference timings in one go on the same GPU and prints
# the ratio table (bench/compare.py). On the lent GPU machine, from a folder packed by
# bench/pack_gpu.sh: BIN holds the binaries, LIB extra shared libraries.
# Usage: bench/run_gpu.sh OUTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-bench-out}
mkdir -p "$out"
BIN=${BIN:-$here/../build/bench}
"$BIN/gltensor_bench" --benchmark_format=json --benchmark_out="$out/gltensor.json" --benchmark_min_time=0.3 \
  > "$out/gltensor.txt" 2>&1 || { tail -40 "$out/gltensor.txt"; exit 1; }
python3 "${TORCH_REF:-$here/../../shared/gpu/torch_reference.py}" --json "$out/torch.json" > "$out/torch.txt"
device=$(python3 -c 'import torch; print(torch.cuda.get_device_name())' 2>/dev/null || echo unknown)
python3 "$here/compare.py" "$out/gltensor.json" "$out/torch.json" --device "$device" --command "bench/run_gpu.sh" | tee "$out/table.md"
