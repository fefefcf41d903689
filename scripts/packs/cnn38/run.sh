#!/usr/bin/env bash
# cnn38's GPU call (window 1; about 100 s): bash gpu-multi/cnn38/run.sh  ($H: the pack of make_pack.sh)
# The fused Winograd stage (GLTENSOR_CONV_WINOGRAD_FUSED, one dispatch a conv) against the three stages and
# main's build (base/):
# 0. test_conv_winograd on GLES and desktop GL (the fused tests force it);
# 1. torchcmp's table (TC_ONLY='cnn|cls') with the fused stage forced (GLTENSOR_CONV_WINOGRAD_FUSED=1);
# 2. GPU time per run and per op (gltensor-run --profile --bench N): base, this build's three stages, fused at
#    the default blocking, every CNN; blockings OxPxC on the f32 nets;
# 3. replayed runs with read-back, base / three stages / fused alternating, two rounds, the narrow nets at 56;
# 4. PyTorch's kernels (torch.profiler over CUDA graph replays) for the narrow nets at 56 and 112.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn38 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/cnn38
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
FUSED=GLTENSOR_CONV_WINOGRAD_FUSED
t() { timeout 40 "$@" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -6; }
step "test_conv_winograd: GLES, then desktop GL"
t "$H/bin/test_conv_winograd"
GLTENSOR_API=gl t "$H/bin/test_conv_winograd"
step "torchcmp rows: cnn|cls, this build with $FUSED=1"
env $FUSED=1 TC_ONLY=${C38_ONLY:-cnn|cls} TC_W=$W TC_OCR_DIR=$H/ocr TC_REPS=${C38_REPS:-} TC_GL_UNTIL=50 \
  TC_PROFILE_UNTIL=0 timeout 70 bash "$H/torchcmp.sh" 2>&1 | grep -vE "^\[|^ *$" | grep -v "no time left" |
  grep -E "^\||^=|rror|rc "
CASES=$(cd "$W/models" 2> /dev/null && ls -- *cnn*.onnx | sed 's/\.onnx$//' | grep -E "${C38_NETS:-cnn}")
prof() {  # NAME LABEL BIN ENV...
  local name=$1 label=$2 bin=$3; shift 3
  echo "--- $name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_PREPS:-100}" --profile 2>&1 |
    grep -E "^GPU time|^conv2d|^matmul  |rror" | sed 's/  */ /g' | tr '\n' ';' | cut -c1-220)"
}
step "GPU ms per run (over ${C38_PREPS:-100} runs) and per op: main's, this build's three stages, fused"
for name in $CASES; do
  [ "$SECONDS" -gt 75 ] && break
  prof "$name" base "$H/base/gltensor-run" LD_LIBRARY_PATH="$BASE_LD"
  prof "$name" three "$H/bin/gltensor-run" $FUSED=0
  prof "$name" fused "$H/bin/gltensor-run" $FUSED=1
done
step "GPU ms per run, fused blockings OxPxC (default 16x8x8)"
for name in f32_cnn_32_64_64_128_56 f32_cnn_32_64_64_128_112 f32_cnn_64_128_128_256_256_56; do
  for b in ${C38_BLOCKS:-8x8x8 8x4x8 16x16x8 32x8x8 8x16x8 16x4x8 16x8x4 8x8x16}; do
    [ "$SECONDS" -gt 100 ] && break
    prof "$name" "$b" "$H/bin/gltensor-run" $FUSED="$b"
  done
done
run() {  # NAME LABEL BIN ENV... : one replayed bench line with read-back
  local name=$1 label=$2 bin=$3; shift 3
  echo "$name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_RREPS:-300}" --read-back --replay \
    2>&1 | grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //; s/ and [0-9]* barriers per run//' | cut -c1-120)"
}
step "replayed, read back: base / three stages / fused alternating, two rounds"
for round in 1 2; do
  for name in f32_cnn_32_64_64_128_56 qdq_cnn_32_64_64_128_56; do
    [ "$SECONDS" -gt 118 ] && break
    run "$name" base "$H/base/gltensor-run" LD_LIBRARY_PATH="$BASE_LD"
    run "$name" three "$H/bin/gltensor-run" $FUSED=0
    run "$name" fused "$H/bin/gltensor-run" $FUSED=1
  done
done
step "PyTorch's kernels (torch.profiler, CUDA graph replays)"
[ "$SECONDS" -lt 125 ] && timeout 20 python3 "$H/py/torchprof.py" "$W/models" f32_cnn_32_64_64_128_56 \
  qdq_cnn_32_64_64_128_56 f32_cnn_32_64_64_128_112 --reps 200 2>&1 | grep -v Warning | head -60
step "done"
