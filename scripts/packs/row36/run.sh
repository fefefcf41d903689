#!/usr/bin/env bash
# row36's GPU pack (issue 21): LayerNorm [64, 1025] and [1008, 120], Softmax [8, 168, 168] and PP-OCR's direction
# classifier with main's build and this branch's in one call (alternated, plain and replayed; det and rec once: the
# residual convs' GEMM changed), then PyTorch's eager
# and CUDA-graph runs of the same models on the same inputs (torchcmp.py), the branch's new tests on GLES and GL, the
# host-output limit's variants (GLTENSOR_HOST_OUTPUT_BYTES) and GPU profiles. The lead runs it as
# `bash gpu-multi/row36/run.sh` ($H the pack from make_pack.sh); within ~120 s (guards on $SECONDS).
set -u
W=/tmp/row36w; PY=${PY:-python3}; REPS=${REPS:-500}; CREPS=${CREPS:-200}; ROUNDS=${ROUNDS:-4}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/outmain" "$W/ocr" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models and inputs"
tar -C "$W/ocr" -xJf "$H/ocr.tar.xz"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr "$W/ocr" | tail -1
grep -E "^(det|rec)_" "$W/cases.txt" > "$W/ocr2.txt" 2> /dev/null
grep -E "^(cls_|layernorm|softmax)" "$W/cases.txt" > "$W/c.txt" 2> /dev/null; mv "$W/c.txt" "$W/cases.txt"
# (no numpy / onnx here: cls alone on a random input, a trial of the script)
[ -s "$W/cases.txt" ] || { echo "no prepared cases: cls alone"; echo "cls_48x192|$W/ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx|200|--shape x=1x3x48x192" > "$W/cases.txt"; }
# one gltensor-run: build (main|row36), case, model, args, mode (plain|replay), log name suffix, then VAR=value
# settings -> the bench line (mean, min, median, p90 on the branch)
run() {
  local b=$1 name=$2 model=$3 args=$4 mode=$5 tag=$6; shift 6
  local bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH out=$W/out/$name reps=$REPS
  [ "$b" = main ] && bin=$B/main/bin/gltensor-run lib=$B/main/lib:$LD_LIBRARY_PATH out=$W/outmain/$name
  [ "${name#cls}" != "$name" ] && reps=$CREPS
  local log=$W/log/$name-$mode$tag.txt extra="--output-dir $out"
  [ "$mode" = replay ] && extra=--replay
  # shellcheck disable=SC2086
  env "$@" LD_LIBRARY_PATH=$lib timeout 10 "$bin" "$model" $args --bench "$reps" --read-back $extra > "$log" 2>&1 ||
    echo "$b $name $mode $*: rc $?"
  echo "$name $mode $b${*:+ $*}: $(grep -E '^bench|rror' "$log" | sed -E 's/bench: ([0-9]+) runs \(outputs read back\), //; s/, host .*//' | cut -c1-150)"
}
for round in $(seq 1 "$ROUNDS"); do
  [ "$SECONDS" -gt 45 ] && echo "round $round: no time left" && break
  step "round $round: gltensor-run --bench N --read-back (LayerNorm, Softmax $REPS, cls $CREPS), main then branch"
  while IFS='|' read -r name model _ args; do
    for mode in plain replay; do
      run main "$name" "$model" "$args" $mode -main
      run row36 "$name" "$model" "$args" $mode ""
    done
  done < "$W/cases.txt"
done
step "det and rec (the residual convs' GEMM path changed too): main plain, branch plain and replayed, REPS 100"
while IFS='|' read -r name model _ args; do
  [ "$SECONDS" -gt 70 ] && echo "$name: no time left" && continue
  REPS=100 run main "$name" "$model" "$args" plain -main
  REPS=100 run row36 "$name" "$model" "$args" plain ""
  REPS=100 run row36 "$name" "$model" "$args" replay ""
done < "$W/ocr2.txt"
cat "$W/ocr2.txt" >> "$W/cases.txt"
step "the branch's host-output limit, interleaved with its default (256 KiB): 0 (none) and 1048576 (window 1's), two rounds"
for vround in 1 2; do
  while IFS='|' read -r name model _ args; do
    case $name in layernorm* | softmax*) ;; *) continue ;; esac
    [ "$SECONDS" -gt 80 ] && continue
    for kv in GLTENSOR_HOST_OUTPUT_BYTES=0 GLTENSOR_HOST_OUTPUT_BYTES=1048576 GLTENSOR_NONE=1; do
      for mode in plain replay; do run row36 "$name" "$model" "$args" $mode "-${kv##*_}" "$kv"; done
    done
  done < "$W/cases.txt"
done
step "cls knobs (branch, replayed)"
IFS='|' read -r cname cmodel _ cargs < <(grep "^cls_" "$W/cases.txt")
for kv in GLTENSOR_FUSE_ELEMENTWISE=0 GLTENSOR_NONE=1 GLTENSOR_FUSE_ELEMENTWISE=0 GLTENSOR_NONE=1; do
  [ "$SECONDS" -gt 90 ] && break
  run row36 "$cname" "$cmodel" "$cargs" replay "-${kv%%=*}" "$kv"
done
step "outputs: branch against main (plain runs)"
"$PY" - "$W" << 'PYEOF'
import sys, os, glob, numpy as np
w = sys.argv[1]
for d in sorted(glob.glob(os.path.join(w, "out", "*"))):
    for f in sorted(glob.glob(os.path.join(d, "*.npy"))):
        m = os.path.join(w, "outmain", os.path.basename(d), os.path.basename(f))
        a, b = np.load(f).astype(np.float64), np.load(m).astype(np.float64)
        same = np.array_equal(a, b, equal_nan=True)
        print(f"{os.path.basename(d)} {os.path.basename(f)}: {'identical' if same else 'max|branch - main| %.2e' % np.nanmax(np.abs(a - b))} (max|main| {np.nanmax(np.abs(b)):.2g})")
PYEOF
step "PyTorch eager and CUDA graph (torchcmp.py torch; the table's gltensor columns: the branch's last round)"
T=$((105 - SECONDS)); [ $T -gt 30 ] && T=30; [ $T -lt 8 ] && T=8
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only 'layernorm|softmax|cls|det|rec' ${TC_REPS:+--reps $TC_REPS} | grep -vE "^$" || echo "torch side: rc $?"
step "the branch's tests on the GPU (host-visible model outputs, LayerNorm's ROW_REGS)"
for api in gles gl; do
  echo "--- GLTENSOR_API=$api"
  (cd "$W" && for t in test_model_layernorm test_model_softmax test_model_host_io "test_nn --gtest_filter=Norms.*" test_model_se; do
    [ "$SECONDS" -gt 115 ] && echo "$t: no time left" && continue
    # shellcheck disable=SC2086
    GLTENSOR_API=$api timeout 8 $B/bin/$t 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) |Failure|seed|rror" | head -20
  done)
done
echo "--- GLTENSOR_SUBGROUPS=0 (the shared-memory sums)"
(cd "$W" && GLTENSOR_SUBGROUPS=0 timeout 8 "$B/bin/test_model_layernorm" 2>&1 | grep -E "^\[ +(FAILED|PASSED) |Failure" | head -5)
echo "--- sabotage: norm.comp's subgroup sum x 1.01 (GLTENSOR_GLSL_DIR=glsl-sab; must FAIL)"
(cd "$W" && GLTENSOR_GLSL_DIR=$B/glsl-sab GLTENSOR_CACHE_DIR=off timeout 8 "$B/bin/test_model_layernorm" 2>&1 | grep -E "^\[ +(FAILED|PASSED) " | head -8)
[ "$SECONDS" -gt 125 ] && step "no time left for the profiles" && exit 0
step "GPU profiles (branch, gltensor-run --profile --bench 100, plain)"
grep -vE "^(det|rec)_" "$W/cases.txt" | while IFS='|' read -r name model _ args; do
  # shellcheck disable=SC2086
  timeout 4 "$B/bin/gltensor-run" "$model" $args --bench 100 --profile 2>&1 | grep -E "^bench|^GPU time|\.comp " | head -8 | sed "s/^/$name: /"
done
step done
