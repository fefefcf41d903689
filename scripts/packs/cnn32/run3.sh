#!/usr/bin/env bash
# cnn32 window 3 (issue 21), about 60 s: the final verification. The replayed CNN step, main (889dfda) against
# new (cnn32 7c32501 = 1667e70's library: batch norm + ReLU + max pooling in one op with its backward over the
# pooling windows; conv_wgrad as main's) alternating 4 rounds; new's per-op profile; test_batch_norm on GLES;
# 10-epoch accuracy (first 12000 / 5000 images, replayed steps). xlib/: each build's libgltensor.so.0
# (stripped, xz). Binaries built at 1667e70.
set -x
B=$H/bin L=/tmp/cnn32-libs
for v in main new; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 15 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4; do for v in main new; do echo "== $v round $r"; with $v step; done; done
echo "== profile new"; with new timeout 15 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100 | head -20
date -u
echo "== test_batch_norm new"; with new timeout 30 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
for v in main new; do
  echo "== accuracy $v cnn replay"; with $v timeout 20 $B/fashion_mnist --data $H/data --model cnn --replay --no-plots --out /tmp/cnn32-fmr-$v --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final|rror"
done
date -u
