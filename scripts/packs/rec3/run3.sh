#!/usr/bin/env bash
# rec3's third GPU pack: rec3 at its head (softmax in one read, the pipeline's gather, conv_direct's
# branch-free taps, the warp kernel for long batched products) against main, alternating.
. "$H/common.sh"  # the prologue (unpack, MINE/MAIN, step) and page/rec

step "rec3: tests on the H100 (test_matmul warp/batched/epilogues, test_conv_direct, test_reduce Softmax)"
LD_LIBRARY_PATH=$MINE timeout 60 "$H/bin/test_matmul" --gtest_filter='Matmul.WarpTiledKernel:Matmul.EpilogueAffineInEveryKernel:Matmul.BatchedWithBroadcast:Matmul.EveryKernelPath:Matmul.Shapes2DAndTileEdges' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) |differ|seed=" | head -20
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_conv_direct" 2>&1 | grep -E "^\[ *(FAILED|PASSED) |differ|seed=" | head -10
LD_LIBRARY_PATH=$MINE timeout 40 "$H/bin/test_reduce" --gtest_filter='Softmax.*' 2>&1 | grep -E "^\[ *(FAILED|PASSED) |differ|seed=" | head -10

step "the page: gltensor_ocr_bench --only ocr960 --runs 20 --images gpu --ort none --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 (main, rec3 x3)"
for who in MAIN MINE MAIN MINE MAIN MINE; do
  echo "-- $who $(page $who 30 | grep -E "^\| (OCR|rec: upload|total)|rror" | sed 's/rec batch all, call cost 6000, det 640, no cls, replay, gpu images | //; s/| - | - | det \[1, 3, 640, 640\], rec 2 calls, 2 shapes: \[16, 3, 48, 832\] \[9, 3, 48, 1376\]; 25696 columns run for 17588 of text;//' | cut -c1-150 | tr '\n' ' ')"
done

step "the recognizer alone, replayed (gltensor-run --bench 100 --replay; main, rec3 x2)"
for shape in 16x3x48x832 9x3x48x1376 1x3x48x320; do
  for who in MAIN MINE MAIN MINE; do
    echo "-- $who $shape: $(rec $who 20 $shape --bench 100 --replay | grep -E "^bench:|rror" | cut -c1-120)"
  done
done

step "rec3: the page by call cost (one process)"
page MINE 40 --runs 20 --rec-call-cost 3000 --rec-call-cost 4500 --rec-call-cost 6000 | grep -E "^\| (OCR|rec: upload|total)|rror" | cut -c1-260

step "rec3: GPU time per node at 16x3x48x832 (trace + profile, 3 runs) -> \$OUT/rec3-trace3.txt"
GLTENSOR_MODEL_TRACE=1 rec MINE 30 16x3x48x832 --bench 3 --profile > "$OUT/rec3-trace3.txt"
sed -n '/^profile over/,$p' "$OUT/rec3-trace3.txt" | head -26; sed -n '/^kernel /,$p' "$OUT/rec3-trace3.txt" | head -8
step done
