#!/usr/bin/env bash
# attn39's GPU pack (issue 21: attention 8 x 300 x 64 under PyTorch's CUDA graph; attention_block.comp), one call
# under ~130 s. The lead runs
# `bash gpu-multi/attn39/run.sh` ($H the pack made by make_pack.sh; builds.tar.xz unpacked into $W/b: bin + lib
# this branch's, main/ main's build).
# 1. torchcmp's attention models (SVTR's 8 x 168 x 15 heads, 8 x 300 x 64), seeded inputs; Relu over q of each (one
#    trivial dispatch, the same output: the floor of a run and its read-back);
# 2. with A39_TESTS=1, the changed tests first, GLES then desktop GL, then the sabotaged kernels (A39_SAB);
# 2b. PyTorch's GPU time for the same nets (torch_kernels.py: CUDA graph replays between CUDA events, its kernels);
# 3. rounds, alternated: main's and the branch's gltensor-run --bench N --read-back, plain and --replay, and the
#    branch under each A39_E2E knob set (replayed);
# 4. GPU time per run (gltensor-run --profile --bench 100) of main, the branch and the branch's variants (A39_PROF:
#    "case-regex:KNOB,KNOB ..." entries; knob words starting with -- are gltensor-run options);
# 5. the outputs, branch against main (default runs); PyTorch eager and its CUDA graph (torchcmp.py torch), the table;
set -u
# Warm-ups of at least TC_WARMUP_MS ms on both sides (gltensor-run --warmup-ms, torchcmp.py's), as torchcmp's run.sh
export TC_WARMUP_MS=${TC_WARMUP_MS:-300}
W=/tmp/attn39w; PY=${PY:-python3}; REPS=${REPS:-200}; ONLY=${A39_ONLY:-attention}; ROUNDS=${ROUNDS:-3}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/outmain" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
. "$H/knobs.sh"  # A39_PROF, A39_E2E defaults of this window
step "models and inputs"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr "$W/none" | tail -1
grep -E "^($ONLY)" "$W/cases.txt" > "$W/c.txt"; mv "$W/c.txt" "$W/cases.txt"
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
cut -d'|' -f1 "$W/cases.txt" | tr '\n' ' '; echo
step "the changed tests, GLES then desktop GL (A39_TESTS=1; A39_TEST_LIST entries test:filter[:ENV=VAL,...])"
[ "${A39_TESTS:-0}" = 1 ] || echo "(left out: A39_TESTS=1 runs them)"
[ "${A39_TESTS:-0}" = 1 ] && for api in gles gl; do
  list=$A39_TEST_LIST; [ "$api" = gl ] && list=${A39_TEST_LIST_GL:-$A39_TEST_LIST}
  for t in $list; do
    set -f
    # shellcheck disable=SC2086
    set -- ${t//:/ }
    set +f
    envs=(); [ $# -ge 3 ] && IFS=, read -r -a envs <<< "$3"
    tl=$((${A39_TESTS_UNTIL:-70} - SECONDS)); [ $tl -gt 32 ] && tl=32
    [ $tl -lt 3 ] && echo "no time left for $api $t" && continue
    echo "$api $t: $(cd "$W" && env "${envs[@]}" GLTENSOR_API=$api timeout $tl "$B/bin/$1" --gtest_filter="$2" 2>&1 |
      grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure|seed=|rror' | head -6 | tr '\n' ' ')"
  done
done
# sabotaged block kernels (gv/sab_*): test_nn BlockKernelMatchesReference must fail (GLES)
[ "${A39_TESTS:-0}" = 1 ] && for sab in ${A39_SAB:-}; do
  tl=$((${A39_TESTS_UNTIL:-70} + ${A39_SAB_S:-14} - SECONDS)); [ $tl -gt 12 ] && tl=12
  [ $tl -lt 3 ] && echo "no time left for $sab" && continue
  r=$(cd "$W" && GLTENSOR_GLSL_DIR=$H/gv/$sab GLTENSOR_CACHE_DIR=$W/gc-$sab timeout $tl "$B/bin/test_nn" \
    --gtest_filter='Attention.BlockKernel*' 2>&1 | grep -E '^\[  (PASSED|FAILED) ' | head -1 | tr '\n' ' ')
  case "$r" in *FAILED*) echo "sabotage $sab: CAUGHT ($r)" ;; *) echo "sabotage $sab: not caught ($r)" ;; esac
done
T0=$SECONDS
[ "${A39_ONLY_TESTS:-0}" = 1 ] && { step done; exit 0; }  # (a short check: the tests only)
step "PyTorch's GPU time (torch_kernels.py: CUDA graph replays between events, no read-back)"
[ "${A39_TORCHK:-1}" = 1 ] && { timeout 30 "$PY" "$H/py/torch_kernels.py" "$W" --only "^attention" || echo "torch_kernels: rc $?"; }
# envs/opts of a knob list "A,B,--x": words starting with -- are gltensor-run options
bin_of() { if [ "$1" = main ]; then echo "$B/main/bin/gltensor-run"; else echo "$B/bin/gltensor-run"; fi; }
lib_of() { if [ "$1" = main ]; then echo "$B/main/lib:$LD_LIBRARY_PATH"; else echo "$LD_LIBRARY_PATH"; fi; }
# run BUILD NAME MODEL ARGS MODE [KNOB...] -> "mean / min" (log in $W/log); MODE plain, replay or noread
run() {
  local b=$1 name=$2 model=$3 args=$4 mode=$5; shift 5
  local tag=$b; [ $# -gt 0 ] && tag="$b-$(echo "$*" | sed 's#[^ =]*/gv/#gv-#g' | tr ' =/' '_-_')"
  local log=$W/log/$name-$mode-$tag.txt extra=--replay rb=--read-back
  [ "$mode" = plain ] && extra=""
  [ "$mode" = plain ] && [ $# -eq 0 ] && extra="--output-dir $W/out$([ "$b" = main ] && echo main)/$name"
  [ "$mode" = noread ] && extra="" rb=""
  local envs=() opts=() x
  for x in "$@"; do if [ "${x#--}" != "$x" ]; then opts+=("$x"); else envs+=("$x"); fi; done
  # shellcheck disable=SC2086
  env "${envs[@]}" LD_LIBRARY_PATH="$(lib_of "$b")" timeout 10 "$(bin_of "$b")" "$model" $args --bench "$REPS" --warmup-ms "$TC_WARMUP_MS" $rb $extra \
    "${opts[@]}" > "$log" 2>&1 || echo "($b $name $mode $*: rc $?)" >&2
  grep -E '^bench' "$log" | sed -E 's/.*mean ([0-9.]+) ms, min ([0-9.]+) ms.*/\1 \/ \2/' | grep . ||
    echo "? $(grep -m1 -iE 'rror' "$log" | cut -c1-100)"
}
for round in $(seq 1 "$ROUNDS"); do
  [ "$SECONDS" -gt $((T0 + ${A39_ROUNDS_S:-30})) ] && echo "round $round: no time left" && break
  step "round $round: gltensor-run --bench $REPS --read-back (mean / min ms), main and branch alternated"
  while IFS='|' read -r name model _ args; do
    line="$name:"
    for mode in plain replay; do
      for b in main branch; do line="$line $b $mode $(run $b "$name" "$model" "$args" $mode);"; done
    done
    for v in $A39_E2E; do
      re=${v%%:*}; knobs=${v#*:}; echo "$name" | grep -qE "$re" || continue
      [ "${name#relu}" != "$name" ] && continue
      # shellcheck disable=SC2086
      line="$line [$knobs] replay $(run branch "$name" "$model" "$args" replay ${knobs//,/ });"
    done
    echo "$line"
  done < "$W/cases.txt"
done
step "GPU time per run (gltensor-run --profile --bench 100, plain; us per run = ms over 100 runs x 10)"
while IFS='|' read -r name model _ args; do
  for v in main branch $A39_PROF; do
    b=branch; knobs=""
    case "$v" in main | branch) b=$v ;; *) re=${v%%:*}; knobs=${v#*:}; echo "$name" | grep -qE "$re" || continue ;; esac
    [ "${name#relu}" != "$name" ] && [ "$v" != branch ] && continue
    [ "$SECONDS" -gt $((T0 + ${A39_PROF_S:-75})) ] && echo "no time left for $name $v" && continue
    envs=() opts=()
    for x in ${knobs//,/ }; do if [ "${x#--}" != "$x" ]; then opts+=("$x"); else envs+=("$x"); fi; done
    # shellcheck disable=SC2086
    echo "$name $v: $(env "${envs[@]}" LD_LIBRARY_PATH="$(lib_of $b)" timeout 8 "$(bin_of $b)" "$model" $args --bench 100 \
      --profile "${opts[@]}" 2>&1 | grep -E '^GPU time|\.comp|rror' | tr -s ' ' | head -4 | tr '\n' ' ')"
  done
done < "$W/cases.txt"
while IFS='|' read -r name _ _ _; do
  cp "$W/log/$name-plain-branch.txt" "$W/log/$name-plain.txt"; cp "$W/log/$name-replay-branch.txt" "$W/log/$name-replay.txt"
done < "$W/cases.txt"
step "outputs: branch against main (plain default runs)"
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
T=$((${A39_END:-125} - SECONDS)); [ $T -gt 20 ] && T=20; [ $T -lt 5 ] && T=5
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$ONLY" | grep -vE "^$" || echo "torch side: rc $?"
step done
