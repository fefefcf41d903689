#!/usr/bin/env bash
# rec3's GPU pack (issue 21: the OCR page's recognizer): main's build (main/) and rec3's (bin/, lib/)
# alternating in one call. Needs $H (this folder), $OUT. Unpacks into /tmp/rec3-run.
. "$H/common.sh"  # the prologue (unpack, MINE/MAIN, step) and page/rec

step "rec3: test_reduce Softmax.* (NVIDIA)"
LD_LIBRARY_PATH=$MINE timeout ${TT:-45} "$H/bin/test_reduce" --gtest_filter="${TF:-Softmax.*}" 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |differ|seed=" | head -30

step "rows: gltensor_bench BM_rows/softmax (then argmax, amax) (rec3's bench binary on main's library, then on rec3's)"
for who in MAIN MINE MAIN MINE; do
  f='BM_rows/softmax'; [ -n "${ARGS_DONE:-}" ] || f='BM_rows/(softmax|argmax|amax)'
  echo "-- $who"
  LD_LIBRARY_PATH=${!who} timeout ${TT:-25} "$H/bin/gltensor_bench" --benchmark_filter="$f" 2>&1 | grep -E "BM_rows|rror"
  [ $who = MINE ] && ARGS_DONE=1
done

step "rec alone, replayed: gltensor-run --bench ${RB:-100} --replay (main, rec3, main, rec3)"
for shape in ${SHAPES:-6x3x48x1344 16x3x48x832}; do
  for who in MAIN MINE MAIN MINE; do
    echo "-- $who $shape: $(rec $who ${TT:-25} $shape --bench ${RB:-100} --replay | grep -E "^bench:|rror")"
  done
done

step "the page: gltensor_ocr_bench --only ocr960 --runs ${PR:-20} --images gpu --ort none --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0"
for who in MAIN MINE MAIN MINE; do
  echo "-- $who"
  page $who ${TP:-45} --runs ${PR:-20} --rec-call-cost 6000 | grep -E "^\||rror" | grep -v "^|---"
done

step "rec3: the page by call cost (one process; replay, no cls, det 640)"
page MINE ${TP:-45} --runs ${PR:-20} --rec-call-cost 1500 --rec-call-cost 3000 --rec-call-cost 4500 --rec-call-cost 6000 \
  --rec-call-cost 9000 | grep -E "^\||rror" | grep -v "^|---"

step "rec3: the page's GPU profile (GLTENSOR_PROFILE=1, --runs 5, the same options)"
GLTENSOR_PROFILE=1 page MINE ${TP:-45} --runs 5 --rec-call-cost 6000 > $W/pageprof.txt
grep -E "^\| OCR|rror" $W/pageprof.txt; sed -n '/^gltensor profile/,$p' $W/pageprof.txt | head -70

PS=${PSHAPE:-6x3x48x1344}
step "GPU profile by op type at $PS (${PB:-10} runs): main, rec3"
for who in MAIN MINE; do
  echo "-- $who"
  rec $who ${TT:-40} $PS --bench ${PB:-10} --profile > $W/prof.txt
  grep -E "^bench:|rror" $W/prof.txt; sed -n '/^profile over/,$p' $W/prof.txt | head -40
done

TS=${TSHAPE:-16x3x48x832}
step "rec3: GPU time per node at $TS (GLTENSOR_MODEL_TRACE=1 --profile, 3 runs) -> \$OUT/rec3-trace.txt"
GLTENSOR_MODEL_TRACE=1 rec MINE ${TT:-40} $TS --bench 3 --profile > "$OUT/rec3-trace.txt"
sed -n '/^profile over/,$p' "$OUT/rec3-trace.txt" | head -60
step done
