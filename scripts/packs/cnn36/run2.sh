#!/usr/bin/env bash
# cnn36's second GPU call (window 2; about 130 s): bash gpu-multi/cnn36/run.sh  ($H: make_pack.sh with RUN=run2.sh)
# 0. test_conv_winograd on GLES and GL, and with the Winograd GEMMs on the quad-load kernel
#    (GLTENSOR_MATMUL_KERNEL=vec4); test_pool's read-back tests with GLTENSOR_COPY_THREADS=12 and 16;
# 1. torchcmp's table for the f32 and QDQ CNNs (TC_ONLY=cnn), this build as planned;
# 2. replayed runs with read-back, two rounds: main's build (base), this build, GLTENSOR_COPY_THREADS=8 / 12,
#    GLTENSOR_MATMUL_KERNEL=vec4, both (vec4 + 12 threads);
# 3. compute only (no read-back): the GEMMs as planned against vec4 and tile64 forced, every net;
# 4. the QDQ narrow nets' input QuantizeLinear: fused (XQIN) against a separate pass (GLTENSOR_FUSE_QDQ_INPUT=0) and
#    two lab shaders (glsl-alt1: quant_div's exact division computed always, then selected; glsl-alt2: no exact
#    division, a diagnostic); gltensor_model_bench --qdq --gpu-time: this build, and with GLTENSOR_FUSE_QDQ_INPUT=0.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn36 pack (run2): $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
nproc
W=/tmp/cnn36
REPS=${C36_REPS:-300}
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
t() { timeout 30 "$@" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror" | head -6; }
step "test_conv_winograd: GLES, GL, GLES with the GEMMs on vec4; test_pool's reads with 12 and 16 copy threads"
t "$H/bin/test_conv_winograd"
GLTENSOR_API=gl t "$H/bin/test_conv_winograd"
GLTENSOR_MATMUL_KERNEL=vec4 t "$H/bin/test_conv_winograd"
for n in 12 16; do
  GLTENSOR_COPY_THREADS=$n t "$H/bin/test_pool" --gtest_filter='*ReadBack*:*ParallelCopy*:*Helper*'
done
step "torchcmp rows: cnn (this build)"
TC_ONLY=${C36_ONLY:-cnn} TC_W=$W TC_REPS=${C36_REPS:-} TC_GL_UNTIL=45 TC_PROFILE_UNTIL=0 timeout 75 \
  bash "$H/torchcmp.sh" 2>&1 | grep -vE "^\[|^ *$" | grep -v "no time left" | grep -E "^\||^=|rror|rc "
CASES=$(cd "$W/models" 2> /dev/null && ls -- *cnn*.onnx | sed 's/\.onnx$//' | grep -E "${C36_ONLY:-cnn}")
run() {  # NAME LABEL BIN ARGS ENV... : one bench line
  local name=$1 label=$2 bin=$3 extra=$4; shift 4
  # shellcheck disable=SC2086
  echo "$name $label: $(env "$@" timeout 20 "$bin" "$W/models/$name.onnx" --bench "$REPS" $extra 2>&1 |
    grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //; s/ and [0-9]* barriers per run//' | cut -c1-120)"
}
step "replayed, read back, 2 rounds: base, this, COPY_THREADS=8 / 12, vec4 GEMMs, vec4 + 12 threads"
for round in 1 2; do
  for name in $CASES; do
    case $name in qdq_cnn_64*) continue ;; esac
    [ "$SECONDS" -gt 105 ] && break
    run "$name" base "$H/base/gltensor-run" "--read-back --replay" LD_LIBRARY_PATH="$BASE_LD"
    run "$name" this "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_NONE=1
    run "$name" threads=8 "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_COPY_THREADS=8
    run "$name" threads=12 "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_COPY_THREADS=12
    run "$name" vec4 "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_MATMUL_KERNEL=vec4
    run "$name" vec4+12 "$H/bin/gltensor-run" "--read-back --replay" GLTENSOR_MATMUL_KERNEL=vec4 GLTENSOR_COPY_THREADS=12
  done
done
step "compute only: GEMMs as planned against vec4"
for name in $CASES; do
  [ "$SECONDS" -gt 118 ] && break
  run "$name" planned "$H/bin/gltensor-run" "--replay" GLTENSOR_NONE=1
  run "$name" vec4 "$H/bin/gltensor-run" "--replay" GLTENSOR_MATMUL_KERNEL=vec4
  run "$name" tile64 "$H/bin/gltensor-run" "--replay" GLTENSOR_MATMUL_KERNEL=tile64
done
qdq() {  # LABEL ENV...
  local label=$1; shift
  echo "--- $label"
  env "$@" timeout 12 "$H/bin/gltensor_model_bench" --qdq --runs "${C36_QREPS:-50}" --gpu-time 2>&1 |
    grep -E "^\| [0-9]|^\| channels" | head -5
}
step "the QDQ narrow nets' input quantization, compute only: fused (XQIN), a QuantizeLinear pass first, lab shaders"
for name in qdq_cnn_32_64_64_128_56 qdq_cnn_32_64_64_128_112; do
  run "$name" xqin "$H/bin/gltensor-run" "--replay" GLTENSOR_NONE=1
  run "$name" fuse_qdq_input=0 "$H/bin/gltensor-run" "--replay" GLTENSOR_FUSE_QDQ_INPUT=0
  run "$name" alt1-select "$H/bin/gltensor-run" "--replay" GLTENSOR_GLSL_DIR="$H/glsl-alt1"
  run "$name" alt2-nodiv "$H/bin/gltensor-run" "--replay" GLTENSOR_GLSL_DIR="$H/glsl-alt2"
done
step "gltensor_model_bench --qdq --gpu-time: this build, with vec4, with GLTENSOR_FUSE_QDQ_INPUT=0"
[ "$SECONDS" -lt 140 ] && qdq this GLTENSOR_NONE=1
[ "$SECONDS" -lt 144 ] && qdq fuse_qdq_input=0 GLTENSOR_FUSE_QDQ_INPUT=0
step "done"
