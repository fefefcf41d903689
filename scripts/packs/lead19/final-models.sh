#!/usr/bin/env bash
# The lead's final model call of 2026-11-28 ~16:45 UTC (bench/RESULTS.md; lead18's with two torchcmp rounds): run from the repo root on the GPU machine
# as gpu-multi/final/run.sh through gpu-multi/run-all.sh ($H the pack: scripts/packs/torchcmp/make_pack.sh's pack of
# the merged tree, its run.sh renamed torchcmp-run.sh, plus gltensor_train_profile in bin/). lead17's script with the
# training steps' summary lines kept (its tail lost them to train_profile's kernel table, printed last since). 1. torchcmp's table of every model the
# project tests against PyTorch's CUDA graph (no profiles); 2. the QDQ nets, int8 against f32 (GPU time);
# 3. the CNN and MLP training steps, replayed, two rounds.
set -u
echo "final: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
for r in 1 2; do
  echo "=== [$SECONDS s] torchcmp, every model, round $r"
  TC_W=/tmp/final-tc$r TC_PROFILE_UNTIL=0 timeout 200 bash "$H/torchcmp-run.sh" 2>&1 | grep -E "^\||^[a-z_0-9]+: torch|rror|FAIL|slower" | cut -c1-400
done
echo "=== [$SECONDS s] QDQ nets: int8 against f32"
timeout 60 "$H/bin/gltensor_model_bench" --qdq --runs 20 --gpu-time 2>&1 | grep -v "^|---"
for r in 1 2; do
  echo "=== [$SECONDS s] training steps, round $r"
  timeout 60 "$H/bin/gltensor_train_profile" --model cnn --steps 200 --replay 2>&1 | grep -E "per step|dispatches"
  timeout 60 "$H/bin/gltensor_train_profile" --model mlp --steps 200 --replay 2>&1 | grep -E "per step|dispatches"
done
echo "=== [$SECONDS s] done"
