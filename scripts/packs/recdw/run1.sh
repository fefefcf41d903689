#!/usr/bin/env bash
# recdw's first GPU pack (issue 21): conv_direct.comp's quads form (DWQ) for the recognizer's
# depthwise convolutions against main's build and against the same build with the form off
# (GLTENSOR_DWQ=0: the plane and positions forms as main's); GLTENSOR_DWQ=PY[,LOCAL] (an
# uncommitted experiment knob) sweeps the rows per invocation and the workgroup size; PyTorch's
# cuDNN depthwise convolutions on the same shapes; tests on the H100; the page, alternating.
. "$H/common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "recdw commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"

step "tests on the H100 (GLES): test_conv_direct, test_plans PlanConvDirect.*"
LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/test_conv_direct 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |Failure|seed=|Which is|rror" | head -40
LD_LIBRARY_PATH=$MINE timeout 20 $BMINE/test_plans --gtest_filter='PlanConvDirect.*' 2>&1 | grep -E "^\[ *(FAILED|PASSED) |Failure" | head -10

# One line per run: conv_direct.comp's GPU ms and every Conv node's (3 profiled runs at 16x3x48x832).
nodes() {  # $1 label, then env assignments
  local lab=$1; shift
  env "$@" GLTENSOR_MODEL_TRACE=1 timeout 30 $BIN/gltensor-run "$REC" --shape x=16x3x48x832 --bench 3 --profile > $W/tr.txt 2>&1
  echo "## $lab $*" >> "$OUT/recdw-trace.txt"; cat $W/tr.txt >> "$OUT/recdw-trace.txt"
  echo "$lab: $(grep -E '^GPU time' $W/tr.txt) conv_direct $(awk '/^conv_direct.comp/{print $3}' $W/tr.txt) ms;" \
    "$(awk '/^#[0-9]+ Conv/{print substr($1, 2) "=" $(NF-1)}' $W/tr.txt | sort -n | tr '\n' ' ') $(grep -E 'rror' $W/tr.txt | head -2)"
}
step "GPU time per Conv node (ms over 3 runs), rec 16x3x48x832: GLTENSOR_MODEL_TRACE=1 gltensor-run REC --shape x=16x3x48x832 --bench 3 --profile -> \$OUT/recdw-trace.txt"
for r in 1 2; do
  BIN=$BMAIN nodes "main" LD_LIBRARY_PATH=$MAIN
  BIN=$BMINE nodes "recdw" LD_LIBRARY_PATH=$MINE
  BIN=$BMINE nodes "recdw-off" LD_LIBRARY_PATH=$MINE GLTENSOR_DWQ=0
done
for v in 1 2 3 4 "2,64" "2,256" "4,64" "4,256"; do
  BIN=$BMINE nodes "recdw-py$v" LD_LIBRARY_PATH=$MINE GLTENSOR_DWQ=$v
done

step "PyTorch (cuDNN) depthwise on the same shapes: python3 torch_dw.py REC 16 3 48 832"
timeout 60 python3 "$HP/torch_dw.py" "$REC" 16 3 48 832 2>&1 | grep -vE "Warning|warn" | head -30

step "rec alone, replayed, min ms (gltensor-run REC --shape x=SHAPE --bench 100 --replay), alternating"
for shp in 16x3x48x832 9x3x48x1376; do
  for r in 1 2; do
    echo "-- main $shp: $(LD_LIBRARY_PATH=$MAIN timeout 15 $BMAIN/gltensor-run "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-200)"
    echo "-- recdw $shp: $(LD_LIBRARY_PATH=$MINE timeout 15 $BMINE/gltensor-run "$REC" --shape x=$shp --bench 100 --replay 2>&1 | grep -E "^bench:|rror" | cut -c1-200)"
  done
done

step "the page, alternating (3 rounds, a process each): gltensor_ocr_bench $PAGE"
for r in 1 2 3; do
  for who in MAIN MINE; do
    B=$BMAIN; [ $who = MINE ] && B=$BMINE
    LD_LIBRARY_PATH=${!who} timeout 30 $B/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$who
    echo "-- $who: page $(awk -F'|' '/^\| OCR/{print $3}' $W/p.txt | tr -d ' ') ms ($(grep -oE '[0-9]+ of [0-9]+ lines found, [0-9.]+% of characters read' $W/p.txt)); $(grep -E '^\| (det|DB|rec|total)' $W/p.txt | awk -F'|' '{printf "%s=%s;", $2, $3}' | tr -s ' ') text vs main $(cmp -s $W/text-MAIN $W/text-$who && echo same || echo DIFFER) $(grep -E 'rror' $W/p.txt | head -2)"
  done
done
grep "^line" $W/p.txt | head -30
step done
