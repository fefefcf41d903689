#!/usr/bin/env bash
# ocr9's first GPU pack (issue 21): where the page's time goes per kernel, and the warp kernel's
# tiles for the recognizer's batched 1x1 products through the experiment knob GLTENSOR_OCR9_WARP
# (bm,bn,bk,tn,lanes,kloop; the library of this pack only: without the variable it plans as main);
# GPU time per Conv node at the page's two recognizer shapes, det's nodes, then the page alternating.
# Packed with NAME=ocr9 RUN=run1.sh bash scripts/packs/ocr7/make_pack.sh.
. "$H/common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr9 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
REC="$M/ch_PP-OCRv4_rec_infer.onnx"; DET="$M/ch_PP-OCRv4_det_infer.onnx"
TR=$OUT/ocr9-traces.txt
nodes() {  # $1 shape, $2 label, then env assignments
  local shp=$1 lab=$2; shift 2
  env "$@" GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=$MINE timeout 30 $BMINE/gltensor-run "$REC" --shape x=$shp --bench 3 --profile > $W/tr.txt 2>&1
  echo "## $shp $lab $*" >> $TR; grep -E "^#[0-9]+ Conv|^GPU time|rror|^matmul_warp" $W/tr.txt >> $TR
  echo "$shp $lab: $(grep -E '^GPU time' $W/tr.txt | cut -c1-40) warp $(awk '/^matmul_warp.comp/{print $3}' $W/tr.txt);" \
    "$(awk '/^#[0-9]+ Conv/{print substr($1, 2) "=" $(NF-1)}' $W/tr.txt | sort -n | tr '\n' ' ') $(grep -E 'rror' $W/tr.txt | head -2)"
}
step "one full trace of each shape (node shapes): \$OUT/ocr9-traces.txt"
for shp in 16x3x48x832 9x3x48x1376; do
  echo "#### full trace $shp" >> $TR
  GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=$MINE timeout 30 $BMINE/gltensor-run "$REC" --shape x=$shp --bench 3 --profile >> $TR 2>&1
done
echo "#### full trace det 1x3x640x640" >> $TR
GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=$MINE timeout 30 $BMINE/gltensor-run "$DET" --shape x=1x3x640x640 --bench 3 --profile > $W/det.txt 2>&1
cat $W/det.txt >> $TR
step "det 640: GPU time by kernel (--bench 20 --replay --profile) and the slowest nodes (3 runs)"
LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/gltensor-run "$DET" --shape x=1x3x640x640 --bench 20 --replay --profile 2>&1 | grep -E "^bench:|^GPU time|\.comp" | head -16
grep -E "^#[0-9]+ " $W/det.txt | awk '{print $(NF-1), $0}' | sort -rn | head -14 | cut -c1-200
step "rec per kernel (gltensor-run REC --shape S --bench 20 --replay --profile)"
for shp in 16x3x48x832 9x3x48x1376; do
  LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/gltensor-run "$REC" --shape x=$shp --bench 20 --replay --profile 2>&1 | grep -E "^bench:|^GPU time|\.comp" | head -14
done
step "GPU time per Conv node (ms over 3 runs) by warp tile: GLTENSOR_OCR9_WARP=bm,bn,bk,tn,lanes,kloop GLTENSOR_MODEL_TRACE=1 gltensor-run REC --shape x=S --bench 3 --profile"
for shp in 16x3x48x832 9x3x48x1376; do
  nodes $shp planner
  for c in 64,128,8,8 128,128,8,8 64,128,16,8 128,128,16,8 64,128,8,8,0 128,128,8,16 64,256,8,16 128,256,8,16 64,128,16,8,1,1; do
    nodes $shp "tile $c" GLTENSOR_OCR9_WARP=$c
  done
done
step "the recognizer's output by tile against the planner's (gltensor-run REC --shape x=16x3x48x832 --seed 5 --output-dir D; cmp)"
LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/gltensor-run "$REC" --shape x=16x3x48x832 --seed 5 --output-dir $W/o-base > /dev/null 2>&1
for c in 64,128,16,8 128,128,8,16 64,256,8,16 128,256,8,16 128,128,8,16,1,1 128,128,16,8; do
  GLTENSOR_OCR9_WARP=$c LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/gltensor-run "$REC" --shape x=16x3x48x832 --seed 5 --output-dir $W/o-t > /dev/null 2>&1
  for f in $W/o-base/*.npy; do cmp -s $f $W/o-t/${f##*/} && echo "$c ${f##*/}: bit-exact" || echo "$c ${f##*/}: DIFFERS"; done
done
step "the page, alternating main / ocr9 (no knob): gltensor_ocr_bench --models M --ort none --only ocr960 --images gpu --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"
BASE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --det-limit 640 --replay 1 --cls 0 --rec-batch 0 --rec-call-cost 6000 --text"
filt() { grep -E "^\| (OCR|total)|^medians|^DB boxes alone|rror" | sed -e 's/; first run.*//' | cut -c1-300; }
for r in 1 2; do
  for v in main mine; do
    if [ $v = main ]; then L=$MAIN; B=$BMAIN; else L=$MINE; B=$BMINE; fi
    echo "-- $v"; LD_LIBRARY_PATH=$L timeout 30 $B/gltensor_ocr_bench $BASE > $W/p.txt 2>&1; filt < $W/p.txt
  done
done
step done
