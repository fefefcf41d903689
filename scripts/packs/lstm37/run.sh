#!/usr/bin/env bash
# lstm37's GPU pack, window 1 (issue 21; the lead runs `bash gpu-multi/lstm37/run.sh`, $H the pack, <= 140 s):
# 1. the GRID form's stall path on the GPU: test_rnn's Rnn.RegistersKernelGrid* on GLES and desktop GL
#    (RegistersKernelGridStall: GLTENSOR_RNN_GRID_STALL makes one workgroup never arrive: LimitError, then the same
#    case and a GRU on the normal path must match the reference), the stall test with the flag's write removed (must
#    fail), gltensor-run on a hidden-256 model with the setting (the error as a user sees it);
# 2. main's libgltensor.so.0 against the branch's (the same gltensor-run), two rounds on the four LSTMs, outputs
#    compared: the normal path unaffected;
# 3. lstm_s64_h64_d1's time: GLTENSOR_RNN_X forms at 1, 64 and 256 steps (fixed cost and per step), probes through
#    GLTENSOR_GLSL_DIR (no x loads, no cell, no barrier, no GEMV: timing only; the cells' activations through the
#    builtin tanh: outputs compared), --profile (GPU time per dispatch);
# 4. (run second) torchcmp's LSTM rows (TC_ONLY=lstm) with the branch: PyTorch eager and the CUDA graph in the same call.
# Locally: H=PACK LSTM37_REPS=3 LSTM37_TC=0 bash PACK/run.sh (llvmpipe: the GPU-only tests skip).
set -u
echo "commit: $(cat "$H/COMMIT")"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,pstate --format=csv,noheader
N=${LSTM37_REPS:-200}
L=/tmp/lstm37libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain
W=/tmp/lstm37w; rm -rf "$W"; mkdir -p "$W"
step() { echo "=== [$SECONDS s] $*"; }
# run LABEL LIBDIR MODEL T [ENV...]: gltensor-run --bench N --read-back --replay, one line
run() {
  local label=$1 dir=$2 m=$3 t=$4; shift 4
  local line
  [ "$SECONDS" -gt "${LSTM37_UNTIL:-128}" ] && echo "$label $m T=$t: no time left" && return
  local f=$W/models/$m.onnx; [ -e "$f" ] || f=$H/seq/$m.onnx
  line=$(env LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}" "$@" timeout 20 "$H/bin/gltensor-run" "$f" \
    --bench "$N" --read-back --replay --output-dir "$W/out/$label-$m-$t" 2>&1 < /dev/null |
    grep -E '^bench|rror|gltensor-run:' | head -2)
  echo "$label $m T=$t: $(echo "$line" | sed -E 's/^bench: [0-9]+ runs \(outputs read back\), //; s/, process CPU.*per run/ |/' | cut -c1-150)"
}
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null 2>&1 || echo "save-models failed"

step "1. the stall path: test_rnn Rnn.RegistersKernelGrid* (GLES, desktop GL)"
for api in gles gl; do
  e=(); [ $api = gl ] && e=(GLTENSOR_API=gl)
  env ${e[@]+"${e[@]}"} timeout 60 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernel*' > "$W/t-$api.txt" 2>&1
  echo "test_rnn $api rc $?: $(grep -cE '^\[       OK' "$W/t-$api.txt") OK: $(grep -E '^\[       OK|SKIPPED \] Rnn|stalled call' "$W/t-$api.txt" | sed 's/\[       OK \] //' | tr '\n' ' ' | cut -c1-300)"
  grep -E "FAILED|Failure|seed|what\(\)" "$W/t-$api.txt" | head -6
done
GLTENSOR_GLSL_DIR=$H/glsl/noflag timeout 60 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernelGridStall' > "$W/sab.txt" 2>&1
echo "sabotage noflag (the stall's flag never written): rc $? ($(grep -c Failure "$W/sab.txt") failures; CAUGHT if rc 1): $(grep -E 'no LimitError|stalled call' "$W/sab.txt" | head -2 | tr '\n' ' ')"
SECONDS0=$SECONDS
echo "gltensor-run with GLTENSOR_RNN_GRID_STALL=1: $(GLTENSOR_RNN_GRID_STALL=1 timeout 30 "$H/bin/gltensor-run" "$W/models/lstm_s64_h256_d2.onnx" --shape x=64x1x64 2>&1 | grep -iE 'error|rror' | head -2 | cut -c1-300) (rc ${PIPESTATUS[0]}, $((SECONDS - SECONDS0)) s)"

if [ "${LSTM37_TC:-1}" = 1 ]; then
  step "4. torchcmp's LSTM rows (branch)"
  TC_ONLY=lstm TC_W=/tmp/lstm37tc TC_PROFILE_UNTIL=0 timeout 55 bash "$H/torchcmp.sh" 2>&1 |
    grep -vE '^=== .*models$|cases, the filter' | tail -25
fi

step "3. hidden 64 (and 128): GLTENSOR_RNN_X forms, lengths 1 / 64 / 256"
for x in 0 1 4 8 16; do
  for t in 1 64 256; do run "X=$x" "$H/lib" lstm_t${t}_h64 $t GLTENSOR_RNN_X=$x; done
done
for x in 0 1 8; do run "X=$x" "$H/lib" lstm_s256_h128_d1 256 GLTENSOR_RNN_X=$x; done
python3 - "$W/out" <<'PY'
import glob, os, sys
import numpy as np
for d in sorted(glob.glob(os.path.join(sys.argv[1], "X=[1-9]*"))):
    e = os.path.join(os.path.dirname(d), "X=0-" + os.path.basename(d).split("-", 1)[1])
    worst = max((abs(np.load(f).astype(np.float64) - np.load(os.path.join(e, os.path.basename(f)))).max()
                 for f in glob.glob(d + "/*.npy")), default=-1)
    print(f"outputs {os.path.basename(d)} vs X=0: max|d| {worst:.2e}")
PY
step "probes (GLTENSOR_GLSL_DIR copies; timing only, wrong outputs)"
for p in nox nocell nobar nogemv tanhb; do
  for t in 64 256; do run "probe-$p" "$H/lib" lstm_t${t}_h64 $t GLTENSOR_GLSL_DIR="$H/glsl/$p"; done
done
python3 - "$W/out" <<'PY'
import glob, os, sys
import numpy as np
for d in sorted(glob.glob(os.path.join(sys.argv[1], "probe-tanhb-*"))):
    e = os.path.join(os.path.dirname(d), "X=0-" + os.path.basename(d).split("-", 2)[2])
    worst = max((abs(np.load(f).astype(np.float64) - np.load(os.path.join(e, os.path.basename(f)))).max()
                 for f in glob.glob(d + "/*.npy")), default=-1)
    print(f"outputs {os.path.basename(d)} (builtin tanh) vs X=0: max|d| {worst:.2e}")
PY
step "profiles (gltensor-run --profile --bench 100, plain runs)"
for lib in main branch; do
  dir=$H/lib; [ $lib = main ] && dir=$MAIN
  echo "--- $lib lstm_s64_h64_d1"
  LD_LIBRARY_PATH=$dir:${LD_LIBRARY_PATH:-} timeout 20 "$H/bin/gltensor-run" "$W/models/lstm_s64_h64_d1.onnx" --shape x=64x1x64 \
    --bench 100 --profile 2>&1 | grep -vE "^output |^load|^plan" | head -30
done

step "2. main against the branch (same gltensor-run), replayed, N=$N"
for r in 1 2; do
  for m in lstm_s64_h64_d1:64 lstm_s64_h256_d2:64 lstm_s256_h128_d1:256 lstm_s256_h256_d2:256; do
    run "main$r" "$MAIN" "${m%%:*}" "${m##*:}"
    run "branch$r" "$H/lib" "${m%%:*}" "${m##*:}"
  done
done
python3 - "$W/out" <<'PY'
import glob, os, sys
import numpy as np
for d in sorted(glob.glob(os.path.join(sys.argv[1], "main1-*"))):
    e = d.replace("/main1-", "/branch1-")
    worst = max((abs(np.load(f).astype(np.float64) - np.load(os.path.join(e, os.path.basename(f)))).max()
                 for f in glob.glob(d + "/*.npy")), default=-1)
    print(f"outputs main vs branch {os.path.basename(d)[6:]}: max|d| {worst:.2e}")
PY

step "done"
