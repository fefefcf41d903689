#!/usr/bin/env bash
# io37's second GPU call (~70 s): the branch's read-back in pieces (GLTENSOR_READ_PIECES, default 8) and
# gltensor-run --read-into new, against main's build in the same call:
#   ONLY=io37 bash gpu-multi/run-all.sh          ($H the pack of `RUN=run2.sh make_pack.sh`)
# Locally (llvmpipe): H=/work/main/gpu-multi/io37 IO_RUNS=5 IO_BENCH=3 IO_ROUNDS=1 IO_TESTS=0 bash .../run.sh
# 1. tests on GLES and desktop GL: test_pool's read-back tests, test_model_host_io, test_model_replay,
#    test_model_run, test_recording;
# 2. gltensor_io_bench (read-back phases and spread, 256 KB to 8 MB and three models): pieces 8 (default), 4, 1;
#    gltensor_transfer_lab's raw GL read-backs of 128 KB to 1 MB;
# 3. gltensor-run --bench N --read-back, plain and --replay: main (to_vector), the branch with --read-into vector,
#    new (the default) and new with GLTENSOR_READ_PIECES=1, alternated over rounds; then main and the branch
#    (new) once on more of torchcmp's models (no model slower?);
# 4. torchcmp.py torch: PyTorch eager and CUDA graph on the same inputs, the table (the branch's last run, new).
set -u
W=${IO_W:-/tmp/io37}; PY=${IO_PY:-python3}; RUNS=${IO_RUNS:-200}; N=${IO_BENCH:-300}; ROUNDS=${IO_ROUNDS:-3}
MINE=${IO_ONLY:-f32_cnn_32_64_64_128_112|layernorm_svtr|attention_8x300}
MORE=${IO_MORE:-three_gemm|f32_cnn_32_64_64_128_56|f32_cnn_64_128_128_256_256|softmax|layernorm_64x1025|attention_svtr}
rm -rf "$W"; mkdir -p "$W/log" "$W/out"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"; nproc
LL=${LD_LIBRARY_PATH:-}; MAINLD=$H/main/lib:${LL#*:}
step "models"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent 2>&1 | grep -v missing || echo "prepare failed"
[ -e "$W/cases.txt" ] || for m in f32_cnn_32_64_64_128_112 three_gemm; do echo "$m|$W/models/$m.onnx|200|" >> "$W/cases.txt"; done
grep -E "$MINE" "$W/cases.txt" > "$W/mine.txt"; grep -E "$MORE" "$W/cases.txt" | grep -vE "$MINE" > "$W/more.txt"
cat "$W/mine.txt" "$W/more.txt" | cut -d'|' -f1 | tr '\n' ' '; echo
if [ "${IO_TESTS:-1}" = 1 ]; then
  step "tests, GLES then desktop GL"
  for api in gles gl; do
    for t in "test_pool --gtest_filter=Pool.ToHost*:Pool.LargeRead*:Pool.ReadBacks*:Pool.ParallelCopy*" test_model_host_io \
      test_model_replay test_model_run test_recording; do
      # shellcheck disable=SC2086
      echo "$api $t: $(GLTENSOR_API=$api timeout 30 "$H/bin/"$t 2>&1 | grep -E "^\[  (PASSED|FAILED) |Failure|rror" | head -4 | tr '\n' ' ')"
    done
  done
fi
MODELS=$(grep -E "cnn|layernorm" "$W/mine.txt" | cut -d'|' -f2 | tr '\n' ' ')
step "read-back phases (gltensor_io_bench --runs $RUNS): pieces 8 (default), 4, 1"
for v in "" "GLTENSOR_READ_PIECES=4" "GLTENSOR_READ_PIECES=1"; do
  echo "--- ${v:-defaults}"
  # shellcheck disable=SC2086
  env $v timeout 25 "$H/bin/gltensor_io_bench" --runs "$RUNS" --sizes 256,484,614,1024,2048,4096,6272,8192 $MODELS 2>&1 |
    grep -v "^device" | grep -vE "reused" || echo "rc $?"
done
step "raw GL read-backs 128 KB to 1 MB (gltensor_transfer_lab: the GPU copy's cost per size)"
timeout 15 "$H/bin/gltensor_transfer_lab" 128 256 320 484 614 1024 2>&1 | grep -E "^reads|k\+wait|k\+copy  |k\+copy\+cpy|k\+8 pieces|k\+direct|wrong" | tr -s ' ' | paste -sd' ' | sed 's/reads of/\nreads of/g'
echo
bench() {  # name model args mode label cmd...
  local name=$1 model=$2 args=$3 mode=$4 label=$5; shift 5
  local rp=; [ "$mode" = replay ] && rp=--replay
  # shellcheck disable=SC2086
  echo "$label $name $mode: $("$@" "$model" $args --bench "$N" --read-back $rp 2>&1 | grep -E "^bench|rror" | cut -c1-150)"
}
step "gltensor-run --bench $N --read-back: main, branch vector / new / new with pieces 1; $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  while IFS='|' read -r name model reps args; do
    for mode in plain replay; do
      bench "$name" "$model" "$args" $mode "r$r main        " env LD_LIBRARY_PATH="$MAINLD" timeout 20 "$H/main/bin/gltensor-run"
      bench "$name" "$model" "$args" $mode "r$r vector      " timeout 20 "$H/bin/gltensor-run" --read-into vector
      bench "$name" "$model" "$args" $mode "r$r new pieces1 " env GLTENSOR_READ_PIECES=1 timeout 20 "$H/bin/gltensor-run"
      rp=; [ $mode = replay ] && rp=--replay
      # shellcheck disable=SC2086
      timeout 20 "$H/bin/gltensor-run" "$model" $args --bench "$N" --read-back $rp --output-dir "$W/out/$name" > "$W/log/$name-$mode.txt" 2>&1
      echo "r$r new         $name $mode: $(grep -E "^bench|rror" "$W/log/$name-$mode.txt" | cut -c1-150)"
    done
  done < "$W/mine.txt"
done
step "more models: main, then the branch (new)"
while IFS='|' read -r name model reps args; do
  for mode in plain replay; do
    bench "$name" "$model" "$args" $mode "main" env LD_LIBRARY_PATH="$MAINLD" timeout 20 "$H/main/bin/gltensor-run"
    rp=; [ $mode = replay ] && rp=--replay
    # shellcheck disable=SC2086
    timeout 20 "$H/bin/gltensor-run" "$model" $args --bench "$N" --read-back $rp --output-dir "$W/out/$name" > "$W/log/$name-$mode.txt" 2>&1
    echo "new  $name $mode: $(grep -E "^bench|rror" "$W/log/$name-$mode.txt" | cut -c1-150)"
  done
done < "$W/more.txt"
step "PyTorch: eager and CUDA graph (torchcmp.py torch), the branch's last run (--read-into new)"
T=$((88 - SECONDS)); [ $T -gt 40 ] && T=40; [ $T -lt 5 ] && T=5
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$MINE|$MORE" || echo "torch side: rc $?"
step "done"
