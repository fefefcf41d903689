#!/usr/bin/env bash
# cnn31 window 1 (issue 21), about 100 s: the replayed CNN step, main (e5dea4b) against new (cnn31 6716a40: dropout
# in one dispatch, its backward drawing the mask again; no ones fill, no mask multiply), alternating 3 rounds; the
# per-op profile of each; test_random (the dropout tests) on the GPU (GLES, GL); 10-epoch accuracy (first 12000 /
# 5000 images, replayed steps as the demo's default); exp (new + exp-wgrad.patch: CNN31_WGG = conv_wgrad's target
# workgroups, default 1024; CNN31_OPI = its first output channels per invocation, default 4) swept on the step.
# xlib/: each build's libgltensor.so.0 (stripped, xz). Binaries built at cnn31 6716a40.
set -x
B=$H/bin L=/tmp/cnn31-libs
for v in main new exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "2p;4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do for v in main new; do echo "== $v round $r"; with $v step; done; done
for v in main new; do echo "== profile $v"; with $v timeout 25 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^GPU time/,$p' | cut -c1-100; done
echo "== test_random new"; with new timeout 30 $B/test_random 2>&1 | tail -4
echo "== test_random new GL"; GLTENSOR_API=gl with new timeout 30 $B/test_random 2>&1 | tail -3
date -u
for v in main new; do
  echo "== accuracy $v cnn replay"; with $v timeout 30 $B/fashion_mnist --data $H/data --model cnn --replay --no-plots --out /tmp/cnn31-fmr-$v --overwrite 2>&1 | grep -E "^epoch (1|5|10)/10  |final|rror"
done
date -u
for s in 1024:4 2048:4 4096:4 8192:4 4096:2 16384:4 1024:4; do
  echo "== exp WGG:OPI=$s"; CNN31_WGG=${s%:*} CNN31_OPI=${s#*:} with exp step
  CNN31_WGG=${s%:*} CNN31_OPI=${s#*:} with exp timeout 25 $B/gltensor_train_profile --model cnn --steps 40 | grep -E "^(conv_wgrad.comp|reduce.comp|sum) "
done
date -u
for v in main new; do echo "== $v round 4"; with $v step; done
date -u
