#!/usr/bin/env bash
# wino35's GPU pack (issue 21: f32 3x3 CNNs against cuDNN's CUDA graph; issue 22: the QDQ nets not behind the f32
# ones), one GPU call (at most about 190 s):
#   bash gpu-multi/wino35/run.sh      ($H the pack made by scripts/packs/wino35/make_pack.sh)
# 1. torchcmp's table (scripts/packs/torchcmp/run.sh) for the f32 and QDQ CNNs, PP-OCRv4 det and the direction
#    classifier (rec's 10.8 MB past the pack's 20 MiB; none of the three has a conv the plan takes) with this branch's build (Winograd
#    as planned): gltensor plain / replayed (--read-back), PyTorch eager and its CUDA graph (TF32 off), outputs
#    compared (f32: max |d| within 2e-3 of max |y|; QDQ: 99% within one quantum), profiles of the slower rows;
# 2. compute and read-back apart: w35_torch.py (the CUDA graph's replay + synchronize, + .cpu(), .cpu() alone)
#    and gltensor-run --bench 200 without --read-back (each run synchronizes), this build and main's (base/);
# 3. the same models, plain --read-back, main's build and this build's knobs in the same call:
#    GLTENSOR_CONV_WINOGRAD=0 (today's paths: im2col + GEMM, the integer convs), =2 (F(2x2,3x3), f32 only),
#    GLTENSOR_MATMUL_KERNEL=warp (Winograd's batched GEMMs);
# 4. --profile of the QDQ wide net at 56: this build and main's;
# 5. gltensor_model_bench --qdq (f32 and QDQ rows, int8 / f32): this build, this build with
#    GLTENSOR_CONV_WINOGRAD=0, main's build.
set -u
step() { echo; echo "=== [$SECONDS s] $*"; }
echo "wino35 pack: $(cat "$H/COMMIT" 2> /dev/null)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
ONLY=${W35_ONLY:-'^f32_cnn|^qdq_cnn|^det_640|^cls_48x192'}
W=/tmp/w35
BASE_LD=$H/base/lib:${LD_LIBRARY_PATH:-}
step "torchcmp rows: $ONLY (this build)"
TC_ONLY=$ONLY TC_W=$W TC_REPS=${W35_REPS:-} TC_GL_UNTIL=50 TC_PROFILE_UNTIL=60 TC_PROFILE_LINES=22 timeout 90 \
  bash "$H/torchcmp.sh" 2>&1 | grep -vE "^\[|^ *$" | grep -v "no time left"
CASES=$(cut -d'|' -f1 "$W/cases.txt" | grep -E "$ONLY" | grep -E "cnn")
step "compute and read-back apart: PyTorch's CUDA graph"
timeout 40 python3 "$H/py/w35_torch.py" "$W" "$ONLY" --reps "${W35_REPS:-200}" 2>&1 | grep -v "^ *$"
run() {  # NAME LABEL READBACK(--read-back or "") ENV... : one bench line
  local name=$1 label=$2 rb=$3; shift 3
  IFS='|' read -r _ model _ args < <(grep "^$name|" "$W/cases.txt")
  # shellcheck disable=SC2086
  echo "$name $label: $(env "$@" timeout 20 "$BIN" "$model" $args --bench "${W35_REPS:-200}" $rb 2>&1 |
    grep -E '^bench|rror' | sed 's/process CPU min [0-9.]* ms, //' | cut -c1-140)"
}
step "compute only: gltensor-run --bench (no read-back), this build and main's"
for name in $CASES; do
  [ "$SECONDS" -gt 100 ] && break
  BIN=$H/bin/gltensor-run run "$name" this "" GLTENSOR_NONE=1
  BIN=$H/base/gltensor-run run "$name" base "" LD_LIBRARY_PATH="$BASE_LD"
done
step "with read-back: main's build (base/) and this build's knobs"
for name in det_640 cls_48x192; do  # no conv of theirs takes the Winograd plan: main's and this build the same
  grep -q "^$name|" "$W/cases.txt" || continue
  BIN=$H/base/gltensor-run run "$name" base --read-back LD_LIBRARY_PATH="$BASE_LD"
  BIN=$H/bin/gltensor-run run "$name" this --read-back GLTENSOR_NONE=1
done
for name in $CASES; do
  [ "$SECONDS" -gt 135 ] && break
  BIN=$H/base/gltensor-run run "$name" base --read-back LD_LIBRARY_PATH="$BASE_LD"
  BIN=$H/bin/gltensor-run
  run "$name" this --read-back GLTENSOR_NONE=1
  run "$name" wino=0 --read-back GLTENSOR_CONV_WINOGRAD=0
  case $name in f32*) run "$name" wino=2 --read-back GLTENSOR_CONV_WINOGRAD=2 ;; esac
  run "$name" wino+warp --read-back GLTENSOR_MATMUL_KERNEL=warp
done
prof() {  # LABEL BIN ENV...
  local label=$1 bin=$2; shift 2
  IFS='|' read -r _ model _ args < <(grep "^qdq_cnn_64_128_128_256_256_56|" "$W/cases.txt")
  echo "--- QDQ wide 56 profile: $label"
  # shellcheck disable=SC2086
  env "$@" timeout 15 "$bin" "$model" $args --bench 50 --profile 2>&1 | grep -E "^bench|^GPU time|\.comp " | cut -c1-120
}
step "profiles: QDQ wide 56"
[ "$SECONDS" -lt 145 ] && prof this "$H/bin/gltensor-run" GLTENSOR_NONE=1
[ "$SECONDS" -lt 150 ] && prof base "$H/base/gltensor-run" LD_LIBRARY_PATH="$BASE_LD"
step "gltensor_model_bench --qdq: this build, this build with GLTENSOR_CONV_WINOGRAD=0, main's build"
qdq() {  # LABEL BIN ENV...
  local label=$1 bin=$2; shift 2
  echo "--- $label"
  env "$@" timeout 15 "$bin" --qdq --runs "${W35_REPS:-50}" 2>&1 | grep -E "^\| [0-9]|^\| channels" | head -14
}
[ "$SECONDS" -lt 160 ] && qdq this "$H/bin/gltensor_model_bench" GLTENSOR_NONE=1
[ "$SECONDS" -lt 172 ] && qdq wino=0 "$H/bin/gltensor_model_bench" GLTENSOR_CONV_WINOGRAD=0
[ "$SECONDS" -lt 184 ] && qdq base "$H/base/gltensor_model_bench" LD_LIBRARY_PATH="$BASE_LD"
step "done"
