#!/usr/bin/env bash
# suite41a's GPU pack (issue 21: attention_tiled.comp's head dims up to 64 as uniforms, UNIFORM_DIMS; llvmpipe's
# default, constants on GPUs). The lead runs `bash gpu-multi/suite41a/run.sh` ($H the pack made by make_pack.sh;
# builds.tar.xz unpacked into $W/b: bin + lib, this branch's). One call, under ~120 s:
# 1. the attention tests, GLES then desktop GL, the GPUs' default (constants: main's programs), then GLES with
#    GLTENSOR_ATTENTION_UNIFORM_DIMS=1 (the uniform form on the GPU) (W1=1: window 1's list; W2=1: window 2's; default: window 3's);
# 2. (W1=1 or BENCH=1) GPU time (gltensor_attention_bench: the profiler's timer queries) of the tiled kernels, masked forward (m) and
#    forward + backward (mg), head dims 16 to 64, default against UNIFORM_DIMS=1, rounds alternated.
set -u
W=/tmp/suite41aw; ROUNDS=${ROUNDS:-3}; REPS=${REPS:-30}
rm -rf "$W"; mkdir -p "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
run_tests() {  # api limit "test:filter ..." [ENV=VAL]
  local api=$1 lim=$2 list=$3; shift 3
  for t in $list; do
    [ "$SECONDS" -gt "${TESTS_UNTIL:-115}" ] && echo "no time left for $api ${t%%:*}" && continue
    echo "$api $* ${t%%:*}: $(cd "$W" && env "$@" GLTENSOR_API=$api timeout "$lim" "$B/bin/${t%%:*}" --gtest_filter="${t#*:}" 2>&1 |
      grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure|seed=|rror' | head -6 | tr '\n' ' ')"
  done
}
ALL="test_attention:* test_attention_tiled:* test_attention_head_dims:* test_nn:Attention*"
# window 1 (result-w1.txt): GLES whole and GL's first two, then the bench; window 2 (default): what window 1 left
# (GL's head dims and test_nn, the moved InferenceQuadsPastTheHeadDim on GLES, the uniform form's tests on GLES)
if [ "${W1:-0}" = 1 ]; then
  step "tests: the GPUs' default (constant head dims), GLES then desktop GL"
  run_tests gles 25 "$ALL"
  run_tests gl 25 "$ALL"
  step "tests: GLTENSOR_ATTENTION_UNIFORM_DIMS=1 (GLES)"
  run_tests gles 25 "$ALL" GLTENSOR_ATTENTION_UNIFORM_DIMS=1
elif [ "${W2:-0}" = 1 ]; then
  step "tests: test_nn's Attention suite (InferenceQuadsPastTheHeadDim moved there), GLES then desktop GL; GL's head dims"
  run_tests gles 25 "test_nn:Attention* test_attention:*"
  run_tests gl 25 "test_nn:Attention* test_attention_head_dims:*"
  step "tests: GLTENSOR_ATTENTION_UNIFORM_DIMS=1 (GLES): the uniform form on the GPU"
  run_tests gles 25 "test_attention_tiled:* test_attention:*" GLTENSOR_ATTENTION_UNIFORM_DIMS=1
else  # window 3: GLES test_nn's Attention suite, which window 2's 25 s did not finish (no failure printed)
  step "tests: test_nn's Attention suite on GLES (90 s)"
  run_tests gles 90 "test_nn:Attention*"
fi
[ "${BENCH:-${W1:-0}}" = 1 ] || { step "done (the bench: BENCH=1)"; exit 0; }
step "GPU time per call: default (constants) against GLTENSOR_ATTENTION_UNIFORM_DIMS=1, rounds alternated"
CASES=${CASES:-"16,1024,1024,16,c,f32,m 16,1024,1024,32,c,f32,m 16,1024,1024,64,c,f32,m 16,1024,1024,20,n,f32,m
16,1024,1024,16,c,f32,mg 16,1024,1024,32,c,f32,mg 16,1024,1024,64,c,f32,mg 8,512,512,64,n,f16,mg"}
for r in $(seq "$ROUNDS"); do
  for u in "" 1; do
    [ "$SECONDS" -gt "${BENCH_UNTIL:-125}" ] && echo "round $r: no time left" && break 2
    echo "--- round $r UNIFORM_DIMS=${u:-default}"
    # shellcheck disable=SC2086
    GLTENSOR_ATTENTION_UNIFORM_DIMS=$u timeout 20 "$B/bin/gltensor_attention_bench" --reps "$REPS" $CASES 2>&1 | grep -E '^case|rror'
  done
done
step done
