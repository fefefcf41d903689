#!/usr/bin/env bash
# ocr9's third GPU pack (issue 21): the branch's head (run2's plus the threshold's row strips on
# OpenCV's thread pool, and the bench's --cv-threads) against main's build: test_ocr_pipeline on the
# H100's host, then the page alternating main / ocr9 / ocr9 with --cv-threads 1 (db_boxes on the
# calling thread alone: the planner's change without the DB stage's threads), 4 rounds.
# Packed with NAME=ocr9 RUN=run3.sh EXTRA="build/tests/test_ocr_pipeline" bash scripts/packs/ocr7/make_pack.sh.
. "$H/common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr9 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT"); host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
step "test_ocr_pipeline on the H100's host"
LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/test_ocr_pipeline 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure|seed=" | head -6
BASE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --det-limit 640 --replay 1 --cls 0 --rec-batch 0 --rec-call-cost 6000 --text"
step "the page, alternating main / ocr9 / ocr9 --cv-threads 1, 4 rounds: gltensor_ocr_bench $BASE"
filt() { grep -E "^\| total|^medians|^DB boxes|rror" | sed -e 's/; first run.*//' | cut -c1-200; }
for r in 1 2 3 4; do
  for v in main mine mine1; do
    if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$MINE; B=$BMINE; fi
    X=""; [ $v = mine1 ] && X="--cv-threads 1"
    LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $BASE $X > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v-$r
    echo "-- $v (round $r): text against main's first: $(cmp -s $W/text-main-1 $W/text-$v-$r && echo same || echo DIFFERS); $(grep -oE '[0-9]+ of [0-9]+ lines found, [0-9.]+% of characters read' $W/p.txt)"; filt < $W/p.txt
  done
done
step done
