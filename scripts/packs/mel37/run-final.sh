#!/usr/bin/env bash
# mel37's last GPU pack (make_pack.sh with FINAL=1 ships it as run.sh; under 60 s): the branch's final build
# against PyTorch's CUDA graph in three interleaved rounds (main's replayed run, the branch's plain and replayed runs,
# then torchcmp.py's eager and CUDA-graph runs: a ratio per round), the single means moving 10-20% between calls.
set -u
W=/tmp/mel37f; PY=${PY:-python3}; REPS=${REPS:-500}
rm -rf "$W"; mkdir -p "$W/log" "$W/b"; tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent | tail -1
grep -E "^logmel_" "$W/cases.txt" > "$W/c.txt"; mv "$W/c.txt" "$W/cases.txt"
IFS='|' read -r name model _ args < "$W/cases.txt"
line() { grep -E '^bench|rror' "$1" | sed 's/ (outputs read back)//; s/, process CPU min [0-9.]* ms//' | cut -c1-120; }
for round in 1 2 3; do
  [ "$SECONDS" -gt 45 ] && echo "round $round: no time left" && break
  echo; echo "=== [$SECONDS s] round $round"
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH=$B/main/lib:$LD_LIBRARY_PATH timeout 20 "$B/main/bin/gltensor-run" "$model" $args --bench "$REPS" --read-back --replay > "$W/log/main-replay.txt" 2>&1
  echo "main replay: $(line "$W/log/main-replay.txt")"
  for mode in plain replay; do
    extra=""; [ "$mode" = replay ] && extra=--replay
    # shellcheck disable=SC2086
    timeout 20 "$B/bin/gltensor-run" "$model" $args --bench "$REPS" --read-back $extra > "$W/log/$name-$mode.txt" 2>&1
    echo "branch $mode: $(line "$W/log/$name-$mode.txt")"
  done
  timeout 30 "$PY" "$H/py/torchcmp.py" torch "$W" --only 'logmel' ${TC_REPS:+--reps $TC_REPS} | grep -E "^\| logmel|rror" || echo "torch side: rc $?"
done
echo "=== [$SECONDS s] done"
