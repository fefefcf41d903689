#!/usr/bin/env bash
# host38's GPU pack (issue 21), window 4 (the last, <= 60 s): (1) the test programs of what the branch changes, on
# GLES 3.2 (and two on desktop GL, GLTENSOR_API=gl); (2) the final A/B, --warmup-ms 300 --bench N --read-back --replay,
# 2 rounds: main's library against the branch's on the five small rows, and GLTENSOR_REPLAY_SUBMIT_AFTER=1|2 (a
# replay's glFlush after its first K dispatches) on the multi-dispatch rows (the CNN, three LSTMs).
# $H the pack (make_pack.sh). Locally (llvmpipe):
#   H=/work/main/gpu-multi/host38 LD_LIBRARY_PATH=$H/lib H38_RUNS=20 H38_ONLY=logmel PY=/usr/bin/python3 bash $H/run.sh
set -u
PY=${PY:-python3}; N=${H38_RUNS:-500}; ONLY=${H38_ONLY:-.}
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "tests on the GPU (the branch's build)"
t() {  # api(gles|gl) env(-|A=B) program
  local e=() r
  [ "$2" != - ] && e=("$2")
  r=$(env GLTENSOR_API="${1/gles/}" "${e[@]}" timeout 20 "$H/bin/$3" --gtest_brief=1 2>&1 |
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" | tr '\n' ' ')
  echo "$1 $2 $3: $r"
}
for p in test_model_replay test_model_run test_model_host_io test_recording test_pool; do t gles - $p; done
t gl - test_model_replay
t gl - test_pool
t gles GLTENSOR_REPLAY_SUBMIT_AFTER=1 test_model_replay
step "models"
W=/tmp/host38w; rm -rf "$W"; mkdir -p "$W"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent | tail -1
run() {  # label build(main|branch) env(- or A=B[,C=D]) rows(regex) -> a bench line per case
  local label=$1 b=$2 e=$3 rows=$4 bin=$H/bin/gltensor-run lib=${LD_LIBRARY_PATH:-} envs=()
  [ "$b" = main ] && lib=$H/main/lib:${LD_LIBRARY_PATH:-}  # the branch's gltensor-run (--warmup-ms) on main's library
  [ "$e" != - ] && IFS=, read -r -a envs <<< "$e"
  while IFS='|' read -r name model _ args <&3; do
    echo "$name" | grep -qE "$rows" || continue
    echo "$name" | grep -qE "$ONLY" || continue
    [ "$SECONDS" -gt "${H38_GL_UNTIL:-56}" ] && echo "$name $label: no time left" && continue
    # shellcheck disable=SC2086
    r=$(env LD_LIBRARY_PATH="$lib" "${envs[@]}" timeout 15 "$bin" "$model" $args --warmup-ms 300 --bench "$N" --read-back --replay 2>&1 |
      grep -E "^bench|rror" | sed -e 's/ (outputs read back, new)//' -e 's/, process CPU min [0-9.]* ms//' | cut -c1-170)
    printf '%-26s %-22s %s\n' "$name" "$label" "$r"
  done 3< "$W/cases.txt"
}
five='^(logmel_16k|lstm_s64_h64_d1|attention_svtr_8x168x15|f32_cnn_32_64_64_128_56|attention_8x300x64)$'
multi='^(f32_cnn_32_64_64_128_56|lstm_s64_h64_d1|lstm_s64_h256_d2|lstm_s256_h128_d1)$'
step "final A/B: --warmup-ms 300 --bench $N --read-back --replay, 2 rounds"
for round in 1 2; do
  run "main r$round" main - "$five"
  run "branch r$round" branch - "$five"
  run "main r$round" main - '^(lstm_s64_h256_d2|lstm_s256_h128_d1)$'
  run "branch r$round" branch - '^(lstm_s64_h256_d2|lstm_s256_h128_d1)$'
  run "submit after 1 r$round" branch GLTENSOR_REPLAY_SUBMIT_AFTER=1 "$multi"
  run "submit after 2 r$round" branch GLTENSOR_REPLAY_SUBMIT_AFTER=2 "$multi"
done
step "done"
