#!/usr/bin/env bash
# attn36's GPU pack (issue 21: attention at or under PyTorch's CUDA graph), one call under ~120 s. The lead runs
# `bash gpu-multi/attn36/run.sh` ($H the pack made by make_pack.sh; builds.tar.xz unpacked into $W/b: bin + lib
# this branch's, main/ main's build).
# 1. the attention models of torchcmp (SVTR's 8 x 168 x 15 heads, 8 x 300 x 64), seeded inputs;
# 2. 5 rounds, alternated: main's and the branch's gltensor-run --bench N --read-back, plain and --replay;
# 3. knobs on the branch (GLTENSOR_ATTENTION_LANES=0: attention.comp; GLTENSOR_ATTENTION_SPLIT: its keys over
#    workgroups; GLTENSOR_HOST_IO=copy: a replay's output in device memory; the lanes kernel's lanes per row; A36_KNOBS);
# 4. GPU time per run (--profile), main and branch; the outputs, branch against main;
# 5. PyTorch eager and its CUDA graph on the same inputs (torchcmp.py torch), the table;
# 6. the changed tests, GLES then desktop GL.
set -u
W=/tmp/attn36w; PY=${PY:-python3}; REPS=${REPS:-200}; ONLY=${A36_ONLY:-attention}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/outmain" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models and inputs"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr "$W/none" | tail -1
grep -E "^($ONLY)" "$W/cases.txt" > "$W/c.txt"; mv "$W/c.txt" "$W/cases.txt"
# The floor: one Relu over SVTR's [1, 8, 168, 15] (a trivial kernel, the same 80 KB output)
"$PY" - "$W" << 'PYEOF' && echo "relu_8x168x15|$W/models/relu_8x168x15.onnx|200|--input x=$W/inputs/attention_svtr_8x168x15/q.npy" >> "$W/cases.txt"
import sys, os, onnx
from onnx import helper as h, TensorProto as T
g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "relu", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 168, 15])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 8, 168, 15])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(sys.argv[1], "models", "relu_8x168x15.onnx"))
PYEOF
cat "$W/cases.txt" | cut -d'|' -f1
# run BUILD NAME MODEL ARGS MODE [ENV...] -> "mean / min" of one gltensor-run (log in $W/log)
run() {
  local b=$1 name=$2 model=$3 args=$4 mode=$5; shift 5
  # (main: the branch's gltensor-run, whose --warmup runs main's gltensor-run lacks, on main's library)
  local bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH tag=$b
  [ "$b" = main ] && lib=$B/main/lib:$LD_LIBRARY_PATH
  [ $# -gt 0 ] && tag="$b-$(echo "$*" | tr ' =' '_-')"
  local log=$W/log/$name-$mode-$tag.txt extra=--replay
  [ "$mode" = plain ] && extra="--output-dir $W/out$([ "$b" = main ] && echo main)/$name"
  # knob words starting with -- are gltensor-run options, the others environment settings
  local envs=() opts=() x
  for x in "$@"; do if [ "${x#--}" != "$x" ]; then opts+=("$x"); else envs+=("$x"); fi; done
  # shellcheck disable=SC2086
  env "${envs[@]}" LD_LIBRARY_PATH="$lib" timeout 10 "$bin" "$model" $args --bench "$REPS" --read-back $extra "${opts[@]}" > "$log" 2>&1 ||
    echo "($b $name $mode $*: rc $?)" >&2
  grep -E '^bench' "$log" | sed -E 's/.*mean ([0-9.]+) ms, min ([0-9.]+) ms.*/\1 \/ \2/' | grep . || echo "? $(grep -m1 -iE 'rror' "$log" | cut -c1-100)"
}
for round in 1 2 3 4 5; do
  [ "$SECONDS" -gt 45 ] && echo "round $round: no time left" && break
  step "round $round: gltensor-run --bench $REPS --read-back (mean / min ms), main and branch alternated"
  while IFS='|' read -r name model _ args; do
    line="$name:"
    for mode in plain replay; do
      for b in main branch; do line="$line $b $mode $(run $b "$name" "$model" "$args" $mode);"; done
    done
    echo "$line"
  done < "$W/cases.txt"
done
# torchcmp's table reads the branch's plain and replayed logs under its own names
while IFS='|' read -r name _ _ _; do
  cp "$W/log/$name-plain-branch.txt" "$W/log/$name-plain.txt"; cp "$W/log/$name-replay-branch.txt" "$W/log/$name-replay.txt"
done < "$W/cases.txt"
step "knobs (branch): plain and replayed mean / min ms"
grep -v "^relu" "$W/cases.txt" | while IFS='|' read -r name model _ args; do
  for knob in ${A36_KNOBS:---warmup=0 GLTENSOR_ATTENTION_LANES=0 GLTENSOR_ATTENTION_SPLIT=1 GLTENSOR_ATTENTION_SPLIT=2 \
    GLTENSOR_ATTENTION_BQ=32 GLTENSOR_ATTENTION_LANE_WIDTH=8 GLTENSOR_HOST_IO=copy}; do
    [ "$SECONDS" -gt 62 ] && echo "no time left for $knob" && continue
    # shellcheck disable=SC2086
    echo "$name $knob: plain $(run branch "$name" "$model" "$args" plain $knob); replay $(run branch "$name" "$model" "$args" replay $knob)"
  done
done
step "GPU time per run (gltensor-run --profile --bench 100, plain)"
while IFS='|' read -r name model _ args; do
  for v in main branch "branch GLTENSOR_ATTENTION_LANES=0" "branch GLTENSOR_ATTENTION_SPLIT=1" \
    "branch GLTENSOR_ATTENTION_SPLIT=2" "branch GLTENSOR_ATTENTION_BQ=32" "branch GLTENSOR_ATTENTION_LANE_WIDTH=8"; do
    [ "$SECONDS" -gt 72 ] && echo "no time left for $v" && continue
    [ "${name#relu}" != "$name" ] && [ "$v" != branch ] && continue
    set -- $v
    b=$1; shift
    bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH
    [ "$b" = main ] && lib=$B/main/lib:$LD_LIBRARY_PATH
    # shellcheck disable=SC2086
    echo "$name $v: $(env "$@" LD_LIBRARY_PATH="$lib" timeout 5 "$bin" "$model" $args --bench 100 --profile 2>&1 |
      grep -E '^GPU time|\.comp' | tr -s ' ' | head -4 | tr '\n' ' ')"
  done
done < "$W/cases.txt"
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
step "PyTorch eager and CUDA graph (torchcmp.py torch; gltensor columns: the branch's round 3, or the last it ran)"
T=$((95 - SECONDS)); [ $T -gt 30 ] && T=30; [ $T -lt 5 ] && T=5
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$ONLY" | grep -vE "^$" || echo "torch side: rc $?"
step "the changed tests, GLES then desktop GL"
for api in gles gl; do
  for t in "test_plans PlanAttention.*" "test_model_attention *" "test_nn Attention.Lanes*" "test_nn Attention.*:-Attention.Lanes*"; do
    set -f
    # shellcheck disable=SC2086
    set -- $t
    set +f
    tl=$((136 - SECONDS)); [ $tl -gt 20 ] && tl=20
    [ $tl -lt 3 ] && echo "no time left for $api $1 $2" && continue
    echo "$api $1 $2: $(cd "$W" && GLTENSOR_API=$api timeout $tl "$B/bin/$1" --gtest_filter="$2" 2>&1 | grep -E '^\[  (PASSED|FAILED) |Failure|seed=|rror' | head -6 | tr '\n' ' ')"
  done
done
step done
