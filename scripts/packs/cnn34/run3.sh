#!/usr/bin/env bash
# cnn34 window 3 (issue 21), about 60-90 s: main (7708d85), new (cnn34 e8c550d: seed upload, batch norm's GPU first
# level at 8 values, the doubled split-K target for the 64 x 64 kernel's few tiles), new2 (30b1ded: + conv2d
# backward's issue order), new3 (86de403: + the optimizer's state slab per dispatch) alternating 5 rounds; exp3
# (new3 + the uncommitted experiment patch exp3.patch: CNN34_ISSUE prints each dispatch and barrier as issued,
# CNN34_TRACE per-dispatch GPU times, CNN34_MM a matmul problem's kernel/split); mm_shapes (other shapes the
# split-K rule changes) main against new3; new3's tests.
set -x
B=$H/bin L=/tmp/cnn34-libs
for v in main new new2 new3 exp3; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | grep -E "^per step|^replayed" | cut -c1-60 | tr '\n' ' '; echo; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4 5; do for v in main new new2 new3; do echo "== $v round $r"; with $v step; done; done
date -u
echo "== issue order new3 (exp3)"
CNN34_ISSUE=1 with exp3 timeout 20 $B/gltensor_train_profile --model cnn --steps 1 2>&1 | grep ISSUE | tail -62
echo "== trace new3 (exp3)"
CNN34_TRACE=1 with exp3 timeout 20 $B/gltensor_train_profile --model cnn --steps 4 2>&1 | grep TRACE | tail -33
date -u
echo "== mm_shapes (M,N,K) main / new3, 3 rounds"
S="288,64,25088 100,200,32768 200,50,65536 576,100,12288 1000,40,8192 130,130,4096"
for r in 1 2 3; do for v in main new3; do echo "== mm $v round $r"; with $v timeout 30 $B/mm_shapes $S; done; done
date -u
sweep() { echo "== exp3 $*"; ( export "$@"; with exp3 step ); }
sweep CNN34_NONE=1
for s in 80 160 80 160; do sweep CNN34_MM="288,64,25088=tile64/$s"; done
sweep GLTENSOR_CONV_DIRECT=rows
sweep GLTENSOR_CONV=im2col
sweep CNN34_NONE=2
date -u
echo "== main again"; with main step
echo "== new3 again"; with new3 step
echo "== test_nn new3"; with new3 timeout 60 $B/test_nn 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_nn new3 GL"; GLTENSOR_API=gl with new3 timeout 60 $B/test_nn --gtest_filter='Conv2d.*' 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_optim new3"; with new3 timeout 60 $B/test_optim 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_recording new3"; with new3 timeout 40 $B/test_recording 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
