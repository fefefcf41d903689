#!/usr/bin/env bash
# recdw's second GPU pack (issue 21): the branch's head (the quads form planned for every depthwise
# convolution on GPUs, the plane form removed) against main's build: tests on the H100, GPU time
# per Conv node and per kernel, the recognizer's output against main's (the same random input),
# rec alone, the page alternating; PyTorch's depthwise (cuDNN) and 1x1 (cuBLAS / cuDNN) references.
. "$H/common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "recdw commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"

step "tests on the H100 (GLES): test_conv_direct, test_plans PlanConvDirect.*"
LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/test_conv_direct 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=|Which is|rror" | head -40
LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/test_plans --gtest_filter='PlanConvDirect.*' 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure" | head -10

nodes() {  # $1 label, then env assignments
  local lab=$1; shift
  env "$@" GLTENSOR_MODEL_TRACE=1 timeout 30 $BIN/gltensor-run "$REC" --shape x=16x3x48x832 --bench 3 --profile > $W/tr.txt 2>&1
  echo "## $lab $*" >> "$OUT/recdw-trace.txt"; cat $W/tr.txt >> "$OUT/recdw-trace.txt"
  echo "$lab: $(grep -E '^GPU time' $W/tr.txt) conv_direct $(awk '/^conv_direct.comp/{print $3}' $W/tr.txt) ms;" \
    "$(awk '/^#[0-9]+ Conv/{print substr($1, 2) "=" $(NF-1)}' $W/tr.txt | sort -n | tr '\n' ' ') $(grep -E 'rror' $W/tr.txt | head -2)"
}
step "GPU time per Conv node (ms over 3 runs), rec 16x3x48x832: GLTENSOR_MODEL_TRACE=1 gltensor-run REC --shape x=16x3x48x832 --bench 3 --profile -> \$OUT/recdw-trace.txt"
for r in 1 2 3; do
  BIN=$BMAIN nodes "main" LD_LIBRARY_PATH=$MAIN
  BIN=$BMINE nodes "recdw" LD_LIBRARY_PATH=$MINE
done

step "GPU time by kernel (gltensor-run REC --shape x=SHAPE --bench 20 --replay --profile), alternating"
for shp in 16x3x48x832 9x3x48x1376; do
  for r in 1 2; do
    for who in MAIN MINE; do
      B=$BMAIN; [ $who = MINE ] && B=$BMINE
      LD_LIBRARY_PATH=${!who} timeout 20 $B/gltensor-run "$REC" --shape x=$shp --bench 20 --replay --profile > $W/k.txt 2>&1
      echo "-- $who $shp: $(grep -E '^bench:' $W/k.txt | cut -c1-120); $(grep -E '^GPU time' $W/k.txt); $(awk '/^kernel /{k=1; next} k && NF>=4 && /\.comp/{printf "%s %s %s; ", $1, $2, $3}' $W/k.txt | cut -c1-400) $(grep -E 'rror' $W/k.txt | head -2)"
    done
  done
done

step "the recognizer's output, main against recdw (gltensor-run REC --shape x=16x3x48x832 --seed 5 --output-dir)"
LD_LIBRARY_PATH=$MAIN timeout 20 $BMAIN/gltensor-run "$REC" --shape x=16x3x48x832 --seed 5 --output-dir $W/o-main > /dev/null 2>&1
LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/gltensor-run "$REC" --shape x=16x3x48x832 --seed 5 --output-dir $W/o-mine > /dev/null 2>&1
for f in $W/o-main/*.npy; do
  cmp -s $f $W/o-mine/${f##*/} && echo "${f##*/}: bit-exact" || timeout 20 python3 -c "
import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print(sys.argv[1].split('/')[-1], a.shape, 'max abs diff', float(np.abs(a - b).max()), 'argmax equal', float((a.argmax(-1) == b.argmax(-1)).mean()))" $f $W/o-mine/${f##*/}
done

step "PyTorch references: depthwise (cuDNN) and the 1x1 products (cuBLAS matmul, cuDNN conv2d), f32, TF32 off"
timeout 40 python3 "$HP/torch_dw.py" "$REC" 16 3 48 832 2>&1 | grep -vE "Warning|warn" | head -20
timeout 40 python3 "$HP/torch_pointwise.py" 64x9984x64b16 128x9984x64b16 128x4992x128b16 240x2496x128b16 240x2496x240b16 480x1248x240b16 480x1248x480b16 480x624x480b16 2>&1 | grep -vE "Warning|warn" | head -12

step "rec alone, replayed, min ms (gltensor-run REC --shape x=SHAPE --bench 100 --replay), alternating"
for shp in 16x3x48x832 9x3x48x1376; do
  for r in 1 2; do
    echo "-- main $shp: $(LD_LIBRARY_PATH=$MAIN timeout 15 $BMAIN/gltensor-run "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-200)"
    echo "-- recdw $shp: $(LD_LIBRARY_PATH=$MINE timeout 15 $BMINE/gltensor-run "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-200)"
  done
done

step "the page, alternating (4 rounds, a process each): gltensor_ocr_bench $PAGE"
for r in 1 2 3 4; do
  for who in MAIN MINE; do
    B=$BMAIN; [ $who = MINE ] && B=$BMINE
    LD_LIBRARY_PATH=${!who} timeout 30 $B/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$who
    echo "-- $who: page $(awk -F'|' '/^\| OCR/{print $3}' $W/p.txt | tr -d ' ') ms ($(grep -oE '[0-9]+ of [0-9]+ lines found, [0-9.]+% of characters read' $W/p.txt)); $(grep -E '^\| (det|DB|rec|total)' $W/p.txt | awk -F'|' '{printf "%s=%s;", $2, $3}' | tr -s ' ') text vs main $(cmp -s $W/text-MAIN $W/text-$who && echo same || echo DIFFER) $(grep -E 'rror' $W/p.txt | head -2)"
  done
done
grep "^line" $W/p.txt | head -30
step done
