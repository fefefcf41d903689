#!/usr/bin/env bash
# ocr8's first GPU pack (issue 21): where the page's rec stage (8.2 ms, two replayed calls) goes:
# each rec shape's GPU time summed over its dispatches (eager, timer queries: --profile) against a
# replayed call's wall time and the host's time inside Model::run; then the page with the replays'
# commands submitted early (lib2: glFlush after a replay's Nth dispatch, GLTENSOR_OCR8_EARLY=N, an
# uncommitted experiment: scripts/packs/ocr8/early_flush.patch against cdda1eb) against main's build,
# alternating, 3 processes each.
. "$H/common.sh"  # scripts/packs/ocr7/common.sh, packed by NAME=ocr8 bash scripts/packs/ocr7/make_pack.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr8 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
REC=$M/ch_PP-OCRv4_rec_infer.onnx
for s in 16x3x48x832 9x3x48x1376; do
  step "rec $s replayed, main's build: gltensor-run REC --shape x=$s --bench 50 --replay (2 processes)"
  for r in 1 2; do LD_LIBRARY_PATH=$MAIN timeout 30 $BMAIN/gltensor-run $REC --shape x=$s --bench 50 --replay 2>&1 | grep -E "^bench|^dispatches|rror"; done
  step "rec $s eager, GPU time per dispatch summed: gltensor-run REC --shape x=$s --bench 10 --profile"
  LD_LIBRARY_PATH=$MAIN timeout 40 $BMAIN/gltensor-run $REC --shape x=$s --bench 10 --profile 2>&1 | grep -vE "^ *$" | head -60 | cut -c1-160
done
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"
filt() { grep -E "^\| (OCR|det|DB|rec|total)|^medians|rror" | sed -e 's/; first run.*//' | cut -c1-300; }
step "the page, alternating: main's build, lib2 with GLTENSOR_OCR8_EARLY=0 (main's code), 4, 16; 3 rounds: gltensor_ocr_bench $PAGE"
for r in 1 2 3; do
  for v in main e0 e4 e16; do
    if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$LIB2; B=$BMINE; fi
    GLTENSOR_OCR8_EARLY=${v#e} LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v
    echo "-- $v: text $(cmp -s $W/text-main $W/text-$v && echo same || echo DIFFER)"; filt < $W/p.txt
  done
done
cat $W/text-main
step done
