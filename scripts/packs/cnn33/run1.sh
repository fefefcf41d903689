#!/usr/bin/env bash
# cnn33 window 1 (issue 21), about 130 s: the replayed CNN step, main (d481e7a) against seg (cnn33 96fab3f: max
# pooling's last NaN, batch norm's planes knob gone, conv2's bias gradient as one segmented reduce_rows) and new
# (cnn33 a4be8e9: + gy's rows for the weight-gradient GEMM through a tiled transpose, conv.comp ROWS_T)
# alternating 4 rounds; exp (seg + exp-g.patch: CNN33_G forces the segmented reduction's chunks per row);
# per-op profiles; the changed tests on GLES; 10-epoch accuracy. xlib/: each build's libgltensor.so.0 (xz).
# Binaries built at a4be8e9.
set -x
B=$H/bin L=/tmp/cnn33-libs
for v in main seg new exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 15 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4; do for v in main seg new; do echo "== $v round $r"; with $v step; done; done
for g in 1 2 1 2; do echo "== exp CNN33_G=$g"; CNN33_G=$g with exp step; done
date -u
for v in main new; do echo "== profile $v"; with $v timeout 15 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100 | head -45; done
for g in 1 2; do echo "== profile exp G=$g"; CNN33_G=$g with exp timeout 15 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^kernel/,$p' | grep -E "reduce|^kernel" ; done
date -u
echo "== test_batch_norm new"; with new timeout 30 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_nn Pool2d Conv2d new"; with new timeout 40 $B/test_nn --gtest_filter='Pool2d.*:Conv2d.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_reduce Reduce new"; with new timeout 30 $B/test_reduce --gtest_filter='Reduce.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
for v in main new; do
  echo "== accuracy $v cnn replay"; with $v timeout 25 $B/fashion_mnist --data $H/data --model cnn --replay --no-plots --out /tmp/cnn33-fmr-$v --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final|rror"
done
date -u
