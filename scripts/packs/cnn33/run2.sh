#!/usr/bin/env bash
# cnn33 window 2 (issue 21), about 120 s: the replayed CNN step, main (d481e7a) against w1 (cnn33 a4be8e9: window 1's
# new), im (cnn33 f9b4497: + im2col's grid over all images' positions) and new (cnn33 ad87733: + batch_norm_max_pool2d's
# window grid over each channel's windows) alternating 5 rounds; per-op profiles; the changed tests on GLES and GL 4.6;
# the sabotaged kernels (sab.tar.xz, GLTENSOR_GLSL_DIR) failing their tests; 10-epoch accuracy. xlib/: each build's
# libgltensor.so.0 (stripped, xz). Binaries built at ad87733.
set -x
B=$H/bin L=/tmp/cnn33-libs S=/tmp/cnn33-sab
for v in main w1 im new; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
mkdir -p $S && tar -C $S -xJf $H/sab.tar.xz
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 15 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4 5; do for v in main w1 im new; do echo "== $v round $r"; with $v step; done; done
date -u
for v in main new; do echo "== profile $v"; with $v timeout 15 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100 | head -45; done
date -u
echo "== test_batch_norm new"; with new timeout 30 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed|fallback" | head -20
echo "== test_batch_norm new GL"; GLTENSOR_API=gl with new timeout 30 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed|fallback" | head -20
echo "== test_nn Pool2d Conv2d new"; with new timeout 40 $B/test_nn --gtest_filter='Pool2d.*:Conv2d.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_reduce Reduce new"; with new timeout 30 $B/test_reduce --gtest_filter='Reduce.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_conv_direct new"; with new timeout 40 $B/test_conv_direct 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
echo "== sab im2col"; GLTENSOR_GLSL_DIR=$S/im2col with new timeout 40 $B/test_nn --gtest_filter='Conv2d.*' 2>&1 | grep -E "FAILED  \]|PASSED" | head -4
echo "== sab bndx"; GLTENSOR_GLSL_DIR=$S/bndx with new timeout 30 $B/test_batch_norm --gtest_filter='*MaxPool*' 2>&1 | grep -E "FAILED  \]|PASSED" | head -4
echo "== sab nanpool"; GLTENSOR_GLSL_DIR=$S/nanpool with new timeout 30 $B/test_nn --gtest_filter='Pool2d.MaxGradientGoesToTheLastNaN' 2>&1 | grep -E "FAILED  \]|PASSED" | head -4
echo "== sab rows"; GLTENSOR_GLSL_DIR=$S/rows with new timeout 30 $B/test_nn --gtest_filter='Conv2d.GradientRowsTransposedInTiles' 2>&1 | grep -E "FAILED  \]|PASSED" | head -4
echo "== sab seg"; GLTENSOR_GLSL_DIR=$S/seg with new timeout 30 $B/test_reduce --gtest_filter='Reduce.SegmentedRowsOverDims023' 2>&1 | grep -E "FAILED  \]|PASSED" | head -4
date -u
for v in main new; do
  echo "== accuracy $v cnn replay"; with $v timeout 30 $B/fashion_mnist --data $H/data --model cnn --replay --no-plots --out /tmp/cnn33-fmr-$v --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final|rror"
done
date -u
