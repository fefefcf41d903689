#!/usr/bin/env bash
# cnn28 (issue 21), window 3. Builds of libgltensor with the same binaries (xz-packed in $H/xlib):
#   main = /work/main/build (1af164c's sources); final = cnn28 2029652 (window 2's);
#   final2 = cnn28 d59df59 (the input gradient's tiles blocking OPI 16, a workgroup per plane, KS 2;
#   the bias gradient as row sums then a sum over the batch).
set -x
B=$H/bin L=/tmp/cnn28-libs
for v in main final final2; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4; do
  for v in main final final2; do
    echo "== $v round $r"; with $v timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n '2p;4p'
  done
done
echo "== profile final2"; with final2 timeout 40 $B/gltensor_train_profile --model cnn --steps 40 | tail -16
# window 2's failing test with its output (old binary: bit-for-bit comparison), then the new one
echo "== test_batch_norm_old"; with final2 timeout 60 $B/test_batch_norm_old --gtest_filter='*Relu*' 2>&1 | grep -E "Failure|dx|dweight|dbias|y:|Which is|OK|FAILED|trace|\]" | cut -c1-300 | head -40
for t in "test_batch_norm" "test_nn --gtest_filter=Conv2d.*:Norms.*" "test_optim --gtest_filter=Modules.*"; do
  echo "== $t"; with final2 timeout 120 $B/$t --gtest_brief=1 2>&1 | cut -c1-300 | tail -12
done
date -u
for v in main final2; do
  echo "== accuracy $v cnn"; with $v timeout 60 $B/fashion_mnist --data $H/data --model cnn --no-plots --out /tmp/cnn28-fm3-$v --overwrite 2>&1 | grep -E "^epoch 10/10  |final"
done
date -u
