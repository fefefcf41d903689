#!/usr/bin/env bash
# cnn28 (issue 21), window 2. Builds of libgltensor with the same binaries (xz-packed in $H/xlib):
#   main  = /work/main/build (1af164c's sources); final = cnn28 2029652 (conv2's input gradient as
#   the direct convolution of gy with the filters read flipped, batch norm's ReLU gradient in its
#   backward kernels, conv2's bias gradient over gy in place); dgrad = 5758381 and bn = 0858ebd
#   (the intermediate commits, eager only: their flip copy breaks replays); exp = final with
#   CNN28_T="opi px tx ks" overriding the tiles form's blocking, CNN28_BIAS=1 conv2's bias gradient
#   as row sums of gy then a sum over the batch (uncommitted sweep build).
set -x
B=$H/bin L=/tmp/cnn28-libs
for v in main dgrad bn final exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3 4 5; do
  for v in main final; do
    echo "== $v round $r"; with $v timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | head -4
  done
done
# eager steps of every build (attribution)
for v in main dgrad bn final; do
  echo "== $v eager"; with $v timeout 40 $B/gltensor_train_profile --model cnn --steps 200 | head -3
done
echo "== final mlp"; with final timeout 40 $B/gltensor_train_profile --model mlp --steps 200 --replay | head -4
# per-kernel GPU profile (10 eager steps, timer queries around each dispatch)
echo "== profile final"; with final timeout 40 $B/gltensor_train_profile --model cnn --steps 40
date -u
# the tests the branch touches, on the H100 (GLES 3.2)
for t in "test_nn --gtest_filter=Conv2d.*:Norms.*" "test_optim --gtest_filter=Modules.*" "test_batch_norm"; do
  echo "== $t"; with final timeout 120 $B/$t --gtest_brief=1 2>&1 | tail -3
done
# the input gradient's tiles blocking (C' = 64 -> 32 channels, 14 x 14, batch 128): replayed step per setting
for cfg in "4 2 128 0" "4 2 98 0" "4 2 98 2" "4 2 98 1" "8 2 98 2" "8 2 98 4" "4 7 28 4" "8 7 28 8" "8 2 64 4" "16 2 98 2" "4 1 196 2" "8 4 56 4" "4 2 128 0"; do
  echo "== CNN28_T=$cfg"; CNN28_T="$cfg" with exp timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n 4p
done
for r in 1 2; do
  echo "== exp round $r"; with exp timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n 4p
  echo "== exp CNN28_BIAS=1 round $r"; CNN28_BIAS=1 with exp timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n 4p
done
echo "== profile exp CNN28_BIAS=1"; CNN28_BIAS=1 with exp timeout 40 $B/gltensor_train_profile --model cnn --steps 40 | tail -16
# the matmul kernels forced for every product (conv2's GEMMs among them): per-kernel profiles
for k in warp vec4; do
  echo "== GLTENSOR_MATMUL_KERNEL=$k"; GLTENSOR_MATMUL_KERNEL=$k with final timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n 4p
  GLTENSOR_MATMUL_KERNEL=$k with final timeout 40 $B/gltensor_train_profile --model cnn --steps 40 | tail -16
done
for cfg in "8 2 98 2" "8 4 56 4" "16 2 98 2"; do
  echo "== test CNN28_T=$cfg"; CNN28_T="$cfg" with exp timeout 120 $B/test_nn --gtest_filter=Conv2d.DirectInputGradient --gtest_brief=1 2>&1 | tail -2
done
date -u
# accuracy: 10 epochs on the first 12000 training images, the first 5000 test images (the demo replays its steps)
for v in main final; do
  for m in cnn mlp; do
    echo "== accuracy $v $m"; with $v timeout 60 $B/fashion_mnist --data $H/data --model $m --no-plots --out /tmp/cnn28-fm-$v-$m --overwrite 2>&1 | grep -E "^epoch 10/10  |final"
  done
done
date -u
# PyTorch on synthetic IDX files of the real sizes (2 epochs: the second is the steady one)
mkdir -p /tmp/cnn28-syn && python3 - <<'PY'
import gzip, numpy as np
r = np.random.default_rng(0)
def w(name, dims):
    hdr = bytes([0, 0, 8, len(dims)]) + b"".join(int(d).to_bytes(4, "big") for d in dims)
    data = (r.integers(0, 10, dims) if len(dims) == 1 else r.integers(0, 256, dims)).astype(np.uint8)
    gzip.open("/tmp/cnn28-syn/" + name, "wb", compresslevel=1).write(hdr + data.tobytes())
w("train-images-idx3-ubyte.gz", [60000, 28, 28]); w("train-labels-idx1-ubyte.gz", [60000])
w("t10k-images-idx3-ubyte.gz", [10000, 28, 28]); w("t10k-labels-idx1-ubyte.gz", [10000])
PY
date -u
timeout 40 python3 $H/torch_train_reference.py /tmp/cnn28-syn --models cnn --epochs 2
date -u
timeout 90 python3 $H/torch_train_reference.py /tmp/cnn28-syn --models cnn --epochs 2 --compile reduce-overhead
date -u
