#!/usr/bin/env bash
# cnn33 window 3 (issue 21), about 60 s: the final library (cnn33 ad87733's, unchanged to 0cbf247) against main
# (d481e7a) alternating 5 rounds, with exp (ad87733 + exp-g.patch, CNN33_G=1: conv2's bias gradient in one pass of
# the segmented reduction, 33 dispatches); new's profile; test_nn's Pool2d and Conv2d (built at 0cbf247: the
# split-grid case resized) and test_batch_norm on GLES and GL 4.6.
set -x
B=$H/bin L=/tmp/cnn33-libs
for v in main new exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 15 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4 5; do for v in main new exp; do echo "== $v round $r"; CNN33_G=1 with $v step; done; done
date -u
echo "== profile new"; with new timeout 15 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100 | head -45
echo "== profile exp"; CNN33_G=1 with exp timeout 15 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^kernel/,$p' | grep -E "reduce|^kernel"
echo "== test_nn Pool2d Conv2d new"; with new timeout 40 $B/test_nn --gtest_filter='Pool2d.*:Conv2d.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_nn Pool2d Conv2d new GL"; GLTENSOR_API=gl with new timeout 40 $B/test_nn --gtest_filter='Pool2d.*:Conv2d.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_batch_norm new"; with new timeout 30 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
