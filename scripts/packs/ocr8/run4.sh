#!/usr/bin/env bash
# ocr8's fourth GPU pack (issue 21): the cut into 4 recognizer calls (call cost 1500), which run3.sh
# found 0.4 ms faster than the 2-call cut with ocr8's interleaved calls but reading 2 lines otherwise:
# its text printed, and its time on main's build against ocr8's (alternating, 3 rounds), next to the
# page's row (call cost 6000) alternating the same way.
. "$H/common.sh"  # scripts/packs/ocr7/common.sh, packed by NAME=ocr8 bash scripts/packs/ocr7/make_pack.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr8 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
BASE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --det-limit 640 --replay 1 --cls 0 --rec-batch 0 --text"
filt() { grep -E "^\| (OCR|rec: upload|total)|^medians|rror" | sed -e 's/; first run.*//' | cut -c1-420; }
step "alternating main / ocr8 at call cost 6000 then 1500, 3 rounds: gltensor_ocr_bench $BASE --rec-call-cost C"
for r in 1 2 3; do
  for c in 6000 1500; do
    for v in main mine; do
      if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$MINE; B=$BMINE; fi
      LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $BASE --rec-call-cost $c > $W/p.txt 2>&1
      grep "^line" $W/p.txt > $W/text-$v-$c
      echo "-- $v, call cost $c: text against main's at 6000: $(cmp -s $W/text-main-6000 $W/text-$v-$c && echo same || echo DIFFER)"; filt < $W/p.txt
    done
  done
done
echo "the 4-call cut's text against the 2-call cut's (ocr8):"; diff $W/text-mine-6000 $W/text-mine-1500
echo "main's 4-call text against ocr8's:"; cmp $W/text-main-1500 $W/text-mine-1500 && echo same
step done
