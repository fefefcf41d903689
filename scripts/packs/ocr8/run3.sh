#!/usr/bin/env bash
# ocr8's third GPU pack (issue 21): run2.sh's comparison again at the branch's last code (the page,
# main / ocr8 alternating, 3 rounds), then ocr8's page at other cuts of the lines into recognizer
# calls (call costs 6000 4500 3000 2000 1500 with no line limit, and at most 13 / 9 / 7 lines a call
# at call cost 6000; one process each, twice; rows after the first say how many lines read
# otherwise than the first row's): whether cuts into more calls pay now that the calls' replays
# interleave.
. "$H/common.sh"  # scripts/packs/ocr7/common.sh, packed by NAME=ocr8 bash scripts/packs/ocr7/make_pack.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr8 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
BASE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --det-limit 640 --replay 1 --cls 0"
PAGE="$BASE --rec-batch 0 --rec-call-cost 6000 --text"
filt() { grep -E "^\| (OCR|det|DB|rec|total)|^medians|rror" | sed -e 's/; first run.*//' | cut -c1-300; }
step "the page, alternating main / ocr8, 3 rounds: gltensor_ocr_bench $PAGE"
for r in 1 2 3; do
  for v in main mine; do
    if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$MINE; B=$BMINE; fi
    LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v
    echo "-- $v: text $(cmp -s $W/text-main $W/text-$v && echo same || echo DIFFER)"; filt < $W/p.txt
  done
done
rows() { grep -E "^\| OCR|^medians|rror" | sed -e 's/; first run.*//; s/99.7% of characters read, //' | cut -c1-600; }
for r in 1 2; do
  step "ocr8, cuts by call cost (no line limit): gltensor_ocr_bench $BASE --rec-batch 0 --rec-call-cost 6000 --rec-call-cost 4500 --rec-call-cost 3000 --rec-call-cost 2000 --rec-call-cost 1500"
  LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/gltensor_ocr_bench $BASE --rec-batch 0 --rec-call-cost 6000 --rec-call-cost 4500 --rec-call-cost 3000 --rec-call-cost 2000 --rec-call-cost 1500 2>&1 | rows
  step "ocr8, at most N lines a call: gltensor_ocr_bench $BASE --rec-call-cost 6000 --rec-batch 0 --rec-batch 13 --rec-batch 9 --rec-batch 7"
  LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/gltensor_ocr_bench $BASE --rec-call-cost 6000 --rec-batch 0 --rec-batch 13 --rec-batch 9 --rec-batch 7 2>&1 | rows
done
step done
