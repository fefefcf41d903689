#!/usr/bin/env bash
# rec3's second GPU pack: the page again (main, rec3 alternating, three each), the softmax rows again,
# and the recognizer's kernel settings at the page's two call shapes (rec3's build, replayed).
. "$H/common.sh"  # the prologue (unpack, MINE/MAIN, step) and page/rec

step "the page: gltensor_ocr_bench --only ocr960 --runs 20 --images gpu --ort none --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 (main, rec3 x3)"
for who in MAIN MINE MAIN MINE MAIN MINE; do
  echo "-- $who $(page $who 30 | grep -E "^\| (OCR|rec: upload|total)|rror" | cut -c1-130 | tr '\n' ' ')"
done

X=$HP/exp  # an experimental conv_direct.comp (GLTENSOR_GLSL_DIR): the depthwise taps loaded without branches
step "rec3 + exp: test_conv_direct with GLTENSOR_GLSL_DIR=exp (NVIDIA, lanes layout)"
GLTENSOR_GLSL_DIR=$X LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_conv_direct" 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |differ|seed=" | head -20

step "the page with the experimental conv_direct.comp (rec3, rec3 + exp, x2)"
for who in MINE EXP MINE EXP; do
  echo "-- $who $([ $who = EXP ] && export GLTENSOR_GLSL_DIR=$X; page MINE 30 | grep -E "^\| (OCR|rec: upload|total)|rror" | cut -c1-130 | tr '\n' ' ')"
done
for shape in 16x3x48x832 9x3x48x1376; do
  for who in MINE EXP MINE EXP; do
    echo "-- $who $shape: $([ $who = EXP ] && export GLTENSOR_GLSL_DIR=$X; rec MINE 20 $shape --bench 50 --replay | grep -E "^bench:|rror" | cut -c1-120)"
  done
done
step "rec3 + exp: GPU time per node at 16x3x48x832 (trace + profile, 3 runs) -> \$OUT/rec3-trace-exp.txt"
GLTENSOR_GLSL_DIR=$X GLTENSOR_MODEL_TRACE=1 rec MINE 30 16x3x48x832 --bench 3 --profile > "$OUT/rec3-trace-exp.txt"
sed -n '/^profile over/,$p' "$OUT/rec3-trace-exp.txt" | head -30; sed -n '/^kernel /,$p' "$OUT/rec3-trace-exp.txt" | head -6

step "softmax / argmax rows: gltensor_bench (rec3's binary on main's library, on rec3's)"
for who in MAIN MINE; do
  echo "-- $who"
  LD_LIBRARY_PATH=${!who} timeout 25 "$H/bin/gltensor_bench" --benchmark_filter='BM_rows/(softmax|argmax)' 2>&1 | grep -E "BM_rows|rror"
done

step "rec3: the recognizer at the page's shapes under kernel settings (gltensor-run --bench 50 --replay)"
for setting in "" GLTENSOR_MATMUL_KERNEL=vec4 GLTENSOR_MATMUL_KERNEL=vec4su GLTENSOR_MATMUL_KERNEL=warp GLTENSOR_MATMUL_KERNEL=tile128 \
    GLTENSOR_CONV_DIRECT=rows GLTENSOR_CONV_POINTWISE=im2col ""; do
  for shape in 16x3x48x832 9x3x48x1376; do
    echo "-- ${setting:-default} $shape: $([ -z "$setting" ] || export "$setting"; rec MINE 20 $shape --bench 50 --replay | grep -E "^bench:|rror" | cut -c1-120)"
  done
done
for k in warp; do
  step "rec3: GPU time per node at 16x3x48x832 with GLTENSOR_MATMUL_KERNEL=$k (trace + profile, 3 runs) -> \$OUT/rec3-trace-$k.txt"
  GLTENSOR_MATMUL_KERNEL=$k GLTENSOR_MODEL_TRACE=1 rec MINE 30 16x3x48x832 --bench 3 --profile > "$OUT/rec3-trace-$k.txt"
  sed -n '/^profile over/,$p' "$OUT/rec3-trace-$k.txt" | head -24
done
step done
