#!/usr/bin/env bash
# cnn38's GPU call, window 3 (the final A/B; at most 60 s): bash gpu-multi/cnn38/run.sh  ($H: make_pack.sh with
# RUN=run3.sh)
# 0. test_conv_winograd on GLES (failures shown), its fused tests on desktop GL;
# 1. torchcmp's rows: the narrow f32 / QDQ nets and the wide f32 net at 56, PP-OCR's cls (planned);
# 2. GPU time per run and per op (gltensor-run --profile --bench 100): main's build / planned for the f32 and QDQ
#    nets; the narrow f32 net at 56 with the knobs (channels split over 2 workgroups; every layer fused; three stages);
# 3. replayed runs with read-back, base / planned / knobs alternating, two rounds.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "cnn38 pack (run3): $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/cnn38
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
F=GLTENSOR_CONV_WINOGRAD_FUSED
step "test_conv_winograd: GLES, then its fused tests on desktop GL"
timeout 30 "$H/bin/test_conv_winograd" --gtest_brief=1 2>&1 | grep -E "FAIL|PASSED|rror|Failure|seed|output [0-9]" | head -12
GLTENSOR_API=gl timeout 20 "$H/bin/test_conv_winograd" --gtest_brief=1 --gtest_filter='*Fused*' 2>&1 |
  grep -E "FAIL|PASSED|rror|Failure|seed|output [0-9]" | head -8
step "torchcmp rows (planned)"
TC_ONLY=${C38_ONLY:-f32_cnn_32_64_64_128_56|qdq_cnn_32_64_64_128_56|f32_cnn_64_128_128_256_256_56|cls} TC_W=$W \
  TC_OCR_DIR=$H/ocr TC_REPS=${C38_REPS:-} TC_GL_UNTIL=40 TC_PROFILE_UNTIL=0 timeout 25 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^\[|^ *$" | grep -v "no time left" | grep -E "^\||rror|rc "
prof() {  # NAME LABEL BIN ENV...
  local name=$1 label=$2 bin=$3; shift 3
  echo "--- $name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_PREPS:-100}" --profile 2>&1 |
    grep -E "^GPU time|^conv2d|^matmul  |rror" | sed 's/  */ /g' | tr '\n' ';' | cut -c1-220)"
}
B=$H/base/gltensor-run; X=$H/bin/gltensor-run
KNOBS="GLTENSOR_CONV_WINOGRAD_SPLIT=2 $F=1 $F=0"
step "GPU ms per run (over ${C38_PREPS:-100} runs) and per op: base / planned, knobs"
N=f32_cnn_32_64_64_128_56
prof $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
prof $N planned "$X" GLTENSOR_NONE=1
for k in $KNOBS; do prof $N "$k" "$X" "$k"; done
for N in f32_cnn_64_128_128_256_256_56 qdq_cnn_32_64_64_128_56 qdq_cnn_32_64_64_128_112 f32_cnn_32_64_64_128_112; do
  [ "$SECONDS" -gt 46 ] && break
  prof $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
  prof $N planned "$X" GLTENSOR_NONE=1
done
run() {  # NAME LABEL BIN ENV... : one replayed bench line with read-back
  local name=$1 label=$2 bin=$3; shift 3
  echo "$name $label: $(env "$@" timeout 15 "$bin" "$W/models/$name.onnx" --bench "${C38_RREPS:-300}" --read-back --replay \
    2>&1 | grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //; s/ and [0-9]* barriers per run//' | cut -c1-120)"
}
step "replayed, read back: base / planned / knobs alternating, two rounds"
for round in 1 2; do
  N=f32_cnn_32_64_64_128_56
  [ "$SECONDS" -gt 55 ] && break
  run $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
  run $N planned "$X" GLTENSOR_NONE=1
  for k in $KNOBS; do [ "$SECONDS" -lt 56 ] && run $N "$k" "$X" "$k"; done
  N=qdq_cnn_32_64_64_128_56
  [ "$SECONDS" -gt 56 ] && break
  run $N base "$B" LD_LIBRARY_PATH="$BASE_LD"
  run $N planned "$X" GLTENSOR_NONE=1
done
step "done"
