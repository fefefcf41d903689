#!/usr/bin/env bash
# wino35's GPU pack (issue 21: f32 3x3 CNNs against cuDNN's CUDA graph), one GPU call (at most about 190 s):
#   bash gpu-multi/wino35/run.sh      ($H the pack made by scripts/packs/wino35/make_pack.sh)
# 1. torchcmp's table (scripts/packs/torchcmp/run.sh) for the f32 CNNs and PP-OCRv4 det with this branch's
#    build (Winograd as planned): gltensor plain / replayed, PyTorch eager and its CUDA graph (TF32 off),
#    outputs compared (max |d| within 2e-3 of max |y|), profiles of the rows slower than the graph;
# 2. the same models, plain --read-back, with main's build (base/) and this build's knobs in the same call:
#    GLTENSOR_CONV_WINOGRAD=0 (today's im2col + GEMM), =2 (F(2x2,3x3)), GLTENSOR_CONV=direct (the direct
#    kernel: implicit GEMM without columns), GLTENSOR_MATMUL_KERNEL=warp / tile64 (Winograd's batched GEMMs);
# 3. --profile of the wide net at 56 with main's build (im2col's share: what an implicit GEMM could save)
#    and with this build (the Winograd stages' and the GEMMs' GPU time);
# 4. gltensor_model_bench --qdq (f32 and QDQ rows), this build and main's.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "wino35 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
ONLY=${W35_ONLY:-'^f32_cnn|^det_640'}
W=/tmp/w35
step "torchcmp rows: $ONLY (this build)"
TC_ONLY=$ONLY TC_W=$W TC_REPS=${W35_REPS:-} TC_GL_UNTIL=60 TC_PROFILE_UNTIL=75 TC_PROFILE_LINES=28 timeout 110 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^\[|^ *$" | grep -v "no time left"
run() {  # NAME LABEL ENV... : one plain --read-back bench line
  local name=$1 label=$2; shift 2
  IFS='|' read -r _ model _ args < <(grep "^$name|" "$W/cases.txt")
  # shellcheck disable=SC2086
  echo "$name $label: $(env "$@" timeout 20 "$BIN" "$model" $args --bench "${W35_REPS:-100}" --read-back 2>&1 | grep -E '^bench|rror' |
    cut -c1-150)"
}
step "main's build (base/) and this build's knobs, plain --read-back, 100 runs"
for name in f32_cnn_64_128_128_256_256_56 f32_cnn_64_128_128_256_256_112 f32_cnn_32_64_64_128_56 \
  f32_cnn_32_64_64_128_112 det_640; do
  [ "$SECONDS" -gt 130 ] && break
  BIN=$H/base/gltensor-run run "$name" base LD_LIBRARY_PATH="$H/base/lib:$LD_LIBRARY_PATH"
  BIN=$H/bin/gltensor-run
  run "$name" wino-default GLTENSOR_NONE=1
  run "$name" wino=0 GLTENSOR_CONV_WINOGRAD=0
  run "$name" wino=2 GLTENSOR_CONV_WINOGRAD=2
  [ "$name" = det_640 ] && run "$name" wino=4 GLTENSOR_CONV_WINOGRAD=4 && continue
  run "$name" wino+warp GLTENSOR_MATMUL_KERNEL=warp
  run "$name" wino+tile64 GLTENSOR_MATMUL_KERNEL=tile64
  run "$name" conv=direct GLTENSOR_CONV=direct
done
prof() {  # LABEL BIN ENV...
  local label=$1 bin=$2; shift 2
  IFS='|' read -r _ model _ args < <(grep "^f32_cnn_64_128_128_256_256_56|" "$W/cases.txt")
  echo "--- wide 56 profile: $label"
  # shellcheck disable=SC2086
  env "$@" timeout 20 "$bin" "$model" $args --bench "${W35_REPS:-50}" --profile 2>&1 | grep -vE "^output |^load|^plan|^input" | head -30
}
step "profiles: wide 56"
[ "$SECONDS" -lt 140 ] && prof base "$H/base/gltensor-run" LD_LIBRARY_PATH="$H/base/lib:$LD_LIBRARY_PATH"
[ "$SECONDS" -lt 145 ] && prof wino-default "$H/bin/gltensor-run" GLTENSOR_NONE=1
step "gltensor_model_bench --qdq: this build, then main's"
[ "$SECONDS" -lt 150 ] && timeout 20 "$H/bin/gltensor_model_bench" --qdq --runs "${W35_REPS:-50}" 2>&1 | grep -vE "^ *$" | head -30
[ "$SECONDS" -lt 165 ] && LD_LIBRARY_PATH="$H/base/lib:$LD_LIBRARY_PATH" timeout 20 "$H/base/gltensor_model_bench" \
  --qdq --runs "${W35_REPS:-50}" 2>&1 | grep -vE "^ *$" | head -30
step "done"
