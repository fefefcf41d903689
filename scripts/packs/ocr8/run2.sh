#!/usr/bin/env bash
# ocr8's second GPU pack (issue 21): the page with the recognizer's two batches in one
# Model::run_many (their replays interleaved under shared barriers: Recording::replay_together)
# against main's build (one replayed run() per batch), alternating, 4 processes each, the text
# compared.
. "$H/common.sh"  # scripts/packs/ocr7/common.sh, packed by NAME=ocr8 bash scripts/packs/ocr7/make_pack.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr8 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"
filt() { grep -E "^\| (OCR|det|DB|rec|total)|^medians|rror" | sed -e 's/; first run.*//' | cut -c1-300; }
step "the page, alternating main / ocr8, 4 rounds: gltensor_ocr_bench $PAGE"
for r in 1 2 3 4; do
  for v in main mine; do
    if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$MINE; B=$BMINE; fi
    LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v
    echo "-- $v: text $(cmp -s $W/text-main $W/text-$v && echo same || echo DIFFER)"; filt < $W/p.txt
  done
done
cat $W/text-mine
step done
