#!/usr/bin/env bash
# cnn30 window 2 (issue 21): the replayed CNN step, main against the branch, alternating; per-product profiles;
# the touched tests on the GPU; 10-epoch accuracy (first 12000 / 5000 images); torch.compile's epoch.
# Builds of libgltensor.so.0 (xz-packed in xlib/), the same binaries (bin/, built at 9641d83):
#   main = cdda1eb (/work/main)
#   head = cnn30 74428cf: split-K's sum + epilogue in one dispatch (matmul_sum.comp), conv2's weight gradient
#          written transposed by it (no copy)
#   new  = cnn30 9641d83: + FC1's forward as the 64 x 64 kernel in 49 K chunks of 64, conv2's forward on the warp
#          kernel's 64-row form writing NCHW (no permuting copy)
#   exp  = new + scripts/packs/cnn30/exp.patch (ops named per product, CNN30_MM="MxNxK:kernel:split;...")
set -x
B=$H/bin L=/tmp/cnn30-libs
for v in main head new exp; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model "${2:-cnn}" --steps 200 --replay | sed -n "${1:-2p;4p}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do for v in main head new; do echo "== $v round $r"; with $v step; done; done
for r in 1 2; do for v in main new; do echo "== mlp $v round $r"; with $v step 4p mlp; done; done
prof() { echo "== CNN30_MM=$1"; CNN30_MM="$1" with exp timeout 25 $B/gltensor_train_profile --model cnn --steps 40 2>&1 | sed -n '/^GPU time/,$p' | cut -c1-100; }
FC1F=128x128x3136 C2W=288x64x25088 C2F=64x25088x288
prof ""
prof "$FC1F:tile64:66;$C2W:tile64:98"
prof "$FC1F:tile64:98;$C2W:tile64:128"
prof "$FC1F:tile64:196;$C2W:tile64:196"
prof "$FC1F:tile64:28;$C2W:tile64:64;$C2F:tile64:0"
prof ""
for t in "test_matmul --gtest_filter=*SplitK*:*Epilogue*:*Linear*:Matmul.Shapes*" "test_nn --gtest_filter=Conv2d.*:Linear.*:Norms.*:Pool2d.*"; do
  echo "== $t"; with new timeout 60 $B/$t --gtest_brief=1 2>&1 | cut -c1-300 | tail -6
  echo "== GL $t"; GLTENSOR_API=gl with new timeout 60 $B/$t --gtest_brief=1 2>&1 | cut -c1-300 | tail -4
done
echo "== CHECK_LOOPS test_matmul"; GLTENSOR_CHECK_LOOPS=1 with new timeout 60 $B/test_matmul --gtest_filter='*SplitKSum*:*EpilogueAffine*' --gtest_brief=1 2>&1 | tail -3
date -u
for v in main new; do for m in cnn mlp; do
  echo "== accuracy $v $m"; with $v timeout 40 $B/fashion_mnist --data $H/data --model $m --no-plots --out /tmp/cnn30-fm-$v-$m --overwrite 2>&1 | grep -E "^epoch 10/10  |final|rror"
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
for v in main new; do echo "== $v before torch"; with $v step 4p; done
echo "== torch.compile"; timeout 90 python3 $H/torch_train_reference.py /tmp/cnn30-syn --models cnn --epochs 2 --compile reduce-overhead 2>&1 | grep -E "epoch|rror" | tail -3
for v in main new; do echo "== $v after torch"; with $v step 4p; done
date -u
