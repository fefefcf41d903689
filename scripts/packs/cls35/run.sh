#!/usr/bin/env bash
# cls35's GPU pack (issue 21): PP-OCR cls / det / rec with main's build and this branch's in one call,
# then PyTorch's eager and CUDA-graph runs of the same models on the same inputs (torchcmp.py), then
# GPU profiles of cls on both builds. The lead runs it as `bash gpu-multi/cls35/run.sh` ($H the pack, made
# by make_pack.sh; the builds unpacked from builds.tar.xz into $W/b: bin + lib this branch's, main/ main's).
set -u
W=/tmp/cls35w; PY=${PY:-python3}; REPS=${REPS:-200}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/ocr" "$W/outmain" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models and inputs"
tar -C "$W/ocr" -xJf "$H/ocr.tar.xz"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr "$W/ocr" | tail -1
grep -E "^(cls|det|rec)_" "$W/cases.txt" > "$W/ocr.txt"
mv "$W/ocr.txt" "$W/cases.txt"
run() {  # build name model args mode(plain|replay) -> one line
  local b=$1 name=$2 model=$3 args=$4 mode=$5 bin lib out log
  if [ "$b" = main ]; then bin=$B/main/bin/gltensor-run lib=$B/main/lib:$LD_LIBRARY_PATH out=$W/outmain/$name log=$W/log/$name-$mode-main.txt
  else bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH out=$W/out/$name log=$W/log/$name-$mode.txt; fi
  local extra="--output-dir $out"; [ "$mode" = replay ] && extra=--replay
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH=$lib timeout 10 "$bin" "$model" $args --bench "$REPS" --read-back $extra > "$log" 2>&1 || echo "$b $name $mode: rc $?"
  echo "$name $mode $b: $(grep -E '^bench|rror' "$log" | cut -c1-170)"
}
# (the whole run within 60 s: rounds 1 and 2 of every model, a third of cls; guards on $SECONDS)
for round in 1 2 3; do
  [ "$SECONDS" -gt 32 ] && echo "round $round: no time left" && break
  step "round $round: gltensor-run --bench $REPS --read-back, main then branch, plain and replayed"
  while IFS='|' read -r name model _ args; do
    [ "$SECONDS" -gt 36 ] && echo "$name: no time left" && continue
    [ "$round" = 3 ] && [ "${name#cls}" = "$name" ] && continue
    for b in main cls35; do
      run $b "$name" "$model" "$args" plain
      run $b "$name" "$model" "$args" replay
    done
  done < "$W/cases.txt"
  grep -h "^plan" "$W"/log/cls_48x192-plain*.txt
done
step "outputs: branch against main (plain runs)"
"$PY" - "$W" << 'PYEOF'
import sys, os, glob, numpy as np
w = sys.argv[1]
for d in sorted(glob.glob(os.path.join(w, "out", "*"))):
    for f in sorted(glob.glob(os.path.join(d, "*.npy"))):
        m = os.path.join(w, "outmain", os.path.basename(d), os.path.basename(f))
        a, b = np.load(f).astype(np.float64), np.load(m).astype(np.float64)
        print(f"{os.path.basename(d)} {os.path.basename(f)}: max|branch - main| {np.abs(a - b).max():.2e} (max|main| {np.abs(b).max():.2g})")
PYEOF
step "PyTorch eager and CUDA graph (torchcmp.py torch; the table's gltensor columns: the branch's last round)"
T=$((50 - SECONDS)); [ $T -gt 25 ] && T=25; [ $T -lt 3 ] && T=3
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only 'cls|det|rec' ${TC_REPS:+--reps $TC_REPS} | grep -vE "^$" || echo "torch side: rc $?"
step "test_model_se on the GPU (fuse_se / squeeze_excite, fuse_residual in the GPU layouts of conv_direct)"
for api in gles gl; do
  echo "--- GLTENSOR_API=$api"
  [ "$SECONDS" -lt 48 ] && (cd "$W" && GLTENSOR_API=$api timeout 5 "$B/bin/test_model_se" --gtest_filter=-*ForcedLayouts* 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) |Failure|differ|seed=" | head -30)
done
[ "$SECONDS" -gt 54 ] && step "no time left for the profiles" && exit 0
step "cls profiles (gltensor-run --profile --bench 50, plain), main then branch"
IFS='|' read -r _ model _ args < <(grep "^cls_" "$W/cases.txt")
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$B/main/lib:$LD_LIBRARY_PATH timeout 3 "$B/main/bin/gltensor-run" "$model" $args --bench 50 --profile 2>&1 | grep -E "^bench|^dispatches|\.comp " | head -12
# shellcheck disable=SC2086
timeout 3 "$B/bin/gltensor-run" "$model" $args --bench 50 --profile 2>&1 | grep -E "^bench|^dispatches|\.comp " | head -12
step done
