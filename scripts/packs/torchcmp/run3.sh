#!/usr/bin/env bash
# torchcmp's last GPU window (under 100 s), packed by `WINDOW=3 make_pack.sh` as the pack's run.sh:
# 1. the whole table (torchcmp.sh, i.e. scripts/packs/torchcmp/run.sh) at the branch's head (reads up to
#    64 MiB through the mapped read buffer), without the profiles (window 2 printed them);
# 2. test_pool's read-back tests on the H100 (the changed read path);
# 3. knobs on the rows slower than the CUDA graph, gltensor-run --bench 200 --read-back --replay each:
#    the 56x56 CNNs' matmul kernels and split-K, attention's query rows per workgroup and its one-row
#    kernel, the LSTMs' sequence kernel forced (GLTENSOR_RNN=units) against the per-step path.
set -u
TC_PROFILE_UNTIL=0 bash "$H/torchcmp.sh"
echo; echo "=== [$SECONDS s] test_pool (read-back tests) on the GPU"
timeout 20 "$H/bin/test_pool" --gtest_filter='Pool.ReadBack*:Pool.UploadsThroughTheStagingRing*:Pool.LargeBuffers*' 2>&1 |
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]|FAILED|Failure" | head -20
W=/tmp/torchcmp; M=$W/models
probe() {  # label, env assignment (or -), model name, input arguments
  [ "$SECONDS" -gt 92 ] && echo "$1: no time left" && return
  local e=$2 name=$3 envs=()
  shift 3
  [ "$e" != - ] && envs=("$e")
  r=$(timeout 10 env "${envs[@]}" "$H/bin/gltensor-run" "$M/$name.onnx" "$@" --bench "${TC_PROBE_RUNS:-200}" --read-back --replay 2>&1 |
    grep -E "^bench|rror" | sed -e 's/, process CPU min [0-9.]* ms//' | cut -c1-150)
  echo "$name $e: $r"
}
echo; echo "=== [$SECONDS s] knobs on the slower rows (replayed, --read-back, 200 runs)"
for net in 64_128_128_256_256 32_64_64_128; do
  for e in - GLTENSOR_MATMUL_KERNEL=warp GLTENSOR_MATMUL_KERNEL=tile128 GLTENSOR_MATMUL_SPLIT=2; do
    probe cnn "$e" "f32_cnn_${net}_56" --input "x=$W/inputs/f32_cnn_${net}_56/x.npy"
  done
done
for e in - GLTENSOR_ATTENTION_BQ=32 GLTENSOR_ATTENTION=rows; do
  probe attention "$e" attention_svtr_8x168x15 --input "q=$W/inputs/attention_svtr_8x168x15/q.npy" \
    --input "k=$W/inputs/attention_svtr_8x168x15/k.npy" --input "v=$W/inputs/attention_svtr_8x168x15/v.npy"
done
for n in lstm_s256_h128_d1 lstm_s64_h256_d2; do
  for e in - GLTENSOR_RNN=units; do probe lstm "$e" "$n" --input "x=$W/inputs/$n/x.npy"; done
done
echo "=== [$SECONDS s] done"
