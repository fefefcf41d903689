#!/usr/bin/env bash
# ocr9's second GPU pack (issue 21): the branch's head (the recognizer's batched 1x1 products in
# 64 x 128 x 8 tiles with a warp as 16 x 2 invocations, 128 x 128 x 16 from M = 384 over 512 tiles;
# db_boxes' candidates on OpenCV's thread pool) against main's build: tests on the H100, the
# recognizer's output against main's, GPU time per Conv node, rec alone, then the page alternating
# main / ocr9 / ocr9 with OPENCV_FOR_THREADS_NUM=1 (its DB stage one thread, as main's).
# Packed with NAME=ocr9 RUN=run2.sh EXTRA="build/tests/test_matmul build/tests/test_plans
# build/tests/test_ocr_pipeline" bash scripts/packs/ocr7/make_pack.sh.
. "$H/common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr9 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
REC="$M/ch_PP-OCRv4_rec_infer.onnx"
step "tests on the H100 (GLES): test_matmul Matmul.WarpTiledKernel, test_plans, test_ocr_pipeline"
LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/test_matmul --gtest_filter='Matmul.WarpTiledKernel:Matmul.Batched*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=|@|rror" | head -12
LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/test_plans 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure" | head -6
LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/test_ocr_pipeline 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure|seed=" | head -6
step "the recognizer's output, main against ocr9 (gltensor-run REC --shape x=S --seed 5 --output-dir D; cmp)"
for shp in 16x3x48x832 9x3x48x1376; do
  LD_LIBRARY_PATH=$MAIN timeout 20 $BMAIN/gltensor-run "$REC" --shape x=$shp --seed 5 --output-dir $W/o-main > /dev/null 2>&1
  LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/gltensor-run "$REC" --shape x=$shp --seed 5 --output-dir $W/o-mine > /dev/null 2>&1
  for f in $W/o-main/*.npy; do cmp -s $f $W/o-mine/${f##*/} && echo "$shp ${f##*/}: bit-exact" || echo "$shp ${f##*/}: DIFFERS"; done
done
step "GPU time per Conv node (ms over 3 runs): GLTENSOR_MODEL_TRACE=1 gltensor-run REC --shape x=S --bench 3 --profile"
for shp in 16x3x48x832 9x3x48x1376; do
  for who in MAIN MINE; do
    B=$BMAIN; [ $who = MINE ] && B=$BMINE
    GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=${!who} timeout 30 $B/gltensor-run "$REC" --shape x=$shp --bench 3 --profile > $W/tr.txt 2>&1
    echo "$who $shp: $(grep -E '^GPU time' $W/tr.txt) warp $(awk '/^matmul_warp.comp/{print $3}' $W/tr.txt);" \
      "$(awk '/^#[0-9]+ Conv/{print substr($1, 2) "=" $(NF-1)}' $W/tr.txt | sort -n | tr '\n' ' ') $(grep -E 'rror' $W/tr.txt | head -2)"
  done
done
step "rec alone, replayed (gltensor-run REC --shape x=S --bench 100 --replay), alternating"
for shp in 16x3x48x832 9x3x48x1376; do
  for r in 1 2; do
    echo "-- main $shp: $(LD_LIBRARY_PATH=$MAIN timeout 15 $BMAIN/gltensor-run "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-130)"
    echo "-- ocr9 $shp: $(LD_LIBRARY_PATH=$MINE timeout 15 $BMINE/gltensor-run "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-130)"
  done
done
BASE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --det-limit 640 --replay 1 --cls 0 --rec-batch 0 --rec-call-cost 6000 --text"
step "the page, alternating main / ocr9 / ocr9 with OPENCV_FOR_THREADS_NUM=1, 3 rounds: gltensor_ocr_bench $BASE"
filt() { grep -E "^\| (OCR|total)|^medians|^DB boxes|rror" | sed -e 's/; first run.*//' | cut -c1-330; }
for r in 1 2 3; do
  for v in main mine mine1; do
    if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$MINE; B=$BMINE; fi
    T=""; [ $v = mine1 ] && T=1
    env ${T:+OPENCV_FOR_THREADS_NUM=1} LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $BASE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v-$r
    echo "-- $v (round $r): text against main's first: $(cmp -s $W/text-main-1 $W/text-$v-$r && echo same || echo DIFFERS)"; filt < $W/p.txt
  done
done
echo "the page's text (ocr9, round 1):"; cut -c1-160 $W/text-mine-1
step done
