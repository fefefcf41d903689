#!/usr/bin/env bash
# rt40's GPU pack (issue 21: timer queries on desktop GL, the transfer note after a read-back, attention_block's
# default range). The lead runs it as `ONLY=rt40 bash gpu-multi/run-all.sh` ($H the pack of make_pack.sh;
# builds.tar.xz unpacked into $W/b: bin + lib the branch's, main/bin + main/lib main's). In one call (~100 s; nothing
# new starts past 60 s for the tests, 90 s for the latency; the attention rounds end by ATTN_END=135 s):
#   1. tests, GLES and desktop GL: test_profiler, test_pool's transfer-note tests, test_interop_state (a profiler
#      family in adopted contexts), test_nn Attention.Block* / FusedKernel*, test_plans PlanAttention.*; with the
#      branch's library, then the new
#      test_profiler / test_pool tests with main's library (they should fail there: what they catch)
#   2. gltensor-run --profile --bench 20 on PP-OCR's cls model, GLES and desktop GL, main's and the branch's
#   3. gltensor_latency_bench, GLES: main's library and the branch's (to_vector of a finished tensor, + synchronize)
#   4. attention: gltensor_attention_bench over the corners of the block kernel's range (216 cases), rounds of
#      GLTENSOR_ATTENTION_BLOCK=1, =0, the branch's default and main's default (main's library), GLES; then
#      attn_table.py: per case the GPU time of block / the other kernel, and what each default chose
set -u
W=/tmp/rt40w; PY=${PY:-python3}; ROUNDS=${ROUNDS:-2}; REPS=${REPS:-30}
rm -rf "$W"; mkdir -p "$W/log" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; LL=${LD_LIBRARY_PATH:-}; BR=$B/lib:$LL; MN=$B/main/lib:$LL
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
brief() { grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|seed=|rror" | head -${1:-8} | tr '\n' ' ' | cut -c1-600; }

step "1. tests (branch's library), GLES then desktop GL"
POOL='Pool.AReadBackClearsTheTransferNote:Pool.AnUploadWithNoDispatchAfterItIsPendingUntilSynchronize:Pool.SynchronizeLeavesNoUploadRunning'
for api in gles gl; do
  for t in "test_profiler:*" "test_pool:$POOL" "test_interop_state:*" "test_nn:Attention.Block*:Attention.FusedKernel*" \
    "test_plans:PlanAttention.*"; do
    [ "$SECONDS" -gt ${TESTS_UNTIL:-60} ] && { echo "$api $t: no time left"; continue; }
    echo "$api ${t%%:*}: $(cd "$W" && GLTENSOR_API=$api LD_LIBRARY_PATH=$BR timeout 25 "$B/bin/${t%%:*}" \
      --gtest_filter="${t#*:}" --gtest_brief=1 2>&1 | brief)"
  done
done
echo "--- the new tests with main's library (expected to fail: timer queries on desktop GL, the transfer note)"
for api in gles gl; do
  echo "main $api test_profiler: $(cd "$W" && GLTENSOR_API=$api LD_LIBRARY_PATH=$MN timeout 15 "$B/bin/test_profiler" --gtest_brief=1 2>&1 | brief 4)"
  echo "main $api test_pool: $(cd "$W" && GLTENSOR_API=$api LD_LIBRARY_PATH=$MN timeout 15 "$B/bin/test_pool" \
    --gtest_filter=Pool.AReadBackClearsTheTransferNote --gtest_brief=1 2>&1 | brief 4)"
done

step "2. gltensor-run --profile --bench 20, PP-OCR cls 1x3x48x192"
for api in gles gl; do
  for b in main branch; do
    bin=$B/bin/gltensor-run l=$BR; [ $b = main ] && bin=$B/main/bin/gltensor-run l=$MN
    out=$(cd "$W" && GLTENSOR_API=$api LD_LIBRARY_PATH=$l timeout 20 "$bin" "$H/models/cls.onnx" --shape x=1x3x48x192 \
      --profile --bench 20 2>&1)
    echo "$api $b: $(grep -E "^bench:|^GPU time|no timer|rror" <<< "$out" | cut -c1-160 | tr '\n' ' ')"
    grep -A4 -E "^kernel " <<< "$out" | sed 's/^/    /'
  done
done

step "3. gltensor_latency_bench, GLES and GL: main's library, then the branch's"
for api in gles gl; do
  for b in main branch; do
    l=$BR; [ $b = main ] && l=$MN
    [ "$SECONDS" -gt 90 ] && { echo "$api $b: no time left"; continue; }
    echo "--- $api $b"
    GLTENSOR_API=$api LD_LIBRARY_PATH=$l timeout 15 "$B/bin/gltensor_latency_bench" 2>&1 | grep -E "synchronize|to_vector|rror"
  done
done

step "4. attention corners: GPU us per call, $ROUNDS rounds of block=1, block=0, branch default, main default (GLES)"
# (each case's line printed as it comes, "a VARIANT-ROUND CASE KERNEL GPU_US WALL_US", so that a run cut short keeps
# what it measured; each process limited to what is left of ATTN_END s)
for r in $(seq 1 "$ROUNDS"); do
  for v in block1 block0 branch main; do
    tl=$((${ATTN_END:-135} - SECONDS)); [ $tl -gt 40 ] && tl=40
    [ $tl -lt 5 ] && { echo "round $r $v: no time left"; continue; }
    envs=() l=$BR
    case $v in
      block1) envs=(GLTENSOR_ATTENTION_BLOCK=1) ;;
      block0) envs=(GLTENSOR_ATTENTION_BLOCK=0) ;;
      main) l=$MN ;;
    esac
    (set -o pipefail; cd "$W" && env "${envs[@]}" GLTENSOR_API=gles LD_LIBRARY_PATH=$l timeout $tl \
      "$B/bin/gltensor_attention_bench" --reps "$REPS" ${ATTN_CASES:-} 2>&1 | tee "$W/log/attn-$v-$r.txt" |
      awk -v t="$v-$r" '/^case/ {print "a", t, $2, $4, $6, $8}') || echo "round $r $v: rc $?"
    echo "round $r $v: $(grep -c '^case' "$W/log/attn-$v-$r.txt") cases; $(grep -m1 '^device' "$W/log/attn-$v-$r.txt")"
  done
done
"$PY" "$H/attn_table.py" "$W/log"
step done
