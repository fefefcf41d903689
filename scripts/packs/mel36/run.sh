#!/usr/bin/env bash
# mel36's GPU pack (issue 21): torchcmp's logmel_16k (STFT of 1 s at 16 kHz, power, 40 mel bins, log) with
# main's build and this branch's in one call (plain and replayed; the branch's variants: VARIANTS, settings, its
# unfused plan among them), the outputs compared with main's, PyTorch's eager and CUDA-graph runs of the same model
# on the same input (torchcmp.py; the table's gltensor columns: the branch's default plan, last round),
# test_model_signal_ops on GLES and desktop GL and test_fused_mlp, GPU profiles. The lead runs it as `bash gpu-multi/mel36/run.sh` ($H the pack,
# made by make_pack.sh). Locally (llvmpipe, PyTorch on the CPU): H=PACK PY=/usr/bin/python3 REPS=20 TC_REPS=5 bash run.sh
set -u
W=/tmp/mel36w; PY=${PY:-python3}; REPS=${REPS:-500}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/outmain" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"
step "models and inputs"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr /nonexistent | tail -1
grep -E "^logmel_" "$W/cases.txt" > "$W/c.txt"; mv "$W/c.txt" "$W/cases.txt"
# The branch's variants: its default plan, then settings (GLTENSOR_FUSED_MLP=R / RxS: fuse_mlp with R rows a
# workgroup and S slices of K, the 402-wide DFT layer within the shared memory; =0: the two matmuls) and its
# unfused plan.
# (a variant of several settings joins them with commas)
VARIANTS=${VARIANTS:-"default GLTENSOR_MATMUL_KERNEL=gemv GLTENSOR_MATMUL_KERNEL=reg GLTENSOR_MATMUL_KERNEL=tile64 GLTENSOR_FUSE_ELEMENTWISE=0"}
run() {  # build name model args mode(plain|replay) [env] -> one line
  local b=$1 name=$2 model=$3 args=$4 mode=$5 env=${6:-default} bin lib out log
  if [ "$b" = main ]; then bin=$B/main/bin/gltensor-run lib=$B/main/lib:$LD_LIBRARY_PATH out=$W/outmain/$name log=$W/log/$name-$mode-main.txt
  else bin=$B/bin/gltensor-run lib=$LD_LIBRARY_PATH out=$W/out/$name log=$W/log/$name-$mode.txt; fi
  if [ "$env" != default ]; then log=$W/log/$name-$mode-${env//[^A-Za-z0-9]/_}.txt out=$W/outv/${env//[^A-Za-z0-9]/_}/$name; fi
  local extra="--output-dir $out"; [ "$mode" = replay ] && extra=--replay
  local e=""; [ "$env" != default ] && e=${env//,/ }
  # shellcheck disable=SC2086
  env $e LD_LIBRARY_PATH=$lib timeout 20 "$bin" "$model" $args --bench "$REPS" --read-back $extra > "$log" 2>&1 || echo "$b $name $mode $env: rc $?"
  echo "$name $mode $b $env: $(grep -E '^bench|rror' "$log" | sed 's/ (outputs read back)//; s/, process CPU min [0-9.]* ms//' | cut -c1-150)"
}
for round in 1 2; do
  [ "$SECONDS" -gt 70 ] && echo "round $round: no time left" && break
  step "round $round: gltensor-run --bench $REPS --read-back, main then the branch's variants, plain and replayed"
  while IFS='|' read -r name model _ args; do
    run main "$name" "$model" "$args" plain
    run main "$name" "$model" "$args" replay
    for v in $VARIANTS; do
      run branch "$name" "$model" "$args" plain "$v"
      run branch "$name" "$model" "$args" replay "$v"
    done
  done < "$W/cases.txt"
  [ "$round" = 1 ] && grep -h "^plan\|^dispatches" "$W"/log/logmel_16k-plain*.txt | sort | uniq -c
done
step "outputs: the branch's variants against main (plain runs)"
"$PY" - "$W" << 'PYEOF'
import sys, os, glob, numpy as np
w = sys.argv[1]
for f in sorted(glob.glob(os.path.join(w, "out", "*", "*.npy")) + glob.glob(os.path.join(w, "outv", "*", "*", "*.npy"))):
    name, leaf = f.split(os.sep)[-2], os.path.basename(f)
    m = os.path.join(w, "outmain", name, leaf)
    a, b = np.load(f).astype(np.float64), np.load(m).astype(np.float64)
    print(f"{os.path.relpath(f, w)}: max|branch - main| {np.abs(a - b).max():.2e} (max|main| {np.abs(b).max():.2g})")
PYEOF
step "the two matmuls alone (probe: logmel_16k's shapes as graph inputs, each 1 dispatch; replayed, then GPU time)"
"$PY" - "$W" << 'PYEOF'
import sys, os, numpy as np, onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as T
w = sys.argv[1]; md = os.path.join(w, "probe"); os.makedirs(md, exist_ok=True); rng = np.random.default_rng(3)
D = rng.uniform(-1, 1, (400, 402)).astype(np.float32); M = rng.uniform(0, 1, (402, 40)).astype(np.float32)
def save(name, nodes, inp, outs, inits):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(inp[0], T.FLOAT, inp[1])],
                     [h.make_tensor_value_info(o, T.FLOAT, None) for o in outs], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), os.path.join(md, name + ".onnx"))
    np.save(os.path.join(md, name + "_x.npy"), rng.uniform(0, 1, inp[1]).astype(np.float32))
save("stft_rowmajor", [h.make_node("MatMul", ["x", "D"], ["y"])], ("x", [98, 400]), ["y"], [nh.from_array(D, "D")])
save("stft_kmajor", [h.make_node("Gemm", ["x", "Dt"], ["y"], transB=1)], ("x", [98, 400]), ["y"],
     [nh.from_array(np.ascontiguousarray(D.T), "Dt")])
save("mel_rowmajor", [h.make_node("MatMul", ["x", "M"], ["m"]), h.make_node("Add", ["m", "e"], ["me"]),
     h.make_node("Log", ["me"], ["y"])], ("x", [98, 402]), ["y"], [nh.from_array(M, "M"), nh.from_array(np.float32(1e-6), "e")])
save("mel_kmajor", [h.make_node("Gemm", ["x", "Mt", "e"], ["me"], transB=1), h.make_node("Log", ["me"], ["y"])],
     ("x", [98, 402]), ["y"], [nh.from_array(np.ascontiguousarray(M.T), "Mt"), nh.from_array(np.float32(1e-6), "e")])
PYEOF
for mdl in stft_rowmajor stft_kmajor mel_rowmajor mel_kmajor; do
  for k in choose gemv reg tile64; do
    e=""; [ "$k" != choose ] && e="GLTENSOR_MATMUL_KERNEL=$k"
    r=$(env $e timeout 10 "$B/bin/gltensor-run" "$W/probe/$mdl.onnx" --input "x=$W/probe/${mdl}_x.npy" --bench "$REPS" --read-back --replay 2>&1 | grep -E "^bench|rror" | sed 's/ (outputs read back)//; s/, process CPU min [0-9.]* ms//' | cut -c1-110)
    g=$(env $e timeout 10 "$B/bin/gltensor-run" "$W/probe/$mdl.onnx" --input "x=$W/probe/${mdl}_x.npy" --bench 50 --profile 2>&1 | grep -E "\.comp " | head -2 | tr -s ' ' | tr '\n' ';')
    echo "$mdl $k: $r | GPU: $g"
  done
done

step "PyTorch eager and CUDA graph (torchcmp.py torch; the table's gltensor columns: the branch's last round)"
timeout 40 "$PY" "$H/py/torchcmp.py" torch "$W" --only 'logmel' ${TC_REPS:+--reps $TC_REPS} | grep -vE "^$" || echo "torch side: rc $?"
step "test_model_signal_ops (SignalOps.*: the fused log-mel front end against float64 and its unfused plan) and test_fused_mlp on the GPU"
for api in ${APIS:-gles}; do
  echo "--- GLTENSOR_API=$api"
  (cd "$W" && GLTENSOR_API=$api timeout 25 "$B/bin/test_model_signal_ops" --gtest_filter='SignalOps.*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) |Failure|Which is|differ|seed=|trace" | head -30)
done
(cd "$W" && timeout 30 "$B/bin/test_fused_mlp" --gtest_filter="${FMLP_FILTER:-FusedMlp.Strided*:FusedMlp.ThreeGemm*:FusedMlp.RandomChains*:FusedMlp.Prefetch*}" 2>&1 | grep -E "^\[ +(FAILED|PASSED) |Failure|Which is|seed=" | head -20)
step "profiles (gltensor-run --profile --bench 50, plain): main, the branch, the branch with GLTENSOR_MATMUL_KERNEL=gemv"
IFS='|' read -r _ model _ args < "$W/cases.txt"
prof() { grep -E "^bench|^dispatches|^plan|\.comp |^[A-Za-z.]+ +[0-9]+ +[0-9.]+ +[0-9.]+%" | cut -c1-200 | head -18; }
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$B/main/lib:$LD_LIBRARY_PATH timeout 10 "$B/main/bin/gltensor-run" "$model" $args --bench 50 --profile 2>&1 | prof
# shellcheck disable=SC2086
timeout 10 "$B/bin/gltensor-run" "$model" $args --bench 50 --profile 2>&1 | prof
# shellcheck disable=SC2086
GLTENSOR_MATMUL_KERNEL=gemv timeout 10 "$B/bin/gltensor-run" "$model" $args --bench 50 --profile 2>&1 | prof
step done
