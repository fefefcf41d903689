#!/usr/bin/env bash
# cnn32 window 1 (issue 21), about 130 s: the replayed CNN step, main (889dfda) against new (cnn32 4838150:
# batch norm + ReLU + max pooling in one op, batch_norm_max_pool2d), alternating 4 rounds; per-op profiles;
# test_batch_norm on GLES and GL 4.6; 10-epoch accuracy (first 12000 / 5000 images, replayed steps);
# exp (new + exp-planes.patch: CNN32_BN_PLANES = images per workgroup of batch norm's row grid, default 1)
# swept. xlib/: each build's libgltensor.so.0 (stripped, xz). Binaries built at 4838150.
set -x
B=$H/bin L=/tmp/cnn32-libs
for v in main new exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do for v in main new; do echo "== $v round $r"; with $v step; done; done
for v in main new; do echo "== profile $v"; with $v timeout 25 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100; done
date -u
echo "== test_batch_norm new"; with new timeout 40 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_batch_norm new GL"; GLTENSOR_API=gl with new timeout 40 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
for v in main new; do
  echo "== accuracy $v cnn replay"; with $v timeout 30 $B/fashion_mnist --data $H/data --model cnn --replay --no-plots --out /tmp/cnn32-fmr-$v --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final|rror"
done
date -u
for p in 1 2 4 8 16 1; do
  echo "== exp CNN32_BN_PLANES=$p"; CNN32_BN_PLANES=$p with exp step
  CNN32_BN_PLANES=$p with exp timeout 25 $B/gltensor_train_profile --model cnn --steps 40 | grep -E "^(batch_norm.comp|batch_norm|batch_norm_backward) "
done
date -u
for v in main new; do echo "== $v round 4"; with $v step; done
date -u
