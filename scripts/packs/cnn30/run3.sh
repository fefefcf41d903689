#!/usr/bin/env bash
# cnn30 window 3 (issue 21): about 110 s (torch.compile's first epoch ~55 s). The replayed CNN step main against
# the branch, alternating; 10-epoch accuracy on the first 12000 / 5000 images (data/); torch.compile's epoch on
# synthetic IDX files of the real sizes; the steps again after it. libgltensor.so.0 per build (xlib/, xz):
#   main = cdda1eb (/work/main); new = cnn30 9641d83 (split-K's sum in one dispatch, conv2's weight gradient
#   written transposed, FC1's forward in 49 K chunks, conv2's forward on the warp kernel). Binaries built at 9641d83.
# lib/: PLplot's libraries and theirs (freetype, png, brotli: window 2 lacked libfreetype).
set -x
B=$H/bin L=/tmp/cnn30-libs3
for v in main new; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "4p"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2; do for v in main new; do echo "== $v round $r"; with $v step; done; done
for v in main new; do for m in cnn mlp; do
  echo "== accuracy $v $m"; with $v timeout 25 $B/fashion_mnist --data $H/data --model $m --no-plots --out /tmp/cnn30-fm-$v-$m --overwrite 2>&1 | grep -E "^epoch 10/10  |final|rror"
done; done
date -u
mkdir -p /tmp/cnn30-syn && python3 - <<'PY'
import gzip, numpy as np
r = np.random.default_rng(0)
def w(name, dims):
    hdr = bytes([0, 0, 8, len(dims)]) + b"".join(int(d).to_bytes(4, "big") for d in dims)
    data = (r.integers(0, 10, dims) if len(dims) == 1 else r.integers(0, 256, dims)).astype(np.uint8)
    gzip.open("/tmp/cnn30-syn/" + name, "wb", compresslevel=1).write(hdr + data.tobytes())
w("train-images-idx3-ubyte.gz", [60000, 28, 28]); w("train-labels-idx1-ubyte.gz", [60000])
w("t10k-images-idx3-ubyte.gz", [10000, 28, 28]); w("t10k-labels-idx1-ubyte.gz", [10000])
PY
date -u
echo "== torch.compile"; timeout 85 python3 $H/torch_train_reference.py /tmp/cnn30-syn --models cnn --epochs 2 --compile reduce-overhead 2>&1 | grep -E "epoch|rror" | tail -3
date -u
for v in main new; do echo "== $v after torch"; with $v step; done
date -u
