#!/usr/bin/env bash
# ocr6's first GPU pack (issue 21): the recognizer's batched 1x1 convolutions. The kernel lab's warp
# tiles at their shapes (batch folded into N), PyTorch's time for them, and the matmul planner's
# experiment (GLTENSOR_OCR6_EXP in ocr6's library, uncommitted: 1 64 x 128 tiles for the batched
# products, 2 also from H*W >= 512, 4 also from O, C >= 64; 8 the squeeze-and-excitation 1x1 convolutions of several images as one
# transposed product [N, C] @ [C, O] instead of N products of one column) against main's library: the page, rec alone,
# GPU time per node.
set -u
T0=$(date +%s)
HP=$H
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/ocr6-run; rm -rf $W; mkdir -p $W/sys $W/models $W/gl
step unpack
tar -C $W/gl -xJf "$HP/gl.tar.xz" && tar -C $W/sys -xJf "$HP/sys.tar.xz" && tar -C $W/models -xJf "$HP/models.tar.xz" || exit 1
H=$W/gl
mkdir -p /usr/share/fonts/truetype/dejavu && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
  xz -dc "$HP/DejaVuSans.ttf.xz" > /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
MINE="$H/lib:$W/sys:${LD_LIBRARY_PATH:-}"
MAIN="$H/main/lib:$W/sys:${LD_LIBRARY_PATH:-}"
M=$W/models
REC="$M/ch_PP-OCRv4_rec_infer.onnx"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "ocr6 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr"
ROW="--rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0"
PW='^#(291|313|335|357|379|401|423|445|473|501|523|545|468|470|496|498) '

step "GPU time per node, rec 16x3x48x832: main, exp 1, exp 15 (GLTENSOR_MODEL_TRACE=1 --bench 3 --profile) -> \$OUT/ocr6-trace1.txt"
for v in main 1 15; do
  who=MINE; [ $v = main ] && who=MAIN
  echo "##### $v" >> "$OUT/ocr6-trace1.txt"
  GLTENSOR_OCR6_EXP=$v GLTENSOR_MODEL_TRACE=1 LD_LIBRARY_PATH=${!who} timeout 30 "$H/bin/gltensor-run" "$REC" --shape x=16x3x48x832 --bench 3 --profile >> "$OUT/ocr6-trace1.txt" 2>&1
done
awk '/^##### /{w=$2} /^GPU time|^matmul_|^conv_direct|^output|^bench:/{print w, $0}' "$OUT/ocr6-trace1.txt" | cut -c1-160
awk -v re="$PW" '/^##### /{w=$2} $0 ~ re {print w, $0}' "$OUT/ocr6-trace1.txt" | sort -k2,2 -s | cut -c1-90

step "the page, main's library and ocr6's (exp 15) alternating: gltensor_ocr_bench $PAGE --runs 20 $ROW --text"
for v in main 15 main 15; do
  who=MINE; [ $v = main ] && who=MAIN
  echo "-- $v"
  GLTENSOR_OCR6_EXP=$v LD_LIBRARY_PATH=${!who} timeout 25 "$H/bin/gltensor_ocr_bench" $PAGE --runs 20 $ROW --text 2>&1 | grep -E "^\| (OCR|det|DB|rec|total)|rror|^line" | cut -c1-330 > $W/page.txt
  grep -v "^line" $W/page.txt
  grep "^line" $W/page.txt > $W/text-$v
  [ -e $W/text-main ] && echo "text: main and $v $(cmp -s $W/text-main $W/text-$v && echo same || echo DIFFER)"
done
head -30 $W/text-main

step "rec alone, replayed: main / exp 1, 7, 15 (gltensor-run --shape x=16x3x48x832 --bench 100 --replay)"
for v in main 1 7 15 main 15; do
  who=MINE; [ $v = main ] && who=MAIN
  echo "-- $v: $(GLTENSOR_OCR6_EXP=$v LD_LIBRARY_PATH=${!who} timeout 15 "$H/bin/gltensor-run" "$REC" --shape x=16x3x48x832 --bench 100 --replay 2>&1 | grep -E "^bench:|^output|rror" | tr '\n' ' ' | cut -c1-260)"
done

step "PyTorch (cuBLAS, cuDNN), the recognizer's 1x1 convolutions at batch 16: O x HW x C"
S16="64x9984x64b16 128x4992x64b16 128x4992x128b16 240x2496x128b16 240x2496x240b16 480x1248x240b16 480x1248x480b16 480x624x480b16"
timeout 40 python3 "$HP/torch_pointwise.py" $S16 2>&1 | tail -12

step "DB boxes on this host's CPU (scratch tool dbb: db_boxes on the page's det map from llvmpipe, 300 runs)"
[ -x "$H/bin/dbb" ] && LD_LIBRARY_PATH=$MINE timeout 20 "$H/bin/dbb" 300 "$H/bin/prob.bin" 2>&1 | head -6
nproc; grep -m1 "model name" /proc/cpuinfo

step "kernel lab: the warp tiles at the same products, the batch folded into N (M x N x K)"
LAB_SHAPES=64x159744x64,128x79872x64,128x79872x128,240x39936x128,240x39936x240,480x19968x240,480x19968x480,480x9984x480 \
LAB_CANDS="warp 64x128 bk8|warp 64x128 bk16|warp 128x128 bk8|warp 128x128 bk16|tn16" \
  LD_LIBRARY_PATH=$MINE timeout 70 "$H/bin/gltensor_kernel_lab" warp 2>&1 | grep -v "n/a" | cut -c1-110
step done
