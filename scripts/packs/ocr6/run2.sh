#!/usr/bin/env bash
# ocr6's second GPU pack (issue 21): the branch's head (the batched 1x1 convolutions' warp tiles from
# O, C >= 64 and H*W >= 512 in 64-row tiles where few; squeeze-and-excitation's 1x1 convolutions as one
# transposed product) against main's library: tests on the H100, the page, rec alone, GPU time per node;
# lib2 (if packed): the same with 16-K tiles for the batched products' 128 x 128 tiles at K >= 128.
set -u
T0=$(date +%s)
HP=$H
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/ocr6-run; rm -rf $W; mkdir -p $W/sys $W/cache/models/ocr $W/gl
step unpack
tar -C $W/gl -xJf "$HP/gl.tar.xz" && tar -C $W/sys -xJf "$HP/sys.tar.xz" && tar -C $W/cache/models/ocr -xJf "$HP/models.tar.xz" || exit 1
H=$W/gl
mkdir -p /usr/share/fonts/truetype/dejavu && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
  xz -dc "$HP/DejaVuSans.ttf.xz" > /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
MINE="$H/lib:$W/sys:${LD_LIBRARY_PATH:-}"
MAIN="$H/main/lib:$W/sys:${LD_LIBRARY_PATH:-}"
LIB2="$H/lib2:$W/sys:${LD_LIBRARY_PATH:-}"
WHO="MAIN MINE"; [ -d $H/lib2 ] && WHO="MAIN MINE LIB2"
M=$W/cache/models/ocr
REC="$M/ch_PP-OCRv4_rec_infer.onnx"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "ocr6 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr"
ROW="--rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0"
PW='^#(291|313|335|357|379|401|423|445|468|470|473|496|498|501|523|545) '

step "ocr6: tests on the H100"
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_conv_direct" --gtest_filter='ConvDirect.OnePositionPlanesOfSeveralImages:ConvDirect.EpilogueInTheKernel' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=" | head -10
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_matmul" --gtest_filter='Matmul.WarpTiledKernel:Matmul.BatchedWithBroadcast:Matmul.EpilogueAffineInEveryKernel' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=" | head -10
LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/test_plans" --gtest_filter='PlanMatmul.*' 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure" | head -5
GLTENSOR_MODEL_CACHE=$W/cache LD_LIBRARY_PATH=$MINE timeout 60 "$H/bin/test_ocr_models" 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|  SKIPPED) |Failure" | head -10

step "the page, alternating ($WHO, three rounds): gltensor_ocr_bench $PAGE --runs 20 $ROW --text"
for r in 1 2 3; do
  for who in $WHO; do
    echo "-- $who"
    LD_LIBRARY_PATH=${!who} timeout 25 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 $ROW --text 2>&1 | grep -E "^\| (OCR|det|DB|rec|total)|rror|^line" | cut -c1-330 > $W/page.txt
    grep -v "^line" $W/page.txt | sed -e 's/; first run.*//'
    grep "^line" $W/page.txt > $W/text-$who
    [ -e $W/text-MAIN ] && echo "text: main and $who $(cmp -s $W/text-MAIN $W/text-$who && echo same || echo DIFFER)"
  done
done

step "the page at other call costs, ocr6 (one process): --rec-call-cost 3000 4500 6000"
LD_LIBRARY_PATH=$MINE timeout 30 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 --rec-batch 0 --rec-call-cost 3000 --rec-call-cost 4500 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 2>&1 | grep -E "^\| (OCR|rec: upload|total)|rror" | sed -e 's/; first run.*//' | cut -c1-300

step "rec alone, replayed ($WHO; gltensor-run --bench 100 --replay)"
for shp in 16x3x48x832 9x3x48x1376; do
  for r in 1 2; do
    for who in $WHO; do
      echo "-- $who $shp: $(LD_LIBRARY_PATH=${!who} timeout 15 "$H/bin/gltensor-run" "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|^output|rror" | tr '\n' ' ' | cut -c1-230)"
    done
  done
done

step "GPU time per node, rec 16x3x48x832 ($WHO; GLTENSOR_MODEL_TRACE=1 --bench 3 --profile) -> \$OUT/ocr6-trace2.txt"
for who in $WHO; do
  echo "##### $who" >> "$OUT/ocr6-trace2.txt"
  GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=${!who} timeout 30 "$H/bin/gltensor-run" "$REC" --shape x=16x3x48x832 --bench 3 --profile >> "$OUT/ocr6-trace2.txt" 2>&1
done
awk '/^##### /{w=$2} /^GPU time|^matmul_|^conv_direct|^bench:/{print w, $0}' "$OUT/ocr6-trace2.txt" | cut -c1-160
awk -v re="$PW" '/^##### /{w=$2} $0 ~ re {print w, $0}' "$OUT/ocr6-trace2.txt" | sort -k2,2 -s | cut -c1-90
step done
