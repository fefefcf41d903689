#!/usr/bin/env bash
# attn37's GPU pack (issue 21: attention at or under PyTorch's CUDA graph), one call under ~60 s (the tests with A37_TESTS=1: ~90 s). The lead runs
# `bash gpu-multi/attn37/run.sh` ($H the pack made by make_pack.sh; builds.tar.xz unpacked into $W/b: bin + lib
# this branch's, main/ main's build).
# 1. the attention models of torchcmp (SVTR's 8 x 168 x 15 heads, 8 x 300 x 64), seeded inputs; Relu over q of each
#    (one trivial dispatch, the same output size: the floor of a run and its read-back);
# 2. rounds, alternated: main's and the branch's gltensor-run --bench N --read-back, plain and --replay;
# 3. knobs on the branch (GLTENSOR_ATTENTION_SPLIT=0: no key split, main's kernel; =1 / =2: chunks of 1 / 2 key
#    tiles; GLTENSOR_ATTENTION_COMBINE=dispatch: kv_combine's second dispatch; GLTENSOR_ATTENTION_LANES=0: SVTR on
#    attention.comp (and its default split); no read-back: what the read-back costs; A37_KNOBS);
# 4. GPU time per run (--profile), main and branch variants; the outputs, branch against main;
# 5. PyTorch eager and its CUDA graph on the same inputs (torchcmp.py torch), the table;
# 6. the changed tests, GLES then desktop GL.
set -u
W=/tmp/attn37w; PY=${PY:-python3}; REPS=${REPS:-200}; ONLY=${A37_ONLY:-attention}; ROUNDS=${ROUNDS:-3}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/outmain" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models and inputs"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr "$W/none" | tail -1
grep -E "^($ONLY)" "$W/cases.txt" > "$W/c.txt"; mv "$W/c.txt" "$W/cases.txt"
# The floors: one Relu over q of each case (a trivial kernel, the same output size)
for c in "svtr_8x168x15 1,8,168,15" "8x300x64 1,8,300,64"; do
  set -- $c
  "$PY" - "$W" "$1" "$2" << 'PYEOF' && echo "relu_$1|$W/models/relu_$1.onnx|200|--input x=$W/inputs/attention_$1/q.npy" >> "$W/cases.txt"
import sys, os, onnx
from onnx import helper as h, TensorProto as T
shape = [int(x) for x in sys.argv[3].split(",")]
g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "relu", [h.make_tensor_value_info("x", T.FLOAT, shape)],
                 [h.make_tensor_value_info("y", T.FLOAT, shape)])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, os.path.join(sys.argv[1], "models", "relu_" + sys.argv[2] + ".onnx"))
PYEOF
done
cut -d'|' -f1 "$W/cases.txt"
# run BUILD NAME MODEL ARGS MODE [KNOB...] -> "mean / min" of one gltensor-run (log in $W/log); MODE plain, replay or
# noread (plain without --read-back)
run() {
  local b=$1 name=$2 model=$3 args=$4 mode=$5; shift 5
  local bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH tag=$b
  [ "$b" = main ] && bin=$B/main/bin/gltensor-run lib=$B/main/lib:$LD_LIBRARY_PATH
  [ $# -gt 0 ] && tag="$b-$(echo "$*" | tr ' =' '_-')"
  local log=$W/log/$name-$mode-$tag.txt extra=--replay rb=--read-back
  # (outputs only from the untagged default runs: a knob's run must not overwrite what is compared)
  [ "$mode" = plain ] && extra=""
  [ "$mode" = plain ] && [ $# -eq 0 ] && extra="--output-dir $W/out$([ "$b" = main ] && echo main)/$name"
  [ "$mode" = noread ] && extra="" rb=""
  # knob words starting with -- are gltensor-run options, the others environment settings
  local envs=() opts=() x
  for x in "$@"; do if [ "${x#--}" != "$x" ]; then opts+=("$x"); else envs+=("$x"); fi; done
  # shellcheck disable=SC2086
  env "${envs[@]}" LD_LIBRARY_PATH="$lib" timeout 10 "$bin" "$model" $args --bench "$REPS" $rb $extra "${opts[@]}" > "$log" 2>&1 ||
    echo "($b $name $mode $*: rc $?)" >&2
  grep -E '^bench' "$log" | sed -E 's/.*mean ([0-9.]+) ms, min ([0-9.]+) ms.*/\1 \/ \2/' | grep . || echo "? $(grep -m1 -iE 'rror' "$log" | cut -c1-100)"
}
for round in $(seq 1 "$ROUNDS"); do
  [ "$SECONDS" -gt 30 ] && echo "round $round: no time left" && break
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
step "knobs (branch): plain and replayed mean / min ms (noread: plain without --read-back)"
grep -v "^relu" "$W/cases.txt" | while IFS='|' read -r name model _ args; do
  echo "$name branch noread $(run branch "$name" "$model" "$args" noread); main noread $(run main "$name" "$model" "$args" noread)"
  for knob in ${A37_KNOBS:-GLTENSOR_ATTENTION_SPLIT=0}; do
    [ "${name#attention_svtr}" = "$name" ] && [ "${knob#*LANES=0}" != "$knob" ] && continue  # (8x300x64: no lanes kernel)
    [ "$SECONDS" -gt 42 ] && echo "no time left for $knob" && continue
    # shellcheck disable=SC2086
    echo "$name $knob: plain $(run branch "$name" "$model" "$args" plain ${knob//,/ }); replay $(run branch "$name" "$model" "$args" replay ${knob//,/ })"
  done
done
grep "^relu" "$W/cases.txt" | while IFS='|' read -r name model _ args; do
  echo "$name branch noread $(run branch "$name" "$model" "$args" noread)"
done
step "GPU time per run (gltensor-run --profile --bench 100, plain; ms over the 100 runs)"
while IFS='|' read -r name model _ args; do
  for v in main branch "branch GLTENSOR_ATTENTION_SPLIT=0" ${A37_PROFILE_KNOBS:-}; do
    [ "${name#relu}" != "$name" ] && [ "$v" != branch ] && continue
    [ "${name#attention_svtr}" = "$name" ] && [ "${v#*LANES=0}" != "$v" ] && continue  # (8x300x64: no lanes kernel)
    [ "$SECONDS" -gt 50 ] && echo "no time left for $v" && continue
    set -- $v
    b=$1; shift
    bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH
    [ "$b" = main ] && bin=$B/main/bin/gltensor-run lib=$B/main/lib:$LD_LIBRARY_PATH
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
step "PyTorch eager and CUDA graph (torchcmp.py torch; gltensor columns: the branch's last round)"
T=$((60 - SECONDS)); [ $T -gt 20 ] && T=20; [ $T -lt 5 ] && T=5
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$ONLY" | grep -vE "^$" || echo "torch side: rc $?"
step "the changed tests, GLES then desktop GL (A37_TESTS=1)"
[ "${A37_TESTS:-0}" = 1 ] || echo "(left out: A37_TESTS=1 runs them)"
[ "${A37_TESTS:-0}" = 1 ] && for api in gles gl; do
  for t in "test_plans PlanAttention.*" "test_nn Attention.*" "test_attention *" "test_model_attention *" "test_kv_cache *"; do
    set -f
    # shellcheck disable=SC2086
    set -- $t
    set +f
    tl=$((88 - SECONDS)); [ $tl -gt 20 ] && tl=20
    [ $tl -lt 3 ] && echo "no time left for $api $1 $2" && continue
    echo "$api $1 $2: $(cd "$W" && GLTENSOR_API=$api timeout $tl "$B/bin/$1" --gtest_filter="$2" 2>&1 | grep -E '^\[  (PASSED|FAILED) |Failure|seed=|rror' | head -6 | tr '\n' ' ')"
  done
done
step done
