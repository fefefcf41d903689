#!/usr/bin/env bash
# host38's GPU pack (issue 21): where a small replayed model's mean-over-min spread comes from, and fixes of it,
# main's build against this branch's in one call. $H the pack (make_pack.sh). Locally (llvmpipe):
#   H=/work/main/gpu-multi/host38 H38_RUNS=20 H38_ONLY=logmel bash /work/main/gpu-multi/host38/run.sh
# 1. models: gltensor_model_bench --save-models (the LSTM, the CNN), torchcmp.py prepare (log-mel, attention);
# 2. A/B: gltensor-run --bench N --read-back --replay, main's build then the branch's, two rounds;
# 3. variants (GLTENSOR_* below) between the A/B rounds;
# 4. gltensor_io_bench --trace: each run's phases (submission, GPU start/end, the wait's return) as distributions;
# 5. PyTorch eager and CUDA graph on the same models, per-run distributions (torchcmp.py, TC_DIST=1).
set -u
W=/tmp/host38w; PY=${PY:-python3}; N=${H38_RUNS:-500}; ONLY=${H38_ONLY:-.}
rm -rf "$W"; mkdir -p "$W/log"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent | tail -1
grep -E "^(logmel_16k|lstm_s64_h64_d1|attention_svtr_8x168x15|f32_cnn_32_64_64_128_56|attention_8x300x64)\|" "$W/cases.txt" |
  grep -E "^[^|]*($ONLY)" > "$W/c.txt"
mv "$W/c.txt" "$W/cases.txt"
cat "$W/cases.txt" | cut -d'|' -f1 | tr '\n' ' '; echo
run() {  # label build(main|branch) env(- or A=B[,C=D]) [wrapper...] -> a bench line per case
  local label=$1 b=$2 e=$3 bin=$H/bin/gltensor-run lib=${LD_LIBRARY_PATH:-} envs=()
  shift 3
  [ "$b" = main ] && bin=$H/main/bin/gltensor-run lib=$H/main/lib:${LD_LIBRARY_PATH:-}
  [ "$e" != - ] && IFS=, read -r -a envs <<< "$e"
  while IFS='|' read -r name model _ args <&3; do
    [ "$SECONDS" -gt "${H38_GL_UNTIL:-88}" ] && echo "$name $label: no time left" && continue
    # shellcheck disable=SC2086
    r=$(env LD_LIBRARY_PATH="$lib" "${envs[@]}" timeout 15 "$@" "$bin" "$model" $args --bench "$N" --read-back --replay 2>&1 |
      grep -E "^bench|rror" | sed -e 's/ (outputs read back, new)//' -e 's/, process CPU min [0-9.]* ms//' | cut -c1-170)
    printf '%-26s %-22s %s\n' "$name" "$label" "$r"
    [ "$label" = "branch r1" ] && echo "$r" > "$W/log/$name-replay.txt"  # the table's replayed column
  done 3< "$W/cases.txt"
}
step "A/B: main's build, the branch's (defaults), 3 rounds, with the variants between; gltensor-run --bench $N --read-back --replay"
# (window 1, a8594b3: the wait's variants, GLTENSOR_WAIT_SPIN_US / _GAP_US / GLTENSOR_REPLAY_FLUSH, lost or tied: gone)
run "main r1" main -
run "branch r1" branch -
run "copy spin 1000us" branch GLTENSOR_COPY_SPIN_US=1000
run "host outputs 2 MiB" branch GLTENSOR_HOST_OUTPUT_BYTES=2097152
run "main r2" main -
run "branch r2" branch -
run "copy spin 1000 + 7 helpers" branch GLTENSOR_COPY_SPIN_US=1000,GLTENSOR_COPY_HELPERS=7
run "host out 2 MiB + spin 1000" branch GLTENSOR_HOST_OUTPUT_BYTES=2097152,GLTENSOR_COPY_SPIN_US=1000
run "7 helpers" branch GLTENSOR_COPY_HELPERS=7
run "main r3" main -
run "branch r3" branch -
run "copy spin 1000us r2" branch GLTENSOR_COPY_SPIN_US=1000
run "copy spin 300us" branch GLTENSOR_COPY_SPIN_US=300
run "host outputs 2 MiB r2" branch GLTENSOR_HOST_OUTPUT_BYTES=2097152
step "a slow start? torchcmp's run counts (--bench 200, warm-up 20) after 1 s idle, block means in order; then --warmup-ms 300"
while IFS='|' read -r name model _ args <&3; do
  for w in "" "--warmup-ms 300"; do
    sleep 1
    # shellcheck disable=SC2086
    r=$(timeout 15 "$H/bin/gltensor-run" "$model" $args --bench 200 $w --blocks 10 --read-back --replay 2>&1 | grep -E "^bench" |
      sed -e 's/ (outputs read back, new)//' -e 's/, process CPU.*//' -e 's/bench blocks (mean ms of 10 blocks of runs, in order)/  blocks/' | tr '\n' ' ')
    printf '%-26s %-16s %s\n' "$name" "${w:-warm-up 20}" "$r"
  done
done 3< "$W/cases.txt"
step "gltensor_io_bench --trace (branch): each run's phases, us from run()'s call"
models=$(cut -d'|' -f2 "$W/cases.txt" | tr '\n' ' ')
# shellcheck disable=SC2086
timeout 25 "$H/bin/gltensor_io_bench" --trace --runs "$N" $models 2>&1 | grep -vE "^  (GPU start|GPU end|first wait|wait returned|blocking)"
big=$(grep -E "^(attention_8x300x64|f32_cnn)" "$W/cases.txt" | cut -d'|' -f2 | tr '\n' ' ')
echo "--- GLTENSOR_COPY_SPIN_US=1000:"
# shellcheck disable=SC2086
GLTENSOR_COPY_SPIN_US=1000 timeout 20 "$H/bin/gltensor_io_bench" --trace --runs "$N" $big 2>&1 | grep -vE "^  (GPU start|GPU end|first wait|wait returned|blocking)"
echo "--- GLTENSOR_HOST_OUTPUT_BYTES=2097152:"
# shellcheck disable=SC2086
GLTENSOR_HOST_OUTPUT_BYTES=2097152 timeout 20 "$H/bin/gltensor_io_bench" --trace --runs "$N" $big 2>&1 | grep -vE "^  (GPU start|GPU end|first wait|wait returned|blocking)"
step "PyTorch eager and CUDA graph, per-run distributions (TC_DIST)"
T=$((136 - SECONDS)); [ $T -gt 45 ] && T=45
TC_DIST=1 timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --reps "$N" 2>&1 | grep -E "runs, us|^\| |PyTorch" | grep -v "^|---"
step "done"
