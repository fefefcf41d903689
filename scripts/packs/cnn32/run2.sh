#!/usr/bin/env bash
# cnn32 window 2 (issue 21), about 110 s: the replayed CNN step, main (889dfda), sg (cnn32 1cfadb0: batch norm +
# ReLU + max pooling in one op; conv_wgrad's sums through subgroupAdd) and new (cnn32 7065f9a: + the fused
# op's backward over the pooling windows) alternating 4 rounds; per-op profiles; test_batch_norm on GLES and
# GL 4.6; conv_wgrad's tests with subgroups, forced without (GLTENSOR_SUBGROUPS=0) and with a sabotaged subgroup
# sum (sab/: must fail); new with GLTENSOR_SUBGROUPS=0; 10-epoch accuracy (first 12000 / 5000 images, replayed).
# xlib/: each build's libgltensor.so.0 (stripped, xz). Binaries built at 7065f9a.
set -x
B=$H/bin L=/tmp/cnn32-libs
for v in main sg new; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
prof() { timeout 25 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do for v in main sg new; do echo "== $v round $r"; with $v step; done; done
for v in main new; do echo "== profile $v"; with $v prof; done
date -u
echo "== test_batch_norm new"; with new timeout 40 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_batch_norm new GL"; GLTENSOR_API=gl with new timeout 40 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
F='Conv2d.DirectWeightGradient:Conv2d.WeightGradientPastTheLoopLimit:Conv2d.SplitKUnderALoweredLoopLimit'
echo "== test_nn conv new"; with new timeout 40 $B/test_nn --gtest_filter=$F 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -10
echo "== test_nn conv new SUBGROUPS=0"; GLTENSOR_SUBGROUPS=0 with new timeout 40 $B/test_nn --gtest_filter=$F 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -10
echo "== test_nn conv new sabotaged subgroup sum (must fail)"; GLTENSOR_GLSL_DIR=$H/sab with new timeout 40 $B/test_nn --gtest_filter=$F 2>&1 | grep -E "FAIL|PASSED" | head -6
date -u
for v in main sg new; do
  echo "== accuracy $v cnn replay"; with $v timeout 30 $B/fashion_mnist --data $H/data --model cnn --replay --no-plots --out /tmp/cnn32-fmr-$v --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final|rror"
done
date -u
echo "== new SUBGROUPS=0"; GLTENSOR_SUBGROUPS=0 with new step; GLTENSOR_SUBGROUPS=0 with new prof | grep -E "^(conv_wgrad.comp|reduce.comp|reduce_rows.comp) "
for v in main sg new; do echo "== $v round 4"; with $v step; done
date -u
