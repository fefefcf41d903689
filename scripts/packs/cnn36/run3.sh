#!/usr/bin/env bash
# cnn36's final GPU call (window 3; about 80 s): bash gpu-multi/cnn36/run.sh  ($H: make_pack.sh with RUN=run3.sh)
# The branch (X_QUADS, Y_VEC4) against main's build (base/):
# 0. test_conv_winograd on GLES and desktop GL;
# 1. torchcmp's table for the f32 and QDQ CNNs (TC_ONLY=cnn), this build;
# 2. GPU time per run and per Winograd stage (gltensor-run --profile --bench 100: timer queries, less noisy than
#    the wall means), this build then main's, every net;
# 3. gltensor_model_bench --qdq --gpu-time (int8 / f32), this build and main's;
# 4. replayed runs with read-back, the narrow f32 nets, base / this alternating, two rounds.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn36 pack (run3): $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/cnn36
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
t() { timeout 30 "$@" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -6; }
step "test_conv_winograd: GLES, then desktop GL"
t "$H/bin/test_conv_winograd"
GLTENSOR_API=gl t "$H/bin/test_conv_winograd"
step "torchcmp rows: cnn (this build)"
TC_ONLY=${C36_ONLY:-cnn} TC_W=$W TC_REPS=${C36_REPS:-} TC_GL_UNTIL=40 TC_PROFILE_UNTIL=0 timeout 60 \
  bash "$H/torchcmp.sh" 2>&1 | grep -vE "^\[|^ *$" | grep -v "no time left" | grep -E "^\||^=|rror|rc "
CASES=$(cd "$W/models" 2> /dev/null && ls -- *cnn*.onnx | sed 's/\.onnx$//' | grep -E "${C36_ONLY:-cnn}")
prof() {  # NAME LABEL BIN ENV...
  local name=$1 label=$2 bin=$3; shift 3
  echo "--- $name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C36_PREPS:-100}" --profile 2>&1 |
    grep -E "^GPU time|^conv2d|^matmul  " | sed 's/  */ /g' | tr '\n' ';' | cut -c1-200)"
}
step "GPU ms per run (over ${C36_PREPS:-100} runs) and per stage: this build, main's"
for name in $CASES; do
  [ "$SECONDS" -gt 62 ] && break
  prof "$name" this "$H/bin/gltensor-run" GLTENSOR_NONE=1
  prof "$name" base "$H/base/gltensor-run" LD_LIBRARY_PATH="$BASE_LD"
done
qdq() {  # LABEL BIN ENV...
  local label=$1 bin=$2; shift 2
  echo "--- $label"
  env "$@" timeout 12 "$bin" --qdq --runs "${C36_QREPS:-50}" --gpu-time 2>&1 | grep -E "^\| [0-9]|^\| channels" | head -14
}
step "gltensor_model_bench --qdq --gpu-time: this build, main's"
[ "$SECONDS" -lt 66 ] && qdq this "$H/bin/gltensor_model_bench" GLTENSOR_NONE=1
[ "$SECONDS" -lt 76 ] && qdq base "$H/base/gltensor_model_bench" LD_LIBRARY_PATH="$BASE_LD"
run() {  # NAME LABEL BIN ENV... : one replayed bench line with read-back
  local name=$1 label=$2 bin=$3; shift 3
  echo "$name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C36_REPS:-300}" --read-back --replay \
    2>&1 | grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //; s/ and [0-9]* barriers per run//' | cut -c1-110)"
}
step "replayed, read back: the narrow f32 nets, base / this alternating"
for round in 1 2; do
  for name in f32_cnn_32_64_64_128_56 f32_cnn_32_64_64_128_112; do
    [ "$SECONDS" -gt 84 ] && break
    run "$name" base "$H/base/gltensor-run" LD_LIBRARY_PATH="$BASE_LD"
    run "$name" this "$H/bin/gltensor-run" GLTENSOR_NONE=1
  done
done
step "done"
