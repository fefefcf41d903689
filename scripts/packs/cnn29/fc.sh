#!/usr/bin/env bash
# cnn29: FC1's forward with the weight transposed into a copy first (exp3: CNN29_FC=1 in linear(),
# x [>= 64, >= 2048 features]; uncommitted), per-product profile and replayed steps
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
prof() { echo "== $*"; env "$@" LD_LIBRARY_PATH=$H/libs/exp3:$LD_LIBRARY_PATH timeout 30 $B/gltensor_train_profile --model cnn --steps 40 | grep -E "^mm_|^sum |^clone |^GPU time" | cut -c1-120; }
prof CNN29_FC=0
prof CNN29_FC=1
for r in 1 2 3; do for fc in 0 1; do echo "== FC $fc round $r"; CNN29_FC=$fc LD_LIBRARY_PATH=$H/libs/exp3:$LD_LIBRARY_PATH timeout 30 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n '4p'; done; done
