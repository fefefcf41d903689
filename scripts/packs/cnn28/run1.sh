#!/usr/bin/env bash
# cnn28 (issue 21), window 1. Four builds of libgltensor with the same binaries:
#   main  = /work/main/build (1af164c's sources), dgrad = cnn28 5758381 (conv2's input gradient as
#   the direct convolution of gy, tiles form), bn = cnn28 0858ebd (dgrad + batch norm's ReLU
#   gradient in its backward kernels), head = cnn28 ea2baf4 (bn + the flipped filters read through
#   negated strides, no flip copy; conv2's bias gradient summed over gy in place).
#   Libraries are xz-packed in $H/xlib (size), unpacked to /tmp.
set -x
B=$H/bin L=/tmp/cnn28-libs
for v in main dgrad bn head; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2; do
  for v in main dgrad bn head; do
    echo "== $v round $r"; with $v timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | head -4
  done
done
# conv2's forward in the tiles form too (GLTENSOR_CONV=direct; its weight gradient then from im2col again)
echo "== head GLTENSOR_CONV=direct"; GLTENSOR_CONV=direct with head timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | head -4
# per-kernel GPU profiles (10 eager steps, timer queries around each dispatch)
echo "== profile main"; with main timeout 40 $B/gltensor_train_profile --model cnn --steps 40
echo "== profile bn"; with bn timeout 40 $B/gltensor_train_profile --model cnn --steps 40 | tail -22
echo "== profile head"; with head timeout 40 $B/gltensor_train_profile --model cnn --steps 40
echo "== profile head GLTENSOR_CONV=direct"; GLTENSOR_CONV=direct with head timeout 40 $B/gltensor_train_profile --model cnn --steps 40 | tail -22
date -u
# accuracy: 10 epochs on the first 12000 training images, the first 5000 test images (the demo replays its steps)
echo "== accuracy main"; with main timeout 60 $B/fashion_mnist --data $H/data --model cnn --no-plots --out /tmp/cnn28-fm-main --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final"
echo "== accuracy head"; with head timeout 60 $B/fashion_mnist --data $H/data --model cnn --no-plots --out /tmp/cnn28-fm-head --overwrite 2>&1 | grep -E "^epoch [0-9]+/10  |final"
date -u
T=../shared/gpu/torch_train_reference.py; [ -e $T ] || T=shared/gpu/torch_train_reference.py
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
timeout 40 python3 $T /tmp/cnn28-syn --models cnn --epochs 2
timeout 80 python3 $T /tmp/cnn28-syn --models cnn --epochs 2 --compile reduce-overhead
date -u
