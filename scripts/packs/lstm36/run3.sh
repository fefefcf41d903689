#!/usr/bin/env bash
# lstm36's GPU pack, window 3 (issue 21): the LSTM rows of torchcmp with this branch's build (gltensor plain and
# replayed against PyTorch eager and its CUDA graph, outputs compared), main's libgltensor.so.0 and this branch's
# alternating once (same gltensor-run binary, outputs compared), test_rnn on GLES and desktop GL, the sabotages
# (subgroup sums, GRID tags) and every GRID poll giving up, then forms (GLTENSOR_RNN_REGS=KS,RR[,NG],
# GLTENSOR_SUBGROUPS=0) and probes through GLTENSOR_GLSL_DIR (GRID_COUNTER, no prefetch, unroll pragma, fast tanh).
#   bash gpu-multi/lstm36/run.sh   ($H: the pack; make_pack.sh makes it)
set -u
echo "commit: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
L=/tmp/lstm36libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain
W=/tmp/lstm36tc; N=${LSTM36_REPS:-100}
echo "=== [$SECONDS s] torchcmp, LSTM rows, this branch"
TC_W=$W TC_ONLY=${LSTM36_ONLY:-lstm} TC_PROFILE_UNTIL=0 TC_REPS=${LSTM36_TC_REPS:-} timeout 70 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^(load|plan|output) " | tail -30
run() {  # lib label model args...
  local lib=$1 label=$2 model=$3; shift 3
  echo "$label $(basename "$model" .onnx) $(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 20 "$H/bin/gltensor-run" "$model" "$@" 2>&1 < /dev/null | grep -E '^bench|rror' | sed 's/(outputs read back), //; s/process CPU min/CPU min/' | cut -c1-150)"
}
echo "=== [$SECONDS s] main / branch alternating (gltensor-run --bench $N --read-back, plain and --replay)"
for round in 1; do
  while IFS='|' read -r name model reps args; do
    echo "$name" | grep -qE "${LSTM36_ONLY:-lstm}" || continue
    for mode in "" "--replay"; do
      out=(); [ "$round$mode" = 1 ] && out=(--output-dir "$W/cmp/main-$name")
      # shellcheck disable=SC2086
      run "$MAIN" "main${mode}" "$model" $args --bench "$N" --read-back $mode ${out[@]+"${out[@]}"}
      [ "$round$mode" = 1 ] && out=(--output-dir "$W/cmp/branch-$name")
      # shellcheck disable=SC2086
      run "$H/lib" "branch${mode}" "$model" $args --bench "$N" --read-back $mode ${out[@]+"${out[@]}"}
    done
  done < "$W/cases.txt"
done
python3 - "$W/cmp" <<'PY'
import glob, os, sys
import numpy as np
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "main-*/*.npy"))):
    g = f.replace("/main-", "/branch-")
    if os.path.exists(g):
        a, b = np.load(f), np.load(g)
        print(f"outputs main vs branch {os.path.basename(os.path.dirname(f))[5:]}/{os.path.basename(f)}: max|d| {abs(a - b).max():.2e} (max|y| {abs(a).max():.2f})")
PY
echo "=== [$SECONDS s] test_rnn on the GPU, GLES then desktop GL"
timeout 20 "$H/bin/test_rnn" > /tmp/lstm36-gles.txt 2>&1; echo "GLES rc $?: $(grep -cE '^\[       OK' /tmp/lstm36-gles.txt) OK; $(grep -E '^\[       OK' /tmp/lstm36-gles.txt | grep -oE 'Rnn.Registers[A-Za-z]* \([0-9]+ ms\)' | tr '\n' ' ')"
grep -E "FAILED|Failure|seed" /tmp/lstm36-gles.txt | head -8
GLTENSOR_API=gl timeout 20 "$H/bin/test_rnn" > /tmp/lstm36-gl.txt 2>&1; echo "GL rc $?: $(grep -cE '^\[       OK' /tmp/lstm36-gl.txt) OK"
grep -E "FAILED|Failure|seed" /tmp/lstm36-gl.txt | head -8
for sab in shuffle notag; do
  echo "=== [$SECONDS s] sabotage $sab (glsl/$sab: must fail)"
  GLTENSOR_GLSL_DIR=$H/glsl/$sab timeout 15 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernel*' > /tmp/lstm36-sab.txt 2>&1
  echo "rc $? ($(grep -cE 'Failure' /tmp/lstm36-sab.txt) failures: CAUGHT if rc 1): $(grep -E '^\[  FAILED  \] Rnn' /tmp/lstm36-sab.txt | sort -u | tr '\n' ' ')"
done
echo "=== [$SECONDS s] every GRID poll giving up (glsl/stall): gltensor-run must raise LimitError (ErrorFlags::kStall)"
m=$(grep "^lstm_s64_h256_d2|" "$W/cases.txt" | cut -d'|' -f2)
GLTENSOR_GLSL_DIR=$H/glsl/stall timeout 30 "$H/bin/gltensor-run" "$m" --bench 2 2>&1 < /dev/null | grep -iE "error|^bench" | cut -c1-220
echo "=== [$SECONDS s] forms (branch, replayed): GLTENSOR_RNN_REGS=KS,RR[,NG], no subgroups, probes (GLTENSOR_GLSL_DIR)"
form() {  # model label VAR=value...
  local m=$1 label=$2 model args; shift 2
  IFS='|' read -r _ model _ args < <(grep "^$m|" "$W/cases.txt")
  # shellcheck disable=SC2086
  (export "$@"; run "$H/lib" "$label--replay" "$model" $args --bench "$N" --read-back --replay)
}
for round in 1 2; do
  [ "$SECONDS" -gt 75 ] && break
  m=lstm_s256_h128_d1
  form $m plan X=1; form $m regs=2,64 GLTENSOR_RNN_REGS=2,64; form $m regs=0,32,4 GLTENSOR_RNN_REGS=0,32,4
  form $m regs=0,32,2 GLTENSOR_RNN_REGS=0,32,2; form $m counter-0,32,4 GLTENSOR_RNN_REGS=0,32,4 GLTENSOR_GLSL_DIR=$H/glsl/counter
  form $m regs=0,32,4-nosubgroups GLTENSOR_RNN_REGS=0,32,4 GLTENSOR_SUBGROUPS=0
  form $m noprefetch X=1 GLTENSOR_GLSL_DIR=$H/glsl/noprefetch
  for pr in unroll fasttanh both; do form $m $pr X=1 GLTENSOR_GLSL_DIR=$H/glsl/$pr; done
  form $m both-0,32,4 GLTENSOR_RNN_REGS=0,32,4 GLTENSOR_GLSL_DIR=$H/glsl/both
  m=lstm_s256_h256_d2
  form $m plan X=1; form $m nosubgroups GLTENSOR_SUBGROUPS=0; form $m regs=16,16,8 GLTENSOR_RNN_REGS=16,16,8
  form $m counter GLTENSOR_GLSL_DIR=$H/glsl/counter; form $m regs=0,64,4 GLTENSOR_RNN_REGS=0,64,4
  form $m both GLTENSOR_GLSL_DIR=$H/glsl/both
  m=lstm_s64_h64_d1
  form $m plan X=1; form $m noprefetch X=1 GLTENSOR_GLSL_DIR=$H/glsl/noprefetch; form $m nosubgroups GLTENSOR_SUBGROUPS=0
  form $m regs=0,32,2 GLTENSOR_RNN_REGS=0,32,2
  for pr in unroll fasttanh both; do form $m $pr X=1 GLTENSOR_GLSL_DIR=$H/glsl/$pr; done
done
echo "=== [$SECONDS s] done"
