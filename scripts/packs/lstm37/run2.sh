#!/usr/bin/env bash
# lstm37's GPU pack, window 2 (issue 21; the lead runs `bash gpu-multi/lstm37/run.sh`, $H the pack, <= 90 s;
# RUN=run2.sh make_pack.sh makes it). The branch projects x in the sequence kernel by default on GPUs (XPROJ,
# GLTENSOR_RNN_FUSE_X; the X forms of window 1 dropped).
# 1. test_rnn's Rnn.RegistersKernel* on GLES and desktop GL (RegistersKernelFusedX; RegistersKernelGridStall: a forced
#    stall ends as LimitError, then the device computes right), the stall's noflag sabotage, the stall as a user sees it;
# 2. torchcmp's LSTM rows (TC_ONLY=lstm) with the branch: PyTorch eager and the CUDA graph in the same call;
# 3. main against the branch (XPROJ; its projecting lanes store Y), the branch with GLTENSOR_RNN_FUSE_X=0 and with
#    cd1116e's kernel (yrec: XPROJ, the recurrence's lanes store Y) on lstm_s64_h64_d1, three rounds
#    alternating; the other LSTMs once each (their path unchanged); outputs compared;
# 4. 1 / 64 / 256 steps with and without XPROJ (fixed cost, time per step); probes (GLTENSOR_GLSL_DIR: barrier()
#    alone, no Y stores, no subgroup sums, no cell, and these with no GEMV: where a step's 0.6 us goes);
# 5. --profile of lstm_s64_h64_d1: main, branch.
# Locally: PATH=/usr/bin:$PATH H=PACK LSTM37_REPS=2 LSTM37_TC=0 LSTM37_UNTIL=900 bash PACK/run.sh
set -u
echo "commit: $(cat "$H/COMMIT")"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,pstate --format=csv,noheader
N=${LSTM37_REPS:-200}
L=/tmp/lstm37libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain
W=/tmp/lstm37w; rm -rf "$W"; mkdir -p "$W"
step() { echo "=== [$SECONDS s] $*"; }
# run LABEL LIBDIR MODEL [ENV...]: gltensor-run --bench N --read-back --replay, one line
run() {
  local label=$1 dir=$2 m=$3; shift 3
  local line
  [ "$SECONDS" -gt "${LSTM37_UNTIL:-84}" ] && echo "$label $m: no time left" && return
  local f=$W/models/$m.onnx; [ -e "$f" ] || f=$H/seq/$m.onnx
  line=$(env LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}" "$@" timeout 20 "$H/bin/gltensor-run" "$f" \
    --bench "$N" --read-back --replay --output-dir "$W/out/$label-$m" 2>&1 < /dev/null |
    grep -E '^bench|rror|gltensor-run:' | head -2)
  echo "$label $m: $(echo "$line" | sed -E 's/^bench: [0-9]+ runs \(outputs read back\), //; s/, p90.*process CPU min [0-9.]+ ms, / | /; s/ per run//' | cut -c1-150)"
}
# cmp A B: the largest |difference| of the outputs of runs A and B (output dirs under $W/out)
cmp() {
  python3 - "$W/out/$1" "$W/out/$2" <<'PY'
import glob, os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
fs = glob.glob(a + "/*.npy")
if not fs or not os.path.isdir(b):
    print(f"outputs {os.path.basename(a)} vs {os.path.basename(b)}: missing"); sys.exit()
w = max(abs(np.load(f).astype(np.float64) - np.load(os.path.join(b, os.path.basename(f)))).max() for f in fs)
print(f"outputs {os.path.basename(a)} vs {os.path.basename(b)}: max|d| {w:.2e}")
PY
}
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null 2>&1 || echo "save-models failed"

step "1. test_rnn Rnn.RegistersKernel* (GLES, desktop GL); the stall path"
for api in gles gl; do
  e=(); [ $api = gl ] && e=(GLTENSOR_API=gl)
  env ${e[@]+"${e[@]}"} timeout 40 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernel*' > "$W/t-$api.txt" 2>&1
  echo "test_rnn $api rc $?: $(grep -cE '^\[       OK' "$W/t-$api.txt") OK: $(grep -E '^\[       OK|SKIPPED \] Rnn|stalled call' "$W/t-$api.txt" | sed 's/\[       OK \] //' | tr '\n' ' ' | cut -c1-300)"
  grep -E "FAILED|Failure|seed|what\(\)" "$W/t-$api.txt" | head -6
done
GLTENSOR_GLSL_DIR=$H/glsl/noflag timeout 20 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernelGridStall' > "$W/sab.txt" 2>&1
echo "sabotage noflag (the stall's flag never written): rc $? ($(grep -c Failure "$W/sab.txt") failures; CAUGHT if rc 1)"
s0=$SECONDS
GLTENSOR_RNN_GRID_STALL=1 timeout 30 "$H/bin/gltensor-run" "$W/models/lstm_s64_h256_d2.onnx" > "$W/stall.txt" 2>&1
echo "gltensor-run lstm_s64_h256_d2 with GLTENSOR_RNN_GRID_STALL=1: rc $?, $((SECONDS - s0)) s: $(grep -E 'gltensor-run:|run at once' "$W/stall.txt" | head -1 | cut -c1-260)"

if [ "${LSTM37_TC:-1}" = 1 ]; then
  step "2. torchcmp's LSTM rows (branch: XPROJ where it fits)"
  TC_ONLY=lstm TC_W=/tmp/lstm37tc TC_PROFILE_UNTIL=0 timeout 40 bash "$H/torchcmp.sh" 2>&1 |
    grep -E '^\| |^lstm.*(plain|replay)|rror|rc [0-9]' | cut -c1-200
fi

step "3. lstm_s64_h64_d1: main, branch (XPROJ), branch with GLTENSOR_RNN_FUSE_X=0; three rounds; N=$N"
for r in 1 2 3; do
  run "main$r" "$MAIN" lstm_s64_h64_d1
  run "branch$r" "$H/lib" lstm_s64_h64_d1
  run "nofuse$r" "$H/lib" lstm_s64_h64_d1 GLTENSOR_RNN_FUSE_X=0
  run "yrec$r" "$H/lib" lstm_s64_h64_d1 GLTENSOR_GLSL_DIR="$H/glsl/prev"
done
cmp main1-lstm_s64_h64_d1 yrec1-lstm_s64_h64_d1
cmp main1-lstm_s64_h64_d1 branch1-lstm_s64_h64_d1
cmp main1-lstm_s64_h64_d1 nofuse1-lstm_s64_h64_d1
for m in lstm_s64_h256_d2 lstm_s256_h128_d1 lstm_s256_h256_d2; do
  run main1 "$MAIN" $m
  run branch1 "$H/lib" $m
  cmp main1-$m branch1-$m
done

step "4. 1 / 64 / 256 steps (hidden 64, input 64) with and without XPROJ; probes (XPROJ, timing only)"
for t in 1 64 256; do
  run fuse "$H/lib" lstm_t${t}_h64
  run nofuse "$H/lib" lstm_t${t}_h64 GLTENSOR_RNN_FUSE_X=0
  cmp fuse-lstm_t${t}_h64 nofuse-lstm_t${t}_h64
done
run "yrec" "$H/lib" lstm_t256_h64 GLTENSOR_GLSL_DIR="$H/glsl/prev"
for p in baronly noy noshuf nocell floor; do
  run "probe-$p" "$H/lib" lstm_t256_h64 GLTENSOR_GLSL_DIR="$H/glsl/$p"
done
cmp probe-baronly-lstm_t256_h64 fuse-lstm_t256_h64

step "5. profiles (gltensor-run --profile --bench 100, plain runs)"
for lib in main branch; do
  dir=$H/lib; [ $lib = main ] && dir=$MAIN
  echo "--- $lib lstm_s64_h64_d1: $(LD_LIBRARY_PATH=$dir:${LD_LIBRARY_PATH:-} timeout 20 "$H/bin/gltensor-run" "$W/models/lstm_s64_h64_d1.onnx" \
    --bench 100 --profile 2>&1 | grep -E '^bench|\.comp' | sed -E 's/^bench: 100 runs, //; s/, p90.*//' | tr -s ' ' | tr '\n' ';')"
done
step "done"
