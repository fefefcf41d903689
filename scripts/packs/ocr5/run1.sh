#!/usr/bin/env bash
# ocr5's first GPU pack (issue 21: the OCR page <= 10 ms): where the page's time goes (every
# stage), f16 weights on the page and on det / rec alone, main's build and ocr5's alternating.
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

step "the page, main and ocr5 alternating: gltensor_ocr_bench $PAGE --runs 20 $ROW"
for who in MAIN MINE MAIN MINE; do
  d=$H/bin; [ $who = MAIN ] && d=$H/main/bin
  echo "-- $who"
  LD_LIBRARY_PATH=${!who} timeout 30 "$d/gltensor_ocr_bench" $PAGE --runs 20 $ROW 2>&1 | grep -E "^\| (OCR|det|DB|rec|CTC|total)|rror" | cut -c1-330
done

step "ocr5: f32 / f16 weights by call cost, one process ($ROW with --rec-call-cost 3000 6000 --f16 0 1 --runs 20 --text)"
LD_LIBRARY_PATH=$MINE timeout 45 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 --rec-batch 0 --rec-call-cost 6000 --rec-call-cost 3000 \
  --det-limit 640 --replay 1 --cls 0 --f16 0 --f16 1 --text 2>&1 | grep -vE "^$" | cut -c1-400

step "ocr5: PaddleOCR's defaults (rec batch 6, det 960, cls on), replayed, f32 / f16"
LD_LIBRARY_PATH=$MINE timeout 45 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 --rec-batch 6 --det-limit 960 --replay 1 --cls 1 \
  --f16 0 --f16 1 2>&1 | grep -E "^\| (OCR|det|DB|cls|rec|CTC|total)|rror|otherwise" | cut -c1-400

step "det and rec alone, replayed, f32 / f16 weights (gltensor-run --bench N --replay [--f16]; ocr5)"
for m in "$DET x=1x3x640x640 200" "$REC x=16x3x48x832 100" "$REC x=9x3x48x1376 100" "$REC x=1x3x48x320 100"; do
  set -- $m
  for f in "" --f16 "" --f16; do
    echo "-- $(basename $1) $2 ${f:-f32}: $(LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/gltensor-run" "$1" --shape $2 --bench $3 --replay $f 2>&1 | grep -E "^bench:|rror" | cut -c1-140)"
  done
done
echo "-- rec 16x3x48x832 --f16, GLTENSOR_PRECISION=f16-matmul: $(GLTENSOR_PRECISION=f16-matmul LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/gltensor-run" "$REC" --shape x=16x3x48x832 --bench 100 --replay --f16 2>&1 | grep -E "^bench:|rror" | cut -c1-140)"

step "GPU time per kernel: rec 1x3x48x320 (the fixed cost), rec 16x3x48x832 --f16, det 640 (--bench 20 --profile) -> \$OUT/ocr5-profile.txt"
for m in "$REC x=1x3x48x320" "$REC x=16x3x48x832 --f16" "$DET x=1x3x640x640"; do
  set -- $m
  echo "### $(basename $1) $2 $3" >> "$OUT/ocr5-profile.txt"
  LD_LIBRARY_PATH=$MINE timeout 30 "$H/bin/gltensor-run" "$1" --shape $2 ${3:-} --bench 20 --profile >> "$OUT/ocr5-profile.txt" 2>&1
done
grep -E "^###|^bench:|^GPU time|^kernel|\.comp " "$OUT/ocr5-profile.txt" | head -60
step done
