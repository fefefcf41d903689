#!/usr/bin/env bash
# cnn29 (issue 21): main's libgltensor against this branch's, the same binaries (bin/: built at
# cnn29 c7b4d38, test_nn at ae1daab), each library chosen per run through LD_LIBRARY_PATH
# (xz-packed in xlib/):
#   main = /work/main at 8417763 (built 18:23 UTC)
#   head = cnn29 c7b4d38: batch norm's partials merged in its elementwise kernels (3d94c99),
#          conv2's weight gradient as (colsT @ gm)^T (c7b4d38)
#   pool = cnn29 ae1daab: head + max pooling's backward per window where windows tile the input
#   exp  = c7b4d38 + CNN29_ELEM="local maxiters" overriding batch norm's row grid (uncommitted)
# The replayed CNN step alternating (3 rounds), the row grid's sweep, pool's per-kernel profile,
# the touched tests on the GPU, 10-epoch accuracy on the first 12000 / 5000 images (data/: the
# 20 MiB limit), torch.compile's epoch on synthetic IDX files of the real sizes. About 200 s.
set -x
B=$H/bin L=/tmp/cnn29-libs
for v in main head pool exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "${1:-2p;4p}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do for v in main head pool; do echo "== $v round $r"; with $v step; done; done
for e in "64 16" "64 8" "64 4" "128 8" "256 4" "64 2"; do echo "== exp CNN29_ELEM=$e"; CNN29_ELEM="$e" with exp step 4p; done
echo "== profile pool"; with pool timeout 20 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^kernel /,$p'
for t in "test_batch_norm" "test_nn --gtest_filter=Conv2d.*:Norms.*:Pool2d.*" "test_optim"; do
  echo "== $t"; with pool timeout 50 $B/$t --gtest_brief=1 2>&1 | cut -c1-300 | tail -6
done
date -u
for v in main pool; do for m in cnn mlp; do
  echo "== accuracy $v $m"; with $v timeout 30 $B/fashion_mnist --data $H/data --model $m --no-plots --out /tmp/cnn29-fm-$v-$m --overwrite 2>&1 | grep -E "^epoch 10/10  |final|rror"
done; done
date -u
mkdir -p /tmp/cnn29-syn && python3 - <<'PY'
import gzip, numpy as np
r = np.random.default_rng(0)
def w(name, dims):
    hdr = bytes([0, 0, 8, len(dims)]) + b"".join(int(d).to_bytes(4, "big") for d in dims)
    data = (r.integers(0, 10, dims) if len(dims) == 1 else r.integers(0, 256, dims)).astype(np.uint8)
    gzip.open("/tmp/cnn29-syn/" + name, "wb", compresslevel=1).write(hdr + data.tobytes())
w("train-images-idx3-ubyte.gz", [60000, 28, 28]); w("train-labels-idx1-ubyte.gz", [60000])
w("t10k-images-idx3-ubyte.gz", [10000, 28, 28]); w("t10k-labels-idx1-ubyte.gz", [10000])
PY
echo "== torch.compile"; timeout 80 python3 $H/torch_train_reference.py /tmp/cnn29-syn --models cnn --epochs 2 --compile reduce-overhead 2>&1 | grep -E "epoch|rror" | tail -3
date -u
