#!/usr/bin/env bash
# host38's GPU pack (issue 21), window 4: (1) the tests of what the branch changes on the GPU (GLES 3.2, then desktop GL
# with GLTENSOR_API=gl); (2) the five small rows and three_gemm, --warmup-ms 300 --bench N --read-back --replay, 2
# rounds: main's library, the branch's, and the branch's with GLTENSOR_REPLAY_SUBMIT_AFTER=1|2 (a replay's glFlush
# after its first K dispatches) and GLTENSOR_READ_SUBMIT=1. $H the pack (make_pack.sh). Locally (llvmpipe):
#   H=/work/main/gpu-multi/host38 LD_LIBRARY_PATH=$H/lib H38_RUNS=20 H38_ONLY=logmel PY=/usr/bin/python3 bash $H/run.sh
set -u
PY=${PY:-python3}; N=${H38_RUNS:-500}; ONLY=${H38_ONLY:-.}
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "tests on the GPU (the branch's build): GLES, then GLTENSOR_API=gl"
for api in "" gl; do
  for t in test_model_replay test_model_run test_model_host_io test_recording test_pool; do
    r=$(GLTENSOR_API=$api timeout 25 "$H/bin/$t" --gtest_brief=1 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" | tr '\n' ' ')
    echo "${api:-gles} $t: $r"
  done
done
GLTENSOR_REPLAY_SUBMIT_AFTER=1 timeout 25 "$H/bin/test_model_replay" --gtest_brief=1 2>&1 | grep -E "^\[  (PASSED|FAILED) " | sed 's/^/REPLAY_SUBMIT_AFTER=1 test_model_replay: /'
GLTENSOR_READ_SUBMIT=1 timeout 25 "$H/bin/test_pool" --gtest_brief=1 2>&1 | grep -E "^\[  (PASSED|FAILED) " | sed 's/^/READ_SUBMIT=1 test_pool: /'
step "models"
W=/tmp/host38w; rm -rf "$W"; mkdir -p "$W"
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent | tail -1
grep -E "^(three_gemm|logmel_16k|lstm_s64_h64_d1|attention_svtr_8x168x15|f32_cnn_32_64_64_128_56|attention_8x300x64)\|" "$W/cases.txt" |
  grep -E "^[^|]*($ONLY)" > "$W/c.txt"
mv "$W/c.txt" "$W/cases.txt"
run() {  # label build(main|branch) env(- or A=B[,C=D]) -> a bench line per case
  local label=$1 b=$2 e=$3 bin=$H/bin/gltensor-run lib=${LD_LIBRARY_PATH:-} envs=()
  [ "$b" = main ] && lib=$H/main/lib:${LD_LIBRARY_PATH:-}  # the branch's gltensor-run (--warmup-ms) on main's library
  [ "$e" != - ] && IFS=, read -r -a envs <<< "$e"
  while IFS='|' read -r name model _ args <&3; do
    [ "$SECONDS" -gt "${H38_GL_UNTIL:-84}" ] && echo "$name $label: no time left" && continue
    # shellcheck disable=SC2086
    r=$(env LD_LIBRARY_PATH="$lib" "${envs[@]}" timeout 15 "$bin" "$model" $args --warmup-ms 300 --bench "$N" --read-back --replay 2>&1 |
      grep -E "^bench|rror" | sed -e 's/ (outputs read back, new)//' -e 's/, process CPU min [0-9.]* ms//' | cut -c1-170)
    printf '%-26s %-22s %s\n' "$name" "$label" "$r"
  done 3< "$W/cases.txt"
}
step "A/B: --warmup-ms 300 --bench $N --read-back --replay, 2 rounds"
for round in 1 2; do
  run "main r$round" main -
  run "branch r$round" branch -
  run "submit after 1 r$round" branch GLTENSOR_REPLAY_SUBMIT_AFTER=1
  run "submit after 2 r$round" branch GLTENSOR_REPLAY_SUBMIT_AFTER=2
  run "read submit r$round" branch GLTENSOR_READ_SUBMIT=1
done
step "done"
