#!/usr/bin/env bash
# lstm35's last window (issue 21), under 60 s: test_rnn on GLES and desktop GL, each test in its own process with
# unbuffered output (windows 2 and 3 printed none of its lines: a crash loses a piped, buffered stdout), then the
# LSTM rows once more, main's libgltensor.so.0 and the branch's alternating (plain and --replay, --read-back).
#   bash gpu-multi/lstm35/run.sh   ($H: the pack; make_pack.sh with WINDOW=4 makes it)
set -u
echo "commit: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
SB=""; command -v stdbuf > /dev/null && SB="stdbuf -o0 -e0"
L=/tmp/lstm35libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain
for api in gles gl; do
  echo "=== [$SECONDS s] test_rnn, GLTENSOR_API=$api, one process per test"
  for t in $("$H/bin/test_rnn" --gtest_list_tests | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
    [ "$SECONDS" -gt 34 ] && echo "no time left for $t" && continue
    out=$(GLTENSOR_API=$api timeout 15 $SB "$H/bin/test_rnn" --gtest_filter="$t" 2>&1); rc=$?
    echo "$api $t rc=$rc $(echo "$out" | grep -cE '^\[       OK') ok"
    [ $rc -ne 0 ] && echo "$out" | grep -vE '^(Running main|Note: Google)' | tail -15 | cut -c1-240
  done
done
echo "=== [$SECONDS s] LSTM rows: main / branch alternating (gltensor-run --bench 100 --read-back, random inputs seed 7)"
timeout 20 "$H/bin/gltensor_model_bench" --save-models /tmp/lstm35m > /dev/null 2>&1 || echo "save-models failed"
run() {  # lib label model args...
  local lib=$1 label=$2 model=$3; shift 3
  echo "$label $(basename "$model" .onnx) $(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 10 "$H/bin/gltensor-run" "$model" "$@" 2>&1 | grep -E '^bench|rror' | cut -c1-150)"
}
for m in s64_h64_d1:64 s64_h256_d2:64 s256_h128_d1:256 s256_h256_d2:256; do
  [ "$SECONDS" -gt 48 ] && echo "no time left for $m" && continue
  f=/tmp/lstm35m/lstm_${m%%:*}.onnx; T=${m##*:}
  for mode in "" "--replay"; do
    run "$MAIN" "main${mode}" "$f" --shape "x=${T}x1x64" --seed 7 --bench 100 --read-back $mode
    run "$H/lib" "branch${mode}" "$f" --shape "x=${T}x1x64" --seed 7 --bench 100 --read-back $mode
  done
done
echo "=== [$SECONDS s] replayed: outputs that more than 8 dispatches write (Y) kept in device memory (libprobe, patch not committed) against the branch"
if [ -d "$L/libprobe" ]; then
  for round in 1; do
    for m in s64_h64_d1:64 s64_h256_d2:64 s256_h128_d1:256 s256_h256_d2:256; do
      [ "$SECONDS" -gt 56 ] && continue
      f=/tmp/lstm35m/lstm_${m%%:*}.onnx; T=${m##*:}
      run "$H/lib" "branch--replay" "$f" --shape "x=${T}x1x64" --seed 7 --bench 100 --read-back --replay
      run "$L/libprobe" "probe-Y-device--replay" "$f" --shape "x=${T}x1x64" --seed 7 --bench 100 --read-back --replay
    done
  done
fi
echo "=== [$SECONDS s] done"
