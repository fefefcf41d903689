#!/usr/bin/env bash
# ocr5's second GPU pack (issue 21): the depthwise plane form only where it was faster (5x5 and up,
# stride 1), main's library and ocr5's alternating: the page, rec and det alone, GPU time per node;
# the plane form's rows per invocation (PY 1 and 2 against the planned 4) through GLTENSOR_GLSL_DIR.
set -u
T0=$(date +%s)
HP=$H
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/ocr5-run; rm -rf $W; mkdir -p $W/sys $W/models $W/gl $W/exp
step unpack
tar -C $W/gl -xJf "$HP/gl.tar.xz" && tar -C $W/sys -xJf "$HP/sys.tar.xz" && tar -C $W/models -xJf "$HP/models.tar.xz" &&
  tar -C $W/exp -xJf "$HP/exp.tar.xz" || exit 1
H=$W/gl
mkdir -p /usr/share/fonts/truetype/dejavu && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
  xz -dc "$HP/DejaVuSans.ttf.xz" > /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
MINE="$H/lib:$W/sys:${LD_LIBRARY_PATH:-}"
MAIN="$H/main/lib:$W/sys:${LD_LIBRARY_PATH:-}"
M=$W/models
REC="$M/ch_PP-OCRv4_rec_infer.onnx"; DET="$M/ch_PP-OCRv4_det_infer.onnx"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "ocr5 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr"
ROW="--rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0"
DW='^#(280|302|324|346|368|390|412|434|456|484|512|534) '

step "ocr5: tests on the H100 (test_conv_direct's lanes cases and plane form, test_plans PlanConvDirect.*)"
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_conv_direct" --gtest_filter='ConvDirect.LanesPlaneFormDepthwise:ConvDirect.LanesLayoutTilesAndWeights:ConvDirect.EpilogueInTheKernel:ConvDirect.LanesTilesFormEdges:ConvDirect.HalfAndStridedOperandsAndNaN' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=|stride" | head -20
LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/test_plans" --gtest_filter='PlanConvDirect.*' 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure" | head -5

step "the page, main's library and ocr5's alternating (ocr5's gltensor_ocr_bench): gltensor_ocr_bench $PAGE --runs 20 $ROW --text"
for who in MAIN MINE MAIN MINE MAIN MINE; do
  echo "-- $who"
  LD_LIBRARY_PATH=${!who} timeout 30 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 $ROW --text 2>&1 | grep -E "^\| (OCR|det|DB|rec|total)|rror|^line" | cut -c1-330 > $W/page.txt
  grep -v "^line" $W/page.txt
  grep "^line" $W/page.txt > $W/text-$who.new
  [ -e $W/text-$who ] || mv $W/text-$who.new $W/text-$who
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

step "GPU time per node, rec 16x3x48x832: main, ocr5, ocr5 with PY 2, ocr5 with PY 1 (GLTENSOR_MODEL_TRACE=1 --bench 3 --profile) -> \$OUT/ocr5-trace2.txt"
for v in MAIN MINE py2 py1; do
  who=MINE; [ $v = MAIN ] && who=MAIN
  d=$H/bin; [ $v = MAIN ] && d=$H/main/bin
  g=""; [ -d $W/exp/$v ] && g=$W/exp/$v
  echo "##### $v" >> "$OUT/ocr5-trace2.txt"
  GLTENSOR_GLSL_DIR=$g GLTENSOR_CACHE_DIR=/tmp/ocr5-cache-$v GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=${!who} timeout 30 "$d/gltensor-run" "$REC" --shape x=16x3x48x832 --bench 3 --profile >> "$OUT/ocr5-trace2.txt" 2>&1
done
awk '/^##### /{w=$2} /^GPU time|^conv_direct|^matmul_warp/{print w, $0}' "$OUT/ocr5-trace2.txt"
awk -v re="$DW" '/^##### /{w=$2} $0 ~ re {print w, $0}' "$OUT/ocr5-trace2.txt" | sort -k2,2 -s | cut -c1-90

step "rec and det alone, replayed, ocr5 with PY 2 and PY 1 (GLTENSOR_GLSL_DIR)"
for v in py2 py1; do
  for m in "$REC x=16x3x48x832 100" "$DET x=1x3x640x640 200"; do
    set -- $m
    echo "-- $v $(basename $1) $2: $(GLTENSOR_GLSL_DIR=$W/exp/$v GLTENSOR_CACHE_DIR=/tmp/ocr5-cache-$v LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/gltensor-run" "$1" --shape $2 --bench $3 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-140)"
  done
done
step done
