#!/usr/bin/env bash
# int8z window 1 (branch int8z, commit in $H/COMMIT; issue 22): where the QDQ net's GPU time goes.
# (1) GPU ms per node and per kernel file (gltensor_model_bench --qdq-loads 1, the branch's new
# per-kernel lines) for the four nets; (2) the 56x56 nets with the warp path forced on ragged
# tiles (lab knob GLTENSOR_INT8Z_EDGE=128 / 64 rows); (3) kernel copies (variants.py, timing
# only): the requantization as one FMA from two per-row loads (epifma), none (epinone), im2col
# writing nothing (icolnoop); (4) the four nets, main's build and this one (default path).
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
export GLTENSOR_CACHE_DIR=/tmp/int8z-cache1
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt ${1:-200} ]; }
L="--qdq-loads 1 --runs 10"
F='^[0-9] (f32|int8)|^\| [0-9]'
echo "=== (1) per node and per kernel, default path"
for net in wide narrow; do for s in 112 56; do
  ok 90 && timeout 15 $B/gltensor_model_bench $L --qdq-net $net --qdq-size $s 2>&1 | grep -E "$F|^device"
done; done
echo "=== (2) 56x56 on the warp path, ragged tiles of 128 / 64 rows"
for e in 128 64; do for net in wide narrow; do
  ok 110 && GLTENSOR_INT8Z_EDGE=$e timeout 15 $B/gltensor_model_bench $L --qdq-net $net --qdq-size 56 2>&1 | grep -E "$F"
done; done
echo "=== (3) kernel copies at 112"
for v in epifma epinone icolnoop; do for net in wide narrow; do
  ok 140 && GLTENSOR_GLSL_DIR=$H/glsl-$v timeout 15 $B/gltensor_model_bench $L --qdq-net $net 2>&1 | grep -E "$F"
done; done
echo "=== (4) the four nets: main's build, this build"
M="--qdq --runs 20 --gpu-time"
ok 150 && LD_LIBRARY_PATH=$H/main/lib:$LD_LIBRARY_PATH GLTENSOR_CACHE_DIR=/tmp/int8z-cache1m timeout 28 $H/main/bin/gltensor_model_bench $M 2>&1 | grep -v "^|---"
ok 175 && timeout 28 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
echo "--- end t=${SECONDS}s"
