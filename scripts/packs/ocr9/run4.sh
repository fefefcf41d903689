#!/usr/bin/env bash
# ocr9's last GPU pack (issue 21): the branch's head (the recognizer's 1x1 products' tiles, d9d3900; db_boxes'
# candidates on OpenCV's thread pool, 4f635b6; the threshold's row strips reverted, 889226e) against main's
# build, the page alternating main / ocr9 / ocr9's bench with c29737f's row strips (the same library), 6 rounds.
# Packed with STRIPS=/tmp/ocr9-bench-strips bash scripts/packs/ocr9/make_pack4.sh.
. "$H/common.sh"
cp "$HP/cls.onnx" $M/ch_ppocr_mobile_v2.0_cls_infer.onnx  # loaded by the bench, not run (--cls 0)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr9 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT"); host: $(nproc) CPUs"
BASE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --det-limit 640 --replay 1 --cls 0 --rec-batch 0 --rec-call-cost 6000 --text"
step "the page, alternating main / ocr9 / ocr9 with the row strips, 6 rounds: gltensor_ocr_bench $BASE"
filt() { grep -E "^\| total|^medians|^DB boxes alone|rror" | sed -e 's/; first run.*//' | cut -c1-200; }
for r in 1 2 3 4 5 6; do
  for v in main mine strips; do
    L=$MINE; B=$BMINE/gltensor_ocr_bench
    [ $v = main ] && L=$MAIN && B=$BMAIN/gltensor_ocr_bench
    [ $v = strips ] && B=$BMINE/gltensor_ocr_bench_strips
    LD_LIBRARY_PATH=$L timeout 25 $B $BASE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v-$r
    echo "-- $v (round $r): text against main's first: $(cmp -s $W/text-main-1 $W/text-$v-$r && echo same || echo DIFFERS); $(grep -oE '[0-9]+ of [0-9]+ lines found, [0-9.]+% of characters read' $W/p.txt); $(grep -oE 'FNV-1a of corners and scores [0-9a-f]+' $W/p.txt)"; filt < $W/p.txt
  done
done
step done
