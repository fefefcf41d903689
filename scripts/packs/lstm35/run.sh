#!/usr/bin/env bash
# lstm35's GPU pack (issue 21): the LSTM rows of torchcmp with this branch's build (gltensor plain and
# replayed against PyTorch's CUDA graph, outputs compared), then main's libgltensor.so.0 and this branch's
# alternating on the same models (same gltensor-run binary, LD_LIBRARY_PATH), test_rnn on the GPU, probes
# of the fused step kernel's shape (GLTENSOR_RNN_STEP_PROBE=S,KS) and a profile.
#   bash gpu-multi/lstm35/run.sh   ($H: the pack; make_pack.sh makes it)
set -u
echo "commit: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
W=/tmp/lstm35tc; N=${LSTM35_REPS:-100}
echo "=== [$SECONDS s] torchcmp, LSTM rows, this branch"
TC_W=$W TC_ONLY=${LSTM35_ONLY:-lstm} TC_PROFILE_UNTIL=0 TC_REPS=${LSTM35_TC_REPS:-} timeout 100 bash "$H/torchcmp.sh" 2>&1 | grep -vE "^(load|plan|output) " | tail -40
echo "=== [$SECONDS s] main / branch alternating (gltensor-run --bench "$N" --read-back, plain and --replay)"
run() {  # lib label model args...
  local lib=$1 label=$2 model=$3; shift 3
  echo "$label $(basename "$model" .onnx) $(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 20 "$H/bin/gltensor-run" "$model" "$@" 2>&1 | grep -E '^bench|rror' | cut -c1-190)"
}
for round in 1 2; do
  [ "$SECONDS" -gt 80 ] && break
  while IFS='|' read -r name model reps args; do
    echo "$name" | grep -qE "${LSTM35_ONLY:-lstm}" || continue
    for mode in "" "--replay"; do
      # shellcheck disable=SC2086
      run "$H/libmain" "main${mode}" "$model" $args --bench "$N" --read-back $mode
      # shellcheck disable=SC2086
      run "$H/lib" "branch${mode}" "$model" $args --bench "$N" --read-back $mode
    done
  done < "$W/cases.txt"
done
echo "=== [$SECONDS s] probes (branch, replayed): GLTENSOR_RNN=steps on hidden 64, GLTENSOR_RNN_STEP_PROBE=S,KS"
while IFS='|' read -r name model reps args; do
  echo "$name" | grep -qE "${LSTM35_ONLY:-lstm}" || continue
  [ "$SECONDS" -gt 115 ] && break
  for p in 4,16 8,8 2,32 1,32 16,4; do
    # shellcheck disable=SC2086
    GLTENSOR_RNN=steps GLTENSOR_RNN_STEP_PROBE=$p run "$H/lib" "probe$p" "$model" $args --bench "$N" --read-back --replay
  done
done < "$W/cases.txt"
echo "=== [$SECONDS s] test_rnn on the GPU"
timeout 30 "$H/bin/test_rnn" 2>&1 | grep -E "OK|FAIL|Failure|PASSED|seed" | head -20
echo "=== [$SECONDS s] profile (branch, plain)"
m=$W/models/lstm_s256_h256_d2.onnx
[ "$SECONDS" -lt 130 ] && timeout 15 "$H/bin/gltensor-run" "$m" --shape x=256x1x64 --bench 20 --profile 2>&1 | grep -vE "^(load|plan|output) " | head -25
echo "=== [$SECONDS s] done"
