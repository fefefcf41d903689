#!/usr/bin/env bash
# wino35's last GPU window (under 60 s): `bash gpu-multi/wino35/run.sh` with the pack of
# `WINDOW=4 P=/work/main/gpu-multi/wino35 bash scripts/packs/wino35/make_pack.sh` (this file as its run.sh):
# 1. test_conv_winograd on GLES and desktop GL (GLTENSOR_API=gl);
# 2. gltensor_model_bench --qdq (f32 and QDQ nets, int8 / f32): this build, then main's (base/);
# 3. the f32 and QDQ nets' compute (gltensor-run --bench 100, no read-back: each run synchronizes), this build
#    and main's, random inputs (--shape).
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "wino35 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
for api in gles gl; do
  step "test_conv_winograd GLTENSOR_API=$api"
  GLTENSOR_API=$api timeout 20 "$H/bin/test_conv_winograd" 2>&1 | grep -E "^\[  (PASSED|FAILED) |Failure|QDQ chain|seed=" | head -20
done
step "gltensor_model_bench --qdq: this build, then main's"
timeout 12 "$H/bin/gltensor_model_bench" --save-models /tmp/w35m4 > /dev/null 2>&1
for b in this base; do
  echo "--- $b"
  if [ $b = this ]; then bin=$H/bin/gltensor_model_bench ld=${LD_LIBRARY_PATH:-}; else bin=$H/base/gltensor_model_bench ld=$BASE_LD; fi
  LD_LIBRARY_PATH=$ld timeout 12 "$bin" --qdq --runs 50 2>&1 | grep -E "^\| [0-9]|^\| channels" | head -5
done
step "compute only (gltensor-run --bench 100, no read-back): this build, main's"
for m in /tmp/w35m4/f32_cnn_*.onnx /tmp/w35m4/qdq_cnn_*.onnx; do
  [ "$SECONDS" -gt 52 ] && break
  n=$(basename "$m" .onnx); c=$(echo "$n" | cut -d_ -f3); hw=${n##*_}
  for b in this base; do
    if [ $b = this ]; then bin=$H/bin/gltensor-run ld=${LD_LIBRARY_PATH:-}; else bin=$H/base/gltensor-run ld=$BASE_LD; fi
    echo "$n $b: $(LD_LIBRARY_PATH=$ld timeout 8 "$bin" "$m" --shape "x=1x${c}x${hw}x${hw}" --bench 100 2>&1 |
      grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //' | cut -c1-110)"
  done
done
step "done"
