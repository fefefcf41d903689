#!/usr/bin/env bash
# cnn29: the per-product profile of the exp build (ops named by product) under forced matmul settings
B=$H/bin
prof() { echo "== $*"; env "$@" LD_LIBRARY_PATH=$H/libs/exp:$LD_LIBRARY_PATH timeout 30 $B/gltensor_train_profile --model cnn --steps 40 | grep -E "^mm_|^sum |^clone |^conv_im2col|replayed" | cut -c1-120; }
prof X=0
for s in 8 16 24 32 48 64; do prof GLTENSOR_MATMUL_SPLIT=$s; done
for k in warp vec4 vec4s tile128 reg; do prof GLTENSOR_MATMUL_KERNEL=$k; done
