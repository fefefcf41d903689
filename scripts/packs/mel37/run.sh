#!/usr/bin/env bash
# mel37's GPU pack (issue 21): torchcmp's logmel_16k (STFT of 1 s at 16 kHz, power, 40 mel bins, log) with main's
# build (fuse_stft_power's 2 dispatches) and this branch's (fuse_stft_mel: 1 dispatch of glsl/nn/stft_mel.comp) in
# one call, plain and replayed; the branch's variants (VARIANTS: GLTENSOR_STFT_MEL=FxSxL forms, =0 its two
# matmuls); the outputs against main's; the GPU time per dispatch of each (--profile); PyTorch's eager and
# CUDA-graph runs of the same model on the same input (torchcmp.py); test_model_signal_ops on GLES and desktop GL.
# The lead runs it as `bash gpu-multi/mel37/run.sh` ($H the pack, made by make_pack.sh). Locally (llvmpipe,
# PyTorch on the CPU): H=PACK PY=/usr/bin/python3 REPS=10 TC_REPS=3 ROUNDS=1 bash run.sh
set -u
W=/tmp/mel37w; PY=${PY:-python3}; REPS=${REPS:-500}; ROUNDS=${ROUNDS:-3}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/outmain" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models and inputs"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent | tail -1
grep -E "^logmel_" "$W/cases.txt" > "$W/c.txt"; mv "$W/c.txt" "$W/cases.txt"
# The branch's variants: its default plan (GPUs: 1 frame a workgroup of 1024 invocations, 4 slices a bin, 8
# twiddles in registers), the forms GLTENSOR_STFT_MEL=FxSxLxQ (F frames a workgroup, S slices of each bin's sums,
# L invocations, Q twiddles in registers, 1 the table form), =0 the two matmuls of main's plan. (a variant of
# several settings joins them with commas)
VARIANTS=${VARIANTS:-"default GLTENSOR_STFT_MEL=0 GLTENSOR_STFT_MEL=1x2x512"}
run() {  # build name model args mode(plain|replay) [env] -> one line
  local b=$1 name=$2 model=$3 args=$4 mode=$5 env=${6:-default} bin lib out log
  if [ "$b" = main ]; then bin=$B/main/bin/gltensor-run lib=$B/main/lib:$LD_LIBRARY_PATH out=$W/outmain/$name log=$W/log/$name-$mode-main.txt
  else bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH out=$W/out/$name log=$W/log/$name-$mode.txt; fi
  if [ "$env" != default ]; then log=$W/log/$name-$mode-${env//[^A-Za-z0-9]/_}.txt out=$W/outv/${env//[^A-Za-z0-9]/_}/$name; fi
  local extra="--output-dir $out"; [ "$mode" = replay ] && extra=--replay
  local e=""; [ "$env" != default ] && e=${env//,/ }
  # shellcheck disable=SC2086
  env $e LD_LIBRARY_PATH=$lib timeout 20 "$bin" "$model" $args --bench "$REPS" --read-back $extra > "$log" 2>&1 || echo "$b $name $mode $env: rc $?"
  echo "$name $mode $b $env: $(grep -E '^bench|rror' "$log" | sed 's/ (outputs read back)//; s/, process CPU min [0-9.]* ms//' | cut -c1-150)"
}
for round in $(seq 1 "$ROUNDS"); do
  [ "$SECONDS" -gt 60 ] && echo "round $round: no time left" && break
  step "round $round: gltensor-run --bench $REPS --read-back, main then the branch's variants, plain and replayed"
  while IFS='|' read -r name model _ args; do
    run main "$name" "$model" "$args" plain
    run main "$name" "$model" "$args" replay
    for v in $VARIANTS; do
      run branch "$name" "$model" "$args" plain "$v"
      run branch "$name" "$model" "$args" replay "$v"
    done
  done < "$W/cases.txt"
  [ "$round" = 1 ] && grep -h "^plan\|^dispatches" "$W"/log/logmel_16k-plain*.txt | sort | uniq -c
done
step "the branch's default plan without --read-back (the output's read's share), plain and replayed"
IFS='|' read -r _ model _ args < "$W/cases.txt"
for extra in "" --replay; do
  # shellcheck disable=SC2086
  echo "no read-back ${extra:-plain}: $(timeout 10 "$B/bin/gltensor-run" "$model" $args --bench "$REPS" $extra 2>&1 | grep -E '^bench' | sed 's/, process CPU min [0-9.]* ms//' | cut -c1-150)"
done
step "outputs: the branch's variants against main (plain runs)"
"$PY" - "$W" << 'PYEOF'
import sys, os, glob, numpy as np
w = sys.argv[1]
for f in sorted(glob.glob(os.path.join(w, "out", "*", "*.npy")) + glob.glob(os.path.join(w, "outv", "*", "*", "*.npy"))):
    name, leaf = f.split(os.sep)[-2], os.path.basename(f)
    m = os.path.join(w, "outmain", name, leaf)
    a, b = np.load(f).astype(np.float64), np.load(m).astype(np.float64)
    print(f"{os.path.relpath(f, w)}: max|branch - main| {np.abs(a - b).max():.2e} (max|main| {np.abs(b).max():.2g})")
PYEOF
step "PyTorch eager and CUDA graph (torchcmp.py torch; the table's gltensor columns: the branch's last round)"
timeout 40 "$PY" "$H/py/torchcmp.py" torch "$W" --only 'logmel' ${TC_REPS:+--reps $TC_REPS} | grep -vE "^$" || echo "torch side: rc $?"
step "GPU time per dispatch (gltensor-run --profile --bench 200, plain): main, then the branch's variants"
IFS='|' read -r _ model _ args < "$W/cases.txt"
prof() { grep -E "^bench|\.comp " | tr -s ' ' | cut -c1-160 | head -4 | tr '\n' ';'; }
# shellcheck disable=SC2086
echo "main: $(LD_LIBRARY_PATH=$B/main/lib:$LD_LIBRARY_PATH timeout 10 "$B/main/bin/gltensor-run" "$model" $args --bench 200 --profile 2>&1 | prof)"
for v in $VARIANTS; do
  e=""; [ "$v" != default ] && e=${v//,/ }
  # shellcheck disable=SC2086
  echo "$v: $(env $e timeout 10 "$B/bin/gltensor-run" "$model" $args --bench 200 --profile 2>&1 | prof)"
done
step "test_model_signal_ops (SignalOps.*: the one-kernel log-mel front end against float64, the other plans, non-finite values), test_model's Issue22OpsMatchOnnxRuntime (a mel MatMul without Add / Log, one kernel by default on GPUs, against ONNX Runtime), test_nn_plans' PlanStftMel"
for api in ${APIS:-gles gl}; do
  echo "--- GLTENSOR_API=$api"
  (cd "$W" && GLTENSOR_API=$api timeout 25 "$B/bin/test_model_signal_ops" --gtest_filter='SignalOps.*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) |Failure|Which is|differ|seed=|trace" | head -30)
  [ -x "$B/bin/test_model" ] && (cd "$W" && GLTENSOR_API=$api GLTENSOR_ORT_PYTHON="$H/py/ort_run.py" GLTENSOR_REQUIRE_MODELS=1 timeout 25 "$B/bin/test_model" --gtest_filter='Model.Issue22*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Which is|differ|seed=|trace|skip|onnxruntime|python3" | head -10)
done
[ -x "$B/bin/test_nn_plans" ] && (cd "$W" && timeout 10 "$B/bin/test_nn_plans" --gtest_filter='PlanStftMel*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) |Failure" | head -5)
step done
