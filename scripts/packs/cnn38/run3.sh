#!/usr/bin/env bash
# cnn38's GPU call, window 3 (the final A/B; about 75 s): bash gpu-multi/cnn38/run.sh  ($H: make_pack.sh with
# RUN=run3.sh)
# 0. test_conv_winograd on GLES and desktop GL;
# 1. torchcmp's table of the CNNs at 56 and PP-OCR's cls (TC_ONLY='_56|cls'), this build as planned;
# 2. GPU time per run and per op (gltensor-run --profile --bench 100), main's build and this one as planned, every
#    CNN; the narrow f32 net at 56 with the knobs in C38_KNOBS too (default: no channel split, 4 parts, 16 x 16 blocks
#    for every layer, the three stages);
# 3. replayed runs with read-back, base / planned alternating, then the knobs, two rounds: the narrow nets at 56,
#    the wide f32 at 56.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn38 pack (run3): $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/cnn38
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
F=GLTENSOR_CONV_WINOGRAD_FUSED
t() { timeout 40 "$@" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -6; }
step "test_conv_winograd: GLES, then desktop GL"
t "$H/bin/test_conv_winograd"
GLTENSOR_API=gl t "$H/bin/test_conv_winograd"
step "torchcmp rows (planned)"
TC_ONLY=${C38_ONLY:-_56|cls} TC_W=$W TC_OCR_DIR=$H/ocr TC_REPS=${C38_REPS:-} TC_GL_UNTIL=45 TC_PROFILE_UNTIL=0 \
  timeout 45 bash "$H/torchcmp.sh" 2>&1 | grep -vE "^\[|^ *$" | grep -v "no time left" | grep -E "^\||rror|rc "
prof() {  # NAME LABEL BIN ENV...
  local name=$1 label=$2 bin=$3; shift 3
  echo "--- $name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_PREPS:-100}" --profile 2>&1 |
    grep -E "^GPU time|^conv2d|^matmul  |rror" | sed 's/  */ /g' | tr '\n' ';' | cut -c1-220)"
}
B=$H/base/gltensor-run; X=$H/bin/gltensor-run
step "GPU ms per run (over ${C38_PREPS:-100} runs) and per op: base / planned"
for N in $(cd "$W/models" 2> /dev/null && ls -- *cnn*.onnx | sed 's/\.onnx$//'); do
  [ "$SECONDS" -gt 62 ] && break
  prof "$N" base "$B" LD_LIBRARY_PATH="$BASE_LD"
  prof "$N" planned "$X" GLTENSOR_NONE=1
done
KNOBS=${C38_KNOBS:-GLTENSOR_CONV_WINOGRAD_SPLIT=1 GLTENSOR_CONV_WINOGRAD_SPLIT=4 $F=16x16x8x1 $F=0}
for k in $KNOBS; do prof f32_cnn_32_64_64_128_56 "$k" "$X" "$k"; done
run() {  # NAME LABEL BIN ENV... : one replayed bench line with read-back
  local name=$1 label=$2 bin=$3; shift 3
  echo "$name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_RREPS:-300}" --read-back --replay \
    2>&1 | grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //; s/ and [0-9]* barriers per run//' | cut -c1-120)"
}
step "replayed, read back: base / planned alternating, two rounds"
for round in 1 2; do
  for N in f32_cnn_32_64_64_128_56 qdq_cnn_32_64_64_128_56 f32_cnn_64_128_128_256_256_56; do
    [ "$SECONDS" -gt 85 ] && break
    run $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
    run $N planned "$X" GLTENSOR_NONE=1
  done
  for k in $KNOBS; do
    [ "$SECONDS" -gt 85 ] && break
    run f32_cnn_32_64_64_128_56 "$k" "$X" "$k"
  done
done
step "done"
