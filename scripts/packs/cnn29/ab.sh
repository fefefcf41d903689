#!/usr/bin/env bash
# cnn29 quick A/B (run through the device tool directly, 18:30-18:40 UTC): libgltensor builds in
# $H/libs/NAME/, the same binaries in $H/bin. Usage: bash $H/ab.sh ROUNDS VARIANTS...
B=$H/bin R=${1:-3}; shift
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for r in $(seq $R); do for v in "$@"; do
  echo "== $v round $r"; LD_LIBRARY_PATH=$H/libs/$v:$LD_LIBRARY_PATH timeout 40 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n '2p;4p'
done; done
