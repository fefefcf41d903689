#!/usr/bin/env bash
# host38's GPU pack (issue 21), window 3: the small rows' spread was a cold start (window 2: torchcmp's 200 runs after
# 20 warm-ups in a fresh process run their first 40-60 slower, block means e.g. LSTM 0.112 0.114 0.129 then 0.077; after
# 300 ms of warm-up runs flat). $H the pack (make_pack.sh). Locally (llvmpipe):
#   H=/work/main/gpu-multi/host38 LD_LIBRARY_PATH=$H/lib H38_RUNS=20 H38_ONLY=logmel PY=/usr/bin/python3 bash $H/run.sh
# 1. torchcmp's table (scripts/packs/torchcmp/run.sh as torchcmp.sh) with TC_WARMUP_MS=300 (gltensor-run --warmup-ms
#    300 and PyTorch's warm-ups likewise, eager and graph) on 12 rows (the five, three_gemm, the LSTMs, LayerNorm,
#    Softmax; under the lead's 90 s), the branch's build;
# 2. A/B on the five small rows, --warmup-ms 300 --bench N --read-back --replay: main's build, the branch's, the
#    branch's with GLTENSOR_READ_SUBMIT=1 (a read through the mapped read buffer submits its batch at once), 2 rounds.
set -u
PY=${PY:-python3}; N=${H38_RUNS:-500}; ONLY=${H38_ONLY:-.}
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "torchcmp (TC_WARMUP_MS=300; the branch's build)"
env TC_W=/tmp/host38tc TC_PY="$PY" TC_ONLY="${H38_TC_ONLY:-^(three_gemm|f32_cnn_32_64_64_128_56|lstm|logmel|attention|layernorm|softmax)}" TC_WARMUP_MS=300 \
  TC_GL_UNTIL=${H38_TC_GL_UNTIL:-40} TC_PROFILE_UNTIL=0 ${H38_RUNS:+TC_REPS=$H38_RUNS} timeout 75 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^(f32|qdq|lstm|logmel|attention|layernorm|softmax|three|det|rec|cls)[^|]*: (plain|replay|torch) "
W=/tmp/host38w; rm -rf "$W"; mkdir -p "$W"
cp -r /tmp/host38tc/models /tmp/host38tc/inputs "$W/" 2> /dev/null
grep -E "^(logmel_16k|lstm_s64_h64_d1|attention_svtr_8x168x15|f32_cnn_32_64_64_128_56|attention_8x300x64)\|" /tmp/host38tc/cases.txt |
  grep -E "^[^|]*($ONLY)" > "$W/cases.txt"
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
step "A/B on the five small rows: --warmup-ms 300 --bench $N --read-back --replay"
for round in 1 2; do
  run "main r$round" main -
  run "branch r$round" branch -
  run "read submit r$round" branch GLTENSOR_READ_SUBMIT=1
done
step "done"
