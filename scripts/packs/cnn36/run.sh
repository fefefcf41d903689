#!/usr/bin/env bash
# cnn36's GPU pack (issue 21: the narrow f32 CNNs under PyTorch's CUDA graph; QDQ int8 faster than f32), one GPU
# call (about 120 s):   bash gpu-multi/cnn36/run.sh     ($H: the pack made by scripts/packs/cnn36/make_pack.sh)
# 0. test_conv_winograd (where the pack holds it) on GLES and desktop GL; test_model_replay with every replayed output
#    host-visible;
# 1. torchcmp's table (scripts/packs/torchcmp/run.sh, TC_ONLY=cnn: the f32 and QDQ nets of gltensor_model_bench
#    --qdq) with this branch's build: gltensor plain / replayed (--read-back), PyTorch eager and its CUDA graph;
# 2. replayed runs with read-back, main's build (base/) against this build, and this build with the replayed
#    outputs in host-visible buffers (GLTENSOR_HOST_OUT_BYTES=67108864: no device-to-host copy; default 256 KiB);
# 3. GPU time per stage (gltensor-run --profile: the op rows "conv2d winograd input / output" and matmul), this
#    build and main's;
# 4. the Winograd GEMMs' kernel forced (GLTENSOR_MATMUL_KERNEL), compute only (no read-back);
# 5. gltensor_model_bench --qdq --gpu-time (int8 / f32), this build and main's; per-node GPU ms (--qdq-loads 1).
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn36 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/cnn36
REPS=${C36_REPS:-200}
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
if [ -x "$H/bin/test_conv_winograd" ]; then
  step "test_conv_winograd: GLES, then desktop GL"
  timeout 40 "$H/bin/test_conv_winograd" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -8
  GLTENSOR_API=gl timeout 40 "$H/bin/test_conv_winograd" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -8
fi
if [ -x "$H/bin/test_model_replay" ]; then
  step "test_model_replay with GLTENSOR_HOST_OUT_BYTES=67108864 (every replayed output host-visible)"
  GLTENSOR_HOST_OUT_BYTES=67108864 timeout 30 "$H/bin/test_model_replay" --gtest_brief=1 2>&1 |
    grep -E "FAIL|PASSED|rror" | head -8
fi
step "torchcmp rows: cnn (this build)"
TC_ONLY=${C36_ONLY:-cnn} TC_W=$W TC_REPS=${C36_REPS:-} TC_GL_UNTIL=40 TC_PROFILE_UNTIL=0 timeout 75 \
  bash "$H/torchcmp.sh" 2>&1 | grep -vE "^\[|^ *$" | grep -v "no time left"
# the nets as gltensor_model_bench --save-models wrote them (torchcmp.sh's first step), random inputs of their shapes
CASES=$(cd "$W/models" 2> /dev/null && ls -- *cnn*.onnx | sed 's/\.onnx$//' | grep -E "${C36_ONLY:-cnn}")
run() {  # NAME LABEL BIN ARGS(--read-back --replay or "") ENV... : one bench line
  local name=$1 label=$2 bin=$3 extra=$4; shift 4
  # shellcheck disable=SC2086
  echo "$name $label: $(env "$@" timeout 20 "$bin" "$W/models/$name.onnx" --bench "$REPS" $extra 2>&1 |
    grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //' | cut -c1-150)"
}
step "replayed, read back: main's build (base), this build, this build with GLTENSOR_HOST_OUT_BYTES=67108864"
for name in $CASES; do
  [ "$SECONDS" -gt 80 ] && break
  run "$name" base "$H/base/gltensor-run" "--read-back --replay" LD_LIBRARY_PATH="$BASE_LD"
  run "$name" this "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_NONE=1
  run "$name" host-out "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_HOST_OUT_BYTES=67108864
done
prof() {  # NAME LABEL BIN ENV...
  local name=$1 label=$2 bin=$3; shift 3
  echo "--- $name profile: $label"
  env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C36_PREPS:-50}" --profile 2>&1 | grep -E "^GPU time|^conv2d|^matmul|\.comp " |
    cut -c1-100
}
step "GPU time per stage: this build, main's"
for name in $CASES; do
  [ "$SECONDS" -gt 95 ] && break
  case $name in *_32_64_64_128_*) ;; *) continue ;; esac
  prof "$name" this "$H/bin/gltensor-run" GLTENSOR_NONE=1
  prof "$name" base "$H/base/gltensor-run" LD_LIBRARY_PATH="$BASE_LD"
done
step "the Winograd GEMMs' kernel forced, compute only (this build)"
for name in f32_cnn_32_64_64_128_56 f32_cnn_32_64_64_128_112; do
  for k in "" vec4 tile128 reg warp; do
    [ "$SECONDS" -gt 105 ] && break
    run "$name" "kernel=${k:-planned}" "$H/bin/gltensor-run" "" GLTENSOR_MATMUL_KERNEL=$k
  done
done
qdq() {  # LABEL BIN ENV...
  local label=$1 bin=$2; shift 2
  echo "--- $label"
  env "$@" timeout 15 "$bin" --qdq --runs "${C36_QREPS:-50}" --gpu-time 2>&1 | grep -E "^\| [0-9]|^\| channels" | head -14
}
step "gltensor_model_bench --qdq --gpu-time: this build, main's build"
[ "$SECONDS" -lt 112 ] && qdq this "$H/bin/gltensor_model_bench" GLTENSOR_NONE=1
[ "$SECONDS" -lt 124 ] && qdq base "$H/base/gltensor_model_bench" LD_LIBRARY_PATH="$BASE_LD"
step "per-node GPU ms, the narrow net at 112 (--qdq-loads 1, this build)"
[ "$SECONDS" -lt 130 ] && timeout 10 "$H/bin/gltensor_model_bench" --qdq-loads 1 --qdq-net narrow --qdq-size 112 \
  --runs 20 2>&1 | grep -E "^(per |[0-9]+ (f32|int8):)" | cut -c1-220 | head -12
step "done"
