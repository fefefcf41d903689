#!/usr/bin/env bash
# cnn34 window 2 (issue 21), about 60-90 s: main (7708d85) against new (cnn34 a22b147: the seed upload, batch
# norm's GPU first level at 8 values, the conv2 weight gradient's GEMM in 98 chunks) alternating 5 rounds; exp2
# (new + the uncommitted experiment patch: CNN34_MM forces a matmul problem's kernel/split, CNN34_WG conv_wgrad's
# workgroups and channels per invocation, CNN34_DX the input gradient's tiles blocking, CNN34_POOLIT the fused
# pooling grid's windows per invocation, CNN34_TRACE per-dispatch GPU times) trace and sweeps; new's tests.
set -x
B=$H/bin L=/tmp/cnn34-libs
for v in main new exp2; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | grep -E "^per step|^replayed" | cut -c1-60 | tr '\n' ' '; echo; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4 5; do for v in main new; do echo "== $v round $r"; with $v step; done; done
date -u
echo "== trace new (exp2)"
CNN34_TRACE=1 with exp2 timeout 20 $B/gltensor_train_profile --model cnn --steps 8 > /tmp/cnn34-trace.txt 2>&1
grep MMPLAN /tmp/cnn34-trace.txt | sort | uniq -c
grep TRACE /tmp/cnn34-trace.txt | tail -33
date -u
sweep() { echo "== exp2 $*"; ( export "$@"; with exp2 step ); }
sweep CNN34_NONE=1
for s in 64 80 128 160 196 256; do sweep CNN34_MM="288,64,25088=tile64/$s"; done
for g in 1024 2048 4096 8192; do for o in 1 2 4; do sweep CNN34_WG="$g,$o"; done; done
for d in "16,98,1" "16,98,4" "8,98,2" "8,98,4" "16,49,2" "32,98,2" "16,128,2"; do sweep CNN34_DX="$d"; done
for p in 1 2; do sweep CNN34_POOLIT=$p; done
sweep GLTENSOR_BATCH_NORM_ITERS=16
sweep CNN34_MM="128,3136,128=tile64"
sweep CNN34_MM="128,128,3136=tile64/32"
sweep CNN34_NONE=2
date -u
echo "== main again"; with main step
echo "== new again"; with new step
date -u
echo "== test_batch_norm new"; with new timeout 40 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_batch_norm new GL"; GLTENSOR_API=gl with new timeout 40 $B/test_batch_norm 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_nn new"; with new timeout 60 $B/test_nn 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
echo "== test_recording new"; with new timeout 40 $B/test_recording 2>&1 | grep -E "FAIL|PASSED|Failure|seed" | head -20
date -u
