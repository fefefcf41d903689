#!/usr/bin/env bash
# ocr5's first GPU pack (issue 21: the OCR page <= 10 ms): the depthwise convolutions' plane form
# (conv_direct.comp PLANE) tested on the H100, then main's build and ocr5's alternating: the page
# (every stage, its text), rec and det alone, GPU time per node; f16 weights on the page and alone.
set -u
T0=$(date +%s)
HP=$H
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/ocr5-run; rm -rf $W; mkdir -p $W/sys $W/models $W/gl
step unpack
tar -C $W/gl -xJf "$HP/gl.tar.xz" && tar -C $W/sys -xJf "$HP/sys.tar.xz" && tar -C $W/models -xJf "$HP/models.tar.xz" || exit 1
H=$W/gl
mkdir -p /usr/share/fonts/truetype/dejavu && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
  xz -dc "$HP/DejaVuSans.ttf.xz" > /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
MINE="$H/lib:$W/sys:${LD_LIBRARY_PATH:-}"
MAIN="$H/main/lib:$W/sys:${LD_LIBRARY_PATH:-}"
M=$W/models
REC="$M/ch_PP-OCRv4_rec_infer.onnx"; DET="$M/ch_PP-OCRv4_det_infer.onnx"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "ocr5 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr"
ROW="--rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0"

step "ocr5: tests on the H100 (test_conv_direct's lanes cases and plane form, test_plans PlanConvDirect.*)"
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_conv_direct" --gtest_filter='ConvDirect.LanesPlaneFormDepthwise:ConvDirect.LanesLayoutTilesAndWeights:ConvDirect.EpilogueInTheKernel:ConvDirect.LanesTilesFormEdges:ConvDirect.HalfAndStridedOperandsAndNaN' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=|stride" | head -20
LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/test_plans" --gtest_filter='PlanConvDirect.*' 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure" | head -5

step "the page, main's library and ocr5's alternating (ocr5's gltensor_ocr_bench): gltensor_ocr_bench $PAGE --runs 20 $ROW (the text printed once per build and compared)"
for who in MAIN MINE MAIN MINE MAIN MINE; do
  d=$H/bin  # ocr5's bench binary (its --text; the pipeline as main's) on main's library or ocr5's
  t=--text
  echo "-- $who"
  LD_LIBRARY_PATH=${!who} timeout 30 "$d/gltensor_ocr_bench" $PAGE --runs 20 $ROW $t 2>&1 | grep -E "^\| (OCR|det|DB|rec|CTC|total)|rror|^line" | cut -c1-330 > $W/page.txt
  grep -v "^line" $W/page.txt
  # the text: printed by the first process of each build, compared in the later ones
  grep "^line" $W/page.txt > $W/text-$who.new
  if [ ! -e $W/text-$who ]; then mv $W/text-$who.new $W/text-$who; cat $W/text-$who; fi
  [ -e $W/text-MAIN ] && [ -e $W/text-MINE ] && echo "text: main and ocr5 $(cmp -s $W/text-MAIN $W/text-MINE && echo same || echo DIFFER)"
done

step "det and rec alone, replayed, main / ocr5 (gltensor-run --bench N --replay)"
for m in "$REC x=16x3x48x832 100" "$REC x=9x3x48x1376 100" "$DET x=1x3x640x640 200"; do
  set -- $m
  for who in MAIN MINE MAIN MINE; do
    d=$H/bin; [ $who = MAIN ] && d=$H/main/bin
    echo "-- $who $(basename $1) $2: $(LD_LIBRARY_PATH=${!who} timeout 20 "$d/gltensor-run" "$1" --shape $2 --bench $3 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-140)"
  done
done

step "GPU time per node, rec 16x3x48x832, main then ocr5 (GLTENSOR_MODEL_TRACE=1 --bench 3 --profile) -> \$OUT/ocr5-trace.txt"
for who in MAIN MINE; do
  d=$H/bin; [ $who = MAIN ] && d=$H/main/bin
  echo "##### $who" >> "$OUT/ocr5-trace.txt"
  GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=${!who} timeout 30 "$d/gltensor-run" "$REC" --shape x=16x3x48x832 --bench 3 --profile >> "$OUT/ocr5-trace.txt" 2>&1
done
grep -E "^#####|^GPU time|^conv_direct|^matmul_warp|^matmul_tile64" "$OUT/ocr5-trace.txt"

step "ocr5: f32 / f16 weights on the page, one process ($ROW, --rec-call-cost 6000 3000, --f16 0 1)"
LD_LIBRARY_PATH=$MINE timeout 45 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 --rec-batch 0 --rec-call-cost 6000 --rec-call-cost 3000 \
  --det-limit 640 --replay 1 --cls 0 --f16 0 --f16 1 2>&1 | grep -E "^\| (OCR|det|DB|rec|CTC|total|stage)|rror|otherwise" | cut -c1-400

step "ocr5: rec 16x3x48x832 and det 640 alone, f32 / f16 weights, replayed"
for m in "$REC x=16x3x48x832 100" "$DET x=1x3x640x640 200"; do
  set -- $m
  for f in "" --f16 "" --f16; do
    echo "-- $(basename $1) $2 ${f:-f32}: $(LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/gltensor-run" "$1" --shape $2 --bench $3 --replay $f 2>&1 | grep -E "^bench:|rror" | cut -c1-140)"
  done
done

step "ocr5: PaddleOCR's defaults (rec batch 6, det 960, cls on), replayed, f32 / f16"
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 --rec-batch 6 --det-limit 960 --replay 1 --cls 1 \
  --f16 0 --f16 1 2>&1 | grep -E "^\| (OCR|total)|rror|otherwise" | cut -c1-400
step done
