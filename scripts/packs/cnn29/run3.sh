#!/usr/bin/env bash
# cnn29 (issue 21), window 3: the branch's tests on the H100 through OpenGL ES and desktop GL
# (GLTENSOR_API=gl; about 160 s), the test binaries built at 34224d2 (bin/), libgltensor = cnn29 ae1daab
# (= 34224d2's: the later commits change tests and text), and main's against it once more.
set -x
B=$H/bin L=/tmp/cnn29-libs
for v in main final; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2; do for v in main final; do echo "== $v round $r"; with $v timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n '2p;4p'; done; done
for api in gles gl; do
  for t in "test_batch_norm" "test_nn --gtest_filter=Conv2d.*:Norms.*:Pool2d.*:Linear.*" "test_optim" "test_conv_direct" "test_conv_ssbo_limit"; do
    echo "== $api $t"; GLTENSOR_API=$api with final timeout 40 $B/$t --gtest_brief=1 2>&1 | cut -c1-300 | grep -E "FAILED|PASSED|Failure|rror" | head -8
  done
done
echo "== test_kernel_variants"; with final timeout 40 $B/test_kernel_variants --gtest_filter='*Norms*:*Pooling*' --gtest_brief=1 2>&1 | tail -1
echo "== check_loops test_batch_norm"; GLTENSOR_CHECK_LOOPS=1 with final timeout 40 $B/test_batch_norm --gtest_brief=1 2>&1 | tail -1
echo "== check_loops test_nn Pool2d/Conv2d"; GLTENSOR_CHECK_LOOPS=1 with final timeout 60 $B/test_nn --gtest_filter='Pool2d.*:Conv2d.*' --gtest_brief=1 2>&1 | tail -1
date -u
