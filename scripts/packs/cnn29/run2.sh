#!/usr/bin/env bash
# cnn29 (issue 21), window 2. The same binaries as window 1 (bin/), libgltensor per run (xlib/):
#   main = /work/main at 8417763; final = cnn29 ae1daab (the branch's code: batch norm's partials
#   merged in its elementwise kernels, conv2's weight gradient as (colsT @ gm)^T, max pooling's
#   backward per tiling window).
# Batch norm's reductions through GLTENSOR_GLSL_DIR (a kernel file read instead of the embedded):
#   glslA: BN_STATS' first level as sums and sums of squares of the shifted values (no division
#          per value, no break: loads past the channel's end read its first value, which adds 0)
#   glslB: glslA + BN_GRAD_SUMS without the break (past the end: the first value, counted as 0)
#   glslC: BN_STATS' first level in blocks of 16 values loaded first, each block's mean and M2 in
#          two passes over the registers, merged (no division per value; as precise as Welford)
#   glslD: glslC + BN_GRAD_SUMS in blocks of 16 without a branch
# and the first level's values per invocation (GLTENSOR_BATCH_NORM_ITERS 8, 32; 16 planned).
# The touched tests with glslD on the GPU (test_batch_norm at 517b22e: the outlier test), accuracy (first 12000 / 5000 images), torch.compile.
set -x
B=$H/bin L=/tmp/cnn29-libs
for v in main final; do mkdir -p $L/$v && python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" $H/xlib/$v.xz $L/$v/libgltensor.so.0; done
with() { local v=$1; shift; LD_LIBRARY_PATH=$L/$v:$LD_LIBRARY_PATH "$@"; }
step() { timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n "${1:-2p;4p}"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2 3; do
  for v in main final; do echo "== $v round $r"; with $v step; done
  for g in A B C D; do echo "== final glsl$g round $r"; GLTENSOR_GLSL_DIR=$H/glsl$g with final step 4p; done
done
for i in 8 32; do echo "== final BATCH_NORM_ITERS=$i"; GLTENSOR_BATCH_NORM_ITERS=$i with final step 4p; done
echo "== final glslD BATCH_NORM_ITERS=32"; GLTENSOR_GLSL_DIR=$H/glslD GLTENSOR_BATCH_NORM_ITERS=32 with final step 4p
echo "== profile final glslD"; GLTENSOR_GLSL_DIR=$H/glslD with final timeout 20 $B/gltensor_train_profile --model cnn --steps 40 | sed -n '/^kernel /,$p' | head -4
echo "== test_batch_norm glslD"; GLTENSOR_GLSL_DIR=$H/glslD with final timeout 40 $B/test_batch_norm --gtest_brief=1 2>&1 | tail -3
echo "== test_nn Norms glslD"; GLTENSOR_GLSL_DIR=$H/glslD with final timeout 40 $B/test_nn --gtest_filter='Norms.*' --gtest_brief=1 2>&1 | tail -2
date -u
for v in main final finalD; do for m in cnn mlp; do
  [ $v = finalD ] && [ $m = mlp ] && continue
  echo "== accuracy $v $m"; ( [ $v = finalD ] && export GLTENSOR_GLSL_DIR=$H/glslD; with ${v%D} timeout 30 $B/fashion_mnist --data $H/data --model $m --no-plots --out /tmp/cnn29-fm2-$v-$m --overwrite 2>&1 | grep -E "^epoch 10/10  |final|rror" )
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
echo "== main after torch"; with main step 4p; echo "== final after torch"; with final step 4p
date -u
