#!/usr/bin/env bash
# io37's last GPU call (~40 s): pieces from 1 MiB only; main against the branch (--read-into new) on the rows that
# window 3 left at or above PyTorch's CUDA graph, alternated over 3 rounds; torchcmp's table for them:
#   ONLY=io37 bash gpu-multi/run-all.sh          ($H the pack of `RUN=run3.sh TESTS=test_pool make_pack.sh`)
set -u
W=${IO_W:-/tmp/io37}; PY=${IO_PY:-python3}; N=${IO_BENCH:-300}; ROUNDS=${IO_ROUNDS:-3}
MINE=${IO_ONLY:-f32_cnn_32_64_64_128_112|attention|layernorm|softmax}
rm -rf "$W"; mkdir -p "$W/log" "$W/out"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
LL=${LD_LIBRARY_PATH:-}; MAINLD=$H/main/lib:${LL#*:}
step "models"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent 2>&1 | grep -v missing || echo "prepare failed"
[ -e "$W/cases.txt" ] || for m in f32_cnn_32_64_64_128_112 three_gemm; do echo "$m|$W/models/$m.onnx|200|" >> "$W/cases.txt"; done
grep -E "$MINE" "$W/cases.txt" > "$W/mine.txt"; cut -d'|' -f1 "$W/mine.txt" | tr '\n' ' '; echo
step "test_pool's read-back tests, GLES then desktop GL"
for api in gles gl; do
  echo "$api: $(GLTENSOR_API=$api timeout 20 "$H/bin/test_pool" --gtest_filter='Pool.ToHost*:Pool.LargeRead*:Pool.ReadBacks*' 2>&1 |
    grep -E "^\[  (PASSED|FAILED) |Failure" | head -3 | tr '\n' ' ')"
done
step "gltensor-run --bench $N --read-back: main, then the branch (new); $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  while IFS='|' read -r name model reps args; do
    for mode in plain replay; do
      rp=; [ $mode = replay ] && rp=--replay
      # shellcheck disable=SC2086
      m=$(LD_LIBRARY_PATH=$MAINLD timeout 20 "$H/main/bin/gltensor-run" "$model" $args --bench "$N" --read-back $rp 2>&1 | grep -E "^bench|rror")
      # shellcheck disable=SC2086
      timeout 20 "$H/bin/gltensor-run" "$model" $args --bench "$N" --read-back $rp --output-dir "$W/out/$name" > "$W/log/$name-$mode.txt" 2>&1
      echo "r$r main $name $mode: $(echo "$m" | cut -c1-110)"
      echo "r$r new  $name $mode: $(grep -E "^bench|rror" "$W/log/$name-$mode.txt" | cut -c1-110)"
    done
  done < "$W/mine.txt"
done
step "PyTorch: eager and CUDA graph (torchcmp.py torch), the branch's last round (new)"
T=$((58 - SECONDS)); [ $T -gt 30 ] && T=30; [ $T -lt 5 ] && T=5
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$MINE" || echo "torch side: rc $?"
step "done"
