#!/usr/bin/env bash
# cnn31 window 2 (issue 21), about 60 s: the replayed CNN step, main (e5dea4b) against new (cnn31 6716a40), alternating
# 3 rounds; exp (new + exp-wgrad.patch: CNN31_WGG = conv_wgrad's target workgroups, default 1024; CNN31_OPI = its
# first output channels per invocation, default 4) swept below 1024 (window 1: more workgroups were slower,
# 1024 -> 8192: 46.6 -> 92 us per call); GLTENSOR_BATCH_NORM_ITERS 8 / 32 on new.
# xlib/: each build's libgltensor.so.0 (stripped, xz). Binaries built at cnn31 6716a40.
set -x
B=$H/bin L=/tmp/cnn31-libs
for v in main new exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do for v in main new; do echo "== $v round $r"; with $v step; done; done
for s in 1024:4 512:4 256:4 128:4 64:4 512:2 256:2 128:2 1024:2 256:1 128:1 1024:4; do
  echo "== exp WGG:OPI=$s"; CNN31_WGG=${s%:*} CNN31_OPI=${s#*:} with exp step
  CNN31_WGG=${s%:*} CNN31_OPI=${s#*:} with exp timeout 25 $B/gltensor_train_profile --model cnn --steps 40 | grep -E "^(conv_wgrad.comp|reduce.comp) "
done
date -u
for s in 256:4 128:4 1024:4; do echo "== exp again WGG:OPI=$s"; CNN31_WGG=${s%:*} CNN31_OPI=${s#*:} with exp step; done
for it in 8 32 16; do echo "== new BATCH_NORM_ITERS=$it"; GLTENSOR_BATCH_NORM_ITERS=$it with new step; done
for v in main new; do echo "== $v round 4"; with $v step; done
date -u
