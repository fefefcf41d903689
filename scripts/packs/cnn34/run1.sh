#!/usr/bin/env bash
# cnn34 window 1 (issue 21), about 100 s: main (7708d85) against seed (cnn34 39b925e: backward's implicit seed
# uploaded, no fill dispatch) and exp (seed + an uncommitted experiment patch: CNN34_MM forces one matmul
# problem's kernel/split, CNN34_TRACE prints each dispatch's GPU time and each matmul plan) alternating 4 rounds;
# exp's per-dispatch trace; matmul kernel/split sweeps on the CNN's shapes; test_recording.
set -x
B=$H/bin L=/tmp/cnn34-libs
for v in main seed exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | grep -E "^per step|^replayed" | cut -c1-60; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4; do for v in main seed exp; do echo "== $v round $r"; with $v step; done; done
date -u
echo "== trace exp"
CNN34_TRACE=1 with exp timeout 20 $B/gltensor_train_profile --model cnn --steps 8 > /tmp/cnn34-trace.txt 2>&1
grep MMPLAN /tmp/cnn34-trace.txt | sort | uniq -c
grep TRACE /tmp/cnn34-trace.txt | tail -66
sed -n '/^kernel/,$p' /tmp/cnn34-trace.txt | cut -c1-80 | head -30
date -u
for mm in "64,25088,288=vec4" "64,25088,288=vec4s" \
  "288,64,25088=tile64/16" "288,64,25088=tile64/24" "288,64,25088=tile64/32" "288,64,25088=tile64/100" "288,64,25088=warp" \
  "128,128,3136=tile64/16" "128,128,3136=tile64/24" "128,128,3136=tile64/98" "128,128,3136=warp" "128,128,3136=reg" "128,128,3136=tile128" \
  "128,3136,128=tile64" "128,3136,128=warp" "128,3136,128=vec4"; do
  echo "== exp CNN34_MM=$mm"; CNN34_MM="$mm" with exp step
done
for it in 8 32; do echo "== exp GLTENSOR_BATCH_NORM_ITERS=$it"; GLTENSOR_BATCH_NORM_ITERS=$it with exp step; done
echo "== main again"; with main step
echo "== seed again"; with seed step
date -u
echo "== test_recording seed"; with seed timeout 60 $B/test_recording 2>&1 | grep -E "FAIL|PASSED|Failure|seed|OK \] Recording.Backwards" | head -20
date -u
