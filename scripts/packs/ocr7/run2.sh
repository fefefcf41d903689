#!/usr/bin/env bash
# ocr7's second GPU pack (issue 21): the page with the bench's second warm-up run (with replay the
# captured one; before, it was the first of the timed runs: the outliers of 18-31 ms), main's
# build against ocr7's alternating, 4 processes each; the recognizer's GPU time against its wall
# time at a small and a page-sized shape (what a call's fixed 1.0 ms is).
. "$H/common.sh"  # the shared unpacking (moved there after the runs; the same steps)
REC="$M/ch_PP-OCRv4_rec_infer.onnx"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr7 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"
filt() { grep -E "^\| (OCR|det|DB|rec|total)|rror|^line" | sed -e 's/.*lines read otherwise than the first row/  .../' | cut -c1-300; }

step "the page, alternating main / ocr7, 4 rounds: gltensor_ocr_bench $PAGE"
for r in 1 2 3 4; do
  for who in MAIN MINE; do
    echo "-- $who"
    B=BMAIN; [ $who = MINE ] && B=BMINE
    LD_LIBRARY_PATH=${!who} timeout 30 ${!B}/gltensor_ocr_bench $PAGE 2>&1 | filt > $W/page.txt
    grep -v "^line" $W/page.txt; grep "^line" $W/page.txt > $W/text-$who
    [ -e $W/text-MAIN ] && echo "text: main and $who $(cmp -s $W/text-MAIN $W/text-$who && echo same || echo DIFFER)"
  done
done
cat $W/text-MINE

step "rec's GPU time against its wall time (ocr7; GLTENSOR_MODEL_TRACE=1 gltensor-run REC --shape x=S --bench 20 --replay --profile) -> \$OUT/ocr7-trace.txt"
for shp in 1x3x48x320 16x3x48x832; do
  echo "##### $shp" >> "$OUT/ocr7-trace.txt"
  GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=$MINE timeout 30 "$BMINE/gltensor-run" "$REC" --shape x=$shp --bench 20 --replay --profile >> "$OUT/ocr7-trace.txt" 2>&1
  echo "-- $shp plain: $(LD_LIBRARY_PATH=$MINE timeout 15 "$BMINE/gltensor-run" "$REC" --shape x=$shp --bench 50 --replay 2>&1 | grep -E "^bench:|rror" | tr '\n' ' ' | cut -c1-200)"
done
awk '/^##### /{w=$2} /GPU time|^bench:|^dispatches|^[a-z_0-9]+\.comp /{print w, $0}' "$OUT/ocr7-trace.txt" | cut -c1-160 | head -60
step done
