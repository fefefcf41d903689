#!/usr/bin/env bash
# cnn29: per-product GPU profile of builds whose ops are named by product (uncommitted exp builds:
# matmul launches named mm_KERNEL_MxNxK_sSPLITS[k: K-major B]), then ab.sh. Usage: bash $H/cmp.sh VARIANTS...
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for v in "$@"; do echo "== profile $v"; LD_LIBRARY_PATH=$H/libs/$v:$LD_LIBRARY_PATH timeout 30 $B/gltensor_train_profile --model cnn --steps 40 | grep -E "^mm_|^sum |^clone |^unary|^GPU time" | cut -c1-120; done
bash $H/ab.sh 3 "$@"
