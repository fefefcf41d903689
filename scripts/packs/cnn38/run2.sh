#!/usr/bin/env bash
# cnn38's GPU call, window 2 (about 60 s): bash gpu-multi/cnn38/run.sh  ($H: make_pack.sh with RUN=run2.sh)
# The planner's choice (the fused stage for the narrow CNN's layers at 56, 16 x 16 tiles, prefetched, constant
# loops unrolled) against main's build (base/) and knobs:
# 0. test_conv_winograd on GLES and desktop GL;
# 1. GPU time per run (gltensor-run --profile --bench 100): the narrow f32 net at 56: base, three stages, planned,
#    blockings OxPxCxF, the lab shaders (glsl-nounroll: no optionNV; glsl-unrollall: optionNV in every stage);
#    narrow 112 and wide 56 (the rule's edges); the QDQ nets' three stages against main's kernel file (glsl-main);
# 2. torchcmp's rows (narrow f32 / QDQ at 56, cls) as planned;
# 3. replayed runs with read-back, base / planned alternating, two rounds.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn38 pack (run2): $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/cnn38
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
F=GLTENSOR_CONV_WINOGRAD_FUSED
t() { timeout 40 "$@" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -6; }
step "test_conv_winograd: GLES, then desktop GL"
t "$H/bin/test_conv_winograd"
GLTENSOR_API=gl t "$H/bin/test_conv_winograd"
rm -rf "$W"; mkdir -p "$W"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
prof() {  # NAME LABEL BIN ENV...
  local name=$1 label=$2 bin=$3; shift 3
  echo "--- $name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_PREPS:-100}" --profile 2>&1 |
    grep -E "^GPU time|^conv2d|^matmul  |rror" | sed 's/  */ /g' | tr '\n' ';' | cut -c1-220)"
}
B=$H/base/gltensor-run; X=$H/bin/gltensor-run
step "GPU ms per run (over ${C38_PREPS:-100} runs) and per op"
N=f32_cnn_32_64_64_128_56
prof $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
prof $N three "$X" $F=0
prof $N planned "$X" GLTENSOR_NONE=1
for b in 16x16x8x0 8x16x8x1 16x8x8x1 32x8x8x1 16x16x4x1; do prof $N "$b" "$X" $F=$b; done
prof $N "planned, glsl-nounroll" "$X" GLTENSOR_GLSL_DIR="$H/glsl-nounroll"
prof $N "three, glsl-unrollall" "$X" $F=0 GLTENSOR_GLSL_DIR="$H/glsl-unrollall"
for N in f32_cnn_32_64_64_128_112 f32_cnn_64_128_128_256_256_56; do
  prof $N three "$X" $F=0
  prof $N planned "$X" GLTENSOR_NONE=1
  prof $N fused "$X" $F=1
done
for N in qdq_cnn_32_64_64_128_56 qdq_cnn_32_64_64_128_112; do
  [ "$SECONDS" -gt 50 ] && break
  prof $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
  prof $N planned "$X" GLTENSOR_NONE=1
  prof $N "planned, glsl-main" "$X" GLTENSOR_GLSL_DIR="$H/glsl-main"
  prof $N "planned, glsl-unrollall" "$X" GLTENSOR_GLSL_DIR="$H/glsl-unrollall"
done
step "torchcmp rows (planned)"
TC_ONLY=${C38_ONLY:-f32_cnn_32_64_64_128_56|qdq_cnn_32_64_64_128_56|cls} TC_W=$W.tc TC_OCR_DIR=$H/ocr \
  TC_REPS=${C38_REPS:-} TC_GL_UNTIL=30 TC_PROFILE_UNTIL=0 timeout 40 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^\[|^ *$" | grep -v "no time left" | grep -E "^\||rror|rc "
run() {  # NAME LABEL BIN ENV... : one replayed bench line with read-back
  local name=$1 label=$2 bin=$3; shift 3
  echo "$name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_RREPS:-300}" --read-back --replay \
    2>&1 | grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //; s/ and [0-9]* barriers per run//' | cut -c1-120)"
}
step "replayed, read back: base / planned alternating, two rounds"
for round in 1 2; do
  for N in f32_cnn_32_64_64_128_56 qdq_cnn_32_64_64_128_56; do
    [ "$SECONDS" -gt 85 ] && break
    run $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
    run $N planned "$X" GLTENSOR_NONE=1
  done
done
step "done"
