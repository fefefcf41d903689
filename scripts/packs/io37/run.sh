#!/usr/bin/env bash
# io37's GPU call (issue 21: the transfer-bound models at or under PyTorch's CUDA graph), ~120 s:
#   ONLY=io37 bash gpu-multi/run-all.sh          ($H the pack of make_pack.sh; LD_LIBRARY_PATH has $H/lib first)
# Locally (llvmpipe): H=/work/main/gpu-multi/io37 IO_RUNS=20 IO_BENCH=20 bash /work/main/gpu-multi/io37/run.sh
# 1. models: gltensor_model_bench --save-models (the narrow f32 CNN at 112), torchcmp.py prepare (LayerNorm,
#    attention; seeded inputs);
# 2. gltensor_io_bench: read-back phases (copy queued + destination, wait, host copy) and the spread of each
#    run's time, 64 KB to 8 MB and the models, to_vector / to_host into new memory / into reused memory,
#    per variant of the branch's settings (GLTENSOR_READ_PIECES, GLTENSOR_WAIT_SPIN_US);
# 3. gltensor-run --bench N --read-back on the three models, main's build and the branch's (--read-into vector,
#    the old method, and new), plain and --replay, alternated over rounds;
# 4. torchcmp.py torch: PyTorch eager and CUDA graph on the same inputs, the table (the branch's last round,
#    --read-into new).
set -u
W=${IO_W:-/tmp/io37}; PY=${IO_PY:-python3}; RUNS=${IO_RUNS:-200}; N=${IO_BENCH:-300}; ROUNDS=${IO_ROUNDS:-2}
ONLY=${IO_ONLY:-f32_cnn_32_64_64_128_112|layernorm_svtr|attention_8x300}
rm -rf "$W"; mkdir -p "$W/log" "$W/out"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"; nproc
LL=${LD_LIBRARY_PATH:-}; MAINLD=$H/main/lib:${LL#*:}
step "models"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent 2>&1 | grep -v missing || echo "prepare failed"
[ -e "$W/cases.txt" ] || for m in f32_cnn_32_64_64_128_112; do echo "$m|$W/models/$m.onnx|200|" >> "$W/cases.txt"; done
grep -E "$ONLY" "$W/cases.txt" > "$W/mine.txt"; cut -d'|' -f1 "$W/mine.txt" | tr '\n' ' '; echo
MODELS=$(grep -E "cnn|layernorm" "$W/mine.txt" | cut -d'|' -f2 | tr '\n' ' ')
step "read-back phases (gltensor_io_bench --runs $RUNS), per setting"
for v in "" "GLTENSOR_READ_PIECES=4" "GLTENSOR_READ_PIECES=8" "GLTENSOR_WAIT_SPIN_US=2000" \
  "GLTENSOR_READ_PIECES=4 GLTENSOR_WAIT_SPIN_US=2000"; do
  echo "--- ${v:-defaults}"
  # shellcheck disable=SC2086
  env $v timeout 25 "$H/bin/gltensor_io_bench" --runs "$RUNS" $MODELS 2>&1 | grep -v "^device" || echo "rc $?"
done
step "gltensor-run --bench $N --read-back: main, branch (vector), branch (new); plain and replayed; $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  while IFS='|' read -r name model reps args; do
    for mode in plain replay; do
      rp=; [ $mode = replay ] && rp=--replay
      # shellcheck disable=SC2086
      m=$(LD_LIBRARY_PATH=$MAINLD timeout 20 "$H/main/bin/gltensor-run" "$model" $args --bench "$N" --read-back $rp 2>&1 | grep -E "^bench|rror")
      # shellcheck disable=SC2086
      bv=$(timeout 20 "$H/bin/gltensor-run" "$model" $args --bench "$N" --read-back --read-into vector $rp 2>&1 | grep -E "^bench|rror")
      # shellcheck disable=SC2086
      timeout 20 "$H/bin/gltensor-run" "$model" $args --bench "$N" --read-back $rp --output-dir "$W/out/$name" > "$W/log/$name-$mode.txt" 2>&1
      bn=$(grep -E "^bench|rror" "$W/log/$name-$mode.txt")
      echo "r$r $name $mode main:   $(echo "$m" | cut -c1-150)"
      echo "r$r $name $mode vector: $(echo "$bv" | cut -c1-150)"
      echo "r$r $name $mode new:    $(echo "$bn" | cut -c1-150)"
    done
  done < "$W/mine.txt"
done
step "PyTorch: eager and CUDA graph (torchcmp.py torch), the branch's last round (--read-into new)"
T=$((135 - SECONDS)); [ $T -gt 60 ] && T=60; [ $T -lt 5 ] && T=5
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$ONLY" || echo "torch side: rc $?"
step "done"
