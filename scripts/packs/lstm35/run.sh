#!/usr/bin/env bash
# lstm35's GPU pack (issue 21): the LSTM rows of torchcmp with this branch's build (gltensor plain and
# replayed against PyTorch's CUDA graph, outputs compared), then main's libgltensor.so.0 and this branch's
# alternating on the same models (same gltensor-run binary, LD_LIBRARY_PATH), test_rnn on the GPU, probes
# of the fused step kernel's shape (GLTENSOR_RNN_STEP_PROBE=S,KS) and a profile.
#   bash gpu-multi/lstm35/run.sh   ($H: the pack; make_pack.sh makes it)
set -u
echo "commit: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
# main's (and an earlier build's) libgltensor.so.0 come xz-compressed (the shared carry's 64 MiB)
L=/tmp/lstm35libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain; PREV=$L/libprev
W=/tmp/lstm35tc; N=${LSTM35_REPS:-100}
echo "=== [$SECONDS s] torchcmp, LSTM rows, this branch"
TC_W=$W TC_ONLY=${LSTM35_ONLY:-lstm} TC_PROFILE_UNTIL=0 TC_REPS=${LSTM35_TC_REPS:-} timeout 100 bash "$H/torchcmp.sh" 2>&1 | grep -vE "^(load|plan|output) " | tail -40
echo "=== [$SECONDS s] main / branch alternating (gltensor-run --bench "$N" --read-back, plain and --replay)"
run() {  # lib label model args...
  local lib=$1 label=$2 model=$3; shift 3
  echo "$label $(basename "$model" .onnx) $(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 20 "$H/bin/gltensor-run" "$model" "$@" 2>&1 | grep -E '^bench|rror' | cut -c1-190)"
}
for round in 1 2; do
  [ "$SECONDS" -gt 80 ] && break
  while IFS='|' read -r name model reps args; do
    echo "$name" | grep -qE "${LSTM35_ONLY:-lstm}" || continue
    for mode in "" "--replay"; do
      # shellcheck disable=SC2086
      run "$MAIN" "main${mode}" "$model" $args --bench "$N" --read-back $mode
      # shellcheck disable=SC2086
      run "$H/lib" "branch${mode}" "$model" $args --bench "$N" --read-back $mode
    done
  done < "$W/cases.txt"
done
echo "=== [$SECONDS s] operands loaded before the GEMV (this branch) against after (libprev: f7e4a1c's kernels), replayed, alternating"
if [ -d "$PREV" ]; then
  for m in lstm_s64_h64_d1 lstm_s64_h256_d2 lstm_s256_h128_d1 lstm_s256_h256_d2; do
    IFS='|' read -r _ model _ args < <(grep "^$m|" "$W/cases.txt")
    for round in 1 2; do
      # shellcheck disable=SC2086
      run "$PREV" "prev--replay" "$model" $args --bench "$N" --read-back --replay
      # shellcheck disable=SC2086
      run "$H/lib" "branch--replay" "$model" $args --bench "$N" --read-back --replay
    done
  done
fi
echo "=== [$SECONDS s] the matmul path (batch 9 LSTM, GRU without linear_before_reset) and GRU / RNN hidden 64"
python3 - "$W/extra" <<'PY'
import os, sys
import numpy as np
from onnx import TensorProto as TP, helper as h, save
d = sys.argv[1]; os.makedirs(d, exist_ok=True); rng = np.random.default_rng(5)
def model(name, op, T, B, H, D, G, **attrs):
    I = 64
    w = rng.uniform(-0.3, 0.3, (D, G * H, I)).astype(np.float32)
    r = rng.uniform(-1.5, 1.5, (D, G * H, H)).astype(np.float32) / np.sqrt(H)
    b = rng.uniform(-0.5, 0.5, (D, 2 * G * H)).astype(np.float32)
    inits = [h.make_tensor(n, TP.FLOAT, a.shape, a.flatten()) for n, a in (("W", w), ("R", r), ("B", b))]
    outs = ["y", "yh"] + (["yc"] if op == "LSTM" else [])
    node = h.make_node(op, ["x", "W", "R", "B"], outs, hidden_size=H,
                       direction="bidirectional" if D == 2 else "forward", **attrs)
    vi = [h.make_tensor_value_info("y", TP.FLOAT, [T, D, B, H])] + [
        h.make_tensor_value_info(o, TP.FLOAT, [D, B, H]) for o in outs[1:]]
    g = h.make_graph([node], name, [h.make_tensor_value_info("x", TP.FLOAT, [T, B, I])], vi, inits)
    save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), os.path.join(d, name + ".onnx"))
    np.save(os.path.join(d, name + "_x.npy"), rng.uniform(-1, 1, (T, B, I)).astype(np.float32))
model("lstm_s64_b9_h128", "LSTM", 64, 9, 128, 1, 4)
model("gru_s64_h128", "GRU", 64, 1, 128, 1, 3)
model("gru_lbr_s64_h64", "GRU", 64, 1, 64, 1, 3, linear_before_reset=1)
model("rnn_s64_h64_d2", "RNN", 64, 1, 64, 2, 1)
print("extra models written")
PY
for m in lstm_s64_b9_h128 gru_s64_h128 gru_lbr_s64_h64 rnn_s64_h64_d2; do
  [ "$SECONDS" -gt 120 ] && break
  for mode in "" "--replay"; do
    run "$MAIN" "main${mode}" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back $mode --output-dir "$W/extra/main$mode-$m"
    run "$H/lib" "branch${mode}" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back $mode --output-dir "$W/extra/branch$mode-$m"
  done
done
echo "=== [$SECONDS s] hidden 64, R in registers: 1 invocation a gate row (branch) against 4 (libprobe), replayed, alternating"
if [ -d "$L/libprobe" ]; then
  for round in 1 2; do
    IFS='|' read -r _ model _ args < <(grep "^lstm_s64_h64_d1|" "$W/cases.txt")
    # shellcheck disable=SC2086
    run "$H/lib" "branch--replay" "$model" $args --bench "$N" --read-back --replay
    # shellcheck disable=SC2086
    run "$L/libprobe" "probe-4parts--replay" "$model" $args --bench "$N" --read-back --replay
    for m in gru_lbr_s64_h64 rnn_s64_h64_d2; do
      run "$H/lib" "branch--replay" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back --replay
      run "$L/libprobe" "probe-4parts--replay" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back --replay
    done
  done
fi
echo "=== [$SECONDS s] outputs kept in device memory (GLTENSOR_HOST_IO=copy) against the default, replayed"
for m in gru_s64_h128; do
  for round in 1 2; do
    run "$H/lib" "branch--replay" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back --replay
    GLTENSOR_HOST_IO=copy run "$H/lib" "branch-copy--replay" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back --replay
    GLTENSOR_HOST_IO=copy run "$H/lib" "branch-copy" "$W/extra/$m.onnx" --input "x=$W/extra/${m}_x.npy" --bench "$N" --read-back
  done
done
python3 - "$W/extra" <<'PY'
import glob, os, sys
import numpy as np
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "main-*/*.npy"))):
    g = f.replace("/main-", "/branch-")
    if os.path.exists(g):
        a, b = np.load(f), np.load(g)
        print(f"outputs main vs branch {os.path.basename(os.path.dirname(f))[5:]}/{os.path.basename(f)}: max|d| {abs(a - b).max():.2e} (max|y| {abs(a).max():.2f})")
PY
echo "=== [$SECONDS s] test_rnn on the GPU"
timeout 30 "$H/bin/test_rnn" 2>&1 | grep -E "OK|FAIL|Failure|PASSED|seed" | head -20
echo "=== [$SECONDS s] profile (branch, plain)"
m=$W/models/lstm_s256_h256_d2.onnx
[ "$SECONDS" -lt 130 ] && timeout 15 "$H/bin/gltensor-run" "$m" --shape x=256x1x64 --bench 20 --profile 2>&1 | grep -vE "^(load|plan|output) " | head -25
echo "=== [$SECONDS s] done"
