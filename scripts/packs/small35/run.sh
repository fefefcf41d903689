#!/usr/bin/env bash
# small35's GPU pack (issue 21: one-kernel models against PyTorch's CUDA graph), one GPU call:
#   bash gpu-multi/small35/run.sh     ($H the pack made by make_pack.sh; at most ~140 s: every step
#   starts only with time left and has its own timeout)
# 1. gltensor_transfer_lab: the read-back's parts at the outputs' sizes (80, 256, 614, 904 KB);
# 2. torchcmp's table for the one-kernel rows (scripts/packs/torchcmp/run.sh, TC_ONLY), this branch's build,
#    with gltensor-run --profile of the rows slower than the CUDA graph;
# 3. where the pack has base/ (main's build): 3 rounds of this branch's and main's gltensor-run, alternated,
#    on the same models in the same call;
# 4. attention knobs (this branch): plain --read-back and the profile's GPU time.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "small35 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
step "transfer lab"
# shellcheck disable=SC2086  # the sizes
timeout 30 "$H/bin/gltensor_transfer_lab" ${S35_KB:-80 256 614 904} 2>&1 | tail -52
echo "transfer lab rc ${PIPESTATUS[0]}"
ONLY=${S35_ONLY:-'three_gemm|attention|layernorm|softmax|logmel'}
step "torchcmp rows: $ONLY"
TC_ONLY=$ONLY TC_W=/tmp/s35 TC_GL_UNTIL=40 TC_PROFILE_UNTIL=65 TC_PROFILE_LINES=30 timeout 80 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^\[|^ *$" | grep -v "no time left"
if [ -d "$H/base" ] && [ -e /tmp/s35/cases.txt ]; then
  step "A/B rounds: this branch (new) and main's build (base/), alternated, plain and replayed (mean / min ms)"
  for round in 1 2 3; do
    while IFS='|' read -r name model reps args; do
      echo "$name" | grep -qE "$ONLY" || continue
      [ "$SECONDS" -gt 110 ] && echo "no time left for round $round $name" && continue
      line="round $round $name:"
      for mode in plain --replay; do
        for b in new base; do
          bin=$H/bin/gltensor-run lib=$H/lib
          [ $b = base ] && bin=$H/base/gltensor-run lib=$H/base/lib
          # shellcheck disable=SC2086
          r=$(LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} timeout 8 "$bin" "$model" $args --bench "$reps" --read-back \
            $([ $mode = plain ] || echo --replay) 2>&1 | grep -E '^bench' | sed -E 's/.*mean ([0-9.]+) ms, min ([0-9.]+) ms.*/\1 \/ \2/')
          line="$line $b ${mode#--} ${r:-?};"
        done
      done
      echo "$line"
    done < /tmp/s35/cases.txt
  done
fi
step "knobs: attention (plain, --read-back; then --profile's GPU time)"
for name in attention_svtr_8x168x15 attention_8x300x64; do
  IFS='|' read -r _ model reps args < <(grep "^$name|" /tmp/s35/cases.txt)
  for env in GLTENSOR_NONE=1 GLTENSOR_SUBGROUPS=0 GLTENSOR_ATTENTION_BQ=16 GLTENSOR_ATTENTION_KEYS=32; do
    [ "$SECONDS" -gt 118 ] && echo "no time left for $name $env" && continue
    # shellcheck disable=SC2086
    echo "$name $env: $(env $env timeout 5 "$H/bin/gltensor-run" "$model" $args --bench "$reps" --read-back 2>&1 |
      grep -E '^bench|rror' | cut -c1-120) | $(env $env timeout 5 "$H/bin/gltensor-run" "$model" $args --bench 100 --profile 2>&1 |
      grep -E '^GPU time|\.comp ' | tr '\n' ' ' | tr -s ' ')"
  done
done
step "done"
