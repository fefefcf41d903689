#!/usr/bin/env bash
# small35's GPU pack (issue 21: one-kernel models against PyTorch's CUDA graph), one GPU call:
#   bash gpu-multi/small35/run.sh     ($H the pack made by make_pack.sh; under 60 s: every step
#   starts only with time left and has its own timeout)
# 1. gltensor_transfer_lab: the read-back's parts at the outputs' sizes (80, 256, 614, 904 KB);
# 2. torchcmp's table for the one-kernel rows (scripts/packs/torchcmp/run.sh, TC_ONLY), this branch's build;
# 3. where the pack has base/ (main's build): 3 rounds of this branch's and main's gltensor-run, alternated,
#    on the same models in the same call;
# 4. attention knobs (this branch): plain --read-back and the profile's GPU time;
# 5. the changed tests (test_pool's read-backs, test_nn's Attention.*, test_plans' PlanAttention.*,
#    test_model_attention) under GLES and desktop GL.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "small35 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
step "transfer lab"
# shellcheck disable=SC2086  # the sizes
timeout 8 "$H/bin/gltensor_transfer_lab" ${S35_KB:-80 256 614 904} 2>&1 | tail -60 | grep -vE "^(copy-up|up\+|up,|subdata|wc-)"
echo "transfer lab rc ${PIPESTATUS[0]}"
ONLY=${S35_ONLY:-'three_gemm|attention|layernorm|softmax|logmel'}
step "torchcmp rows: $ONLY"
TC_ONLY=$ONLY TC_W=/tmp/s35 TC_GL_UNTIL=8 TC_PROFILE_UNTIL=0 timeout 18 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^\[|^ *$" | grep -v "no time left"
if [ -d "$H/base" ] && [ -e /tmp/s35/cases.txt ]; then
  step "A/B rounds: this branch (new) and main's build (base/), alternated, plain and replayed (mean / min ms)"
  for round in 1 2 3; do
    while IFS='|' read -r name model reps args; do
      echo "$name" | grep -qE "$ONLY" || continue
      [ "$SECONDS" -gt 34 ] && echo "no time left for round $round $name" && continue
      line="round $round $name:"
      for mode in plain --replay; do
        for b in new base; do
          bin=$H/bin/gltensor-run lib=$H/lib
          [ $b = base ] && bin=$H/base/gltensor-run lib=$H/base/lib
          # shellcheck disable=SC2086
          r=$(LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} timeout 4 "$bin" "$model" $args --bench "$reps" --read-back \
            $([ $mode = plain ] || echo --replay) 2>&1 | grep -E '^bench' | sed -E 's/.*mean ([0-9.]+) ms, min ([0-9.]+) ms.*/\1 \/ \2/')
          line="$line $b ${mode#--} ${r:-?};"
        done
      done
      echo "$line"
    done < /tmp/s35/cases.txt
  done
fi
step "knobs: attention_svtr_8x168x15 (plain, --read-back; then --profile's GPU time)"
IFS='|' read -r _ model reps args < <(grep "^attention_svtr_8x168x15|" /tmp/s35/cases.txt)
for env in GLTENSOR_NONE=1 GLTENSOR_SUBGROUPS=0 GLTENSOR_ATTENTION_BQ=16; do
  [ "$SECONDS" -gt 38 ] && echo "no time left for $env" && continue
  # shellcheck disable=SC2086
  echo "$env: $(env $env timeout 3 "$H/bin/gltensor-run" "$model" $args --bench "$reps" --read-back 2>&1 |
    grep -E '^bench|rror' | cut -c1-110) | $(env $env timeout 3 "$H/bin/gltensor-run" "$model" $args --bench 100 --profile 2>&1 |
    grep -E '^GPU time' | tr -s ' ')"
done
step "the changed tests, GLES then desktop GL"
for api in gles gl; do
  for t in "test_pool Pool.*Read*:Pool.Upload*" "test_nn Attention.*" "test_plans PlanAttention.*" "test_model_attention ModelAttention.*"; do
    set -f  # (the filters are no file patterns)
    # shellcheck disable=SC2086
    set -- $t
    set +f
    [ "$SECONDS" -gt 50 ] && echo "no time left for $api $1" && continue
    echo "$api $1: $(GLTENSOR_API=$api timeout 7 "$H/bin/$1" --gtest_filter="$2" 2>&1 | grep -E '^\[  (PASSED|FAILED) |Failure|seed=' | head -6 | tr '\n' ' ')"
  done
done
step "done"
