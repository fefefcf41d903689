#!/usr/bin/env bash
# lstm36's GPU pack (issue 21): the LSTM rows of torchcmp with this branch's build (gltensor plain and replayed
# against PyTorch eager and its CUDA graph, outputs compared), main's libgltensor.so.0 and this branch's
# alternating on the same models (same gltensor-run binary), the register kernel's forms (GLTENSOR_RNN_REGS=KS,RR,
# GLTENSOR_SUBGROUPS=0, GLTENSOR_RNN=steps), time against sequence length (fixed cost and time per step), test_rnn
# on GLES and desktop GL, the subgroup sums sabotaged (GLTENSOR_GLSL_DIR), profiles.
#   bash gpu-multi/lstm36/run.sh   ($H: the pack; make_pack.sh makes it)
set -u
echo "commit: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
L=/tmp/lstm36libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain
W=/tmp/lstm36tc; N=${LSTM36_REPS:-100}
echo "=== [$SECONDS s] torchcmp, LSTM rows, this branch"
TC_W=$W TC_ONLY=${LSTM36_ONLY:-lstm} TC_PROFILE_UNTIL=0 TC_REPS=${LSTM36_TC_REPS:-} timeout 70 bash "$H/torchcmp.sh" 2>&1 |
  grep -vE "^(load|plan|output) " | tail -30
run() {  # lib label model args...
  local lib=$1 label=$2 model=$3; shift 3
  echo "$label $(basename "$model" .onnx) $(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 20 "$H/bin/gltensor-run" "$model" "$@" 2>&1 < /dev/null | grep -E '^bench|rror' | sed 's/(outputs read back), //; s/process CPU min/CPU min/' | cut -c1-150)"
}
echo "=== [$SECONDS s] main / branch alternating (gltensor-run --bench $N --read-back, plain and --replay)"
for round in 1 2; do
  [ "$SECONDS" -gt 75 ] && break
  while IFS='|' read -r name model reps args; do
    echo "$name" | grep -qE "${LSTM36_ONLY:-lstm}" || continue
    for mode in "" "--replay"; do
      out=(); [ "$round$mode" = 1 ] && out=(--output-dir "$W/cmp/main-$name")
      # shellcheck disable=SC2086
      run "$MAIN" "main${mode}" "$model" $args --bench "$N" --read-back $mode ${out[@]+"${out[@]}"}
      [ "$round$mode" = 1 ] && out=(--output-dir "$W/cmp/branch-$name")
      # shellcheck disable=SC2086
      run "$H/lib" "branch${mode}" "$model" $args --bench "$N" --read-back $mode ${out[@]+"${out[@]}"}
    done
  done < "$W/cases.txt"
done
python3 - "$W/cmp" <<'PY'
import glob, os, sys
import numpy as np
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "main-*/*.npy"))):
    g = f.replace("/main-", "/branch-")
    if os.path.exists(g):
        a, b = np.load(f), np.load(g)
        print(f"outputs main vs branch {os.path.basename(os.path.dirname(f))[5:]}/{os.path.basename(f)}: max|d| {abs(a - b).max():.2e} (max|y| {abs(a).max():.2f})")
PY
echo "=== [$SECONDS s] test_rnn on the GPU, GLES then desktop GL"
timeout 25 "$H/bin/test_rnn" > /tmp/lstm36-gles.txt 2>&1; echo "GLES rc $?: $(grep -cE '^\[       OK' /tmp/lstm36-gles.txt) OK; $(grep -E '^\[       OK' /tmp/lstm36-gles.txt | grep -oE 'Rnn.Registers[A-Za-z]* \([0-9]+ ms\)' | tr '\n' ' ')"
grep -E "FAILED|Failure|seed" /tmp/lstm36-gles.txt | head -8
GLTENSOR_API=gl timeout 25 "$H/bin/test_rnn" > /tmp/lstm36-gl.txt 2>&1; echo "GL rc $?: $(grep -cE '^\[       OK' /tmp/lstm36-gl.txt) OK"
grep -E "FAILED|Failure|seed" /tmp/lstm36-gl.txt | head -8
for sab in shuffle nowait; do
  echo "=== [$SECONDS s] sabotage $sab (glsl/$sab: must fail)"
  GLTENSOR_GLSL_DIR=$H/glsl/$sab timeout 15 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernel*' > /tmp/lstm36-sab.txt 2>&1
  echo "rc $? ($(grep -cE 'Failure' /tmp/lstm36-sab.txt) failures: CAUGHT if rc 1): $(grep -E '^\[  FAILED  \] Rnn' /tmp/lstm36-sab.txt | sort -u | tr '\n' ' ')"
done
echo "=== [$SECONDS s] every GRID poll giving up (glsl/stall): gltensor-run must raise LimitError (ErrorFlags::kStall)"
m=$(grep "^lstm_s64_h256_d2|" "$W/cases.txt" | cut -d'|' -f2)
GLTENSOR_GLSL_DIR=$H/glsl/stall timeout 30 "$H/bin/gltensor-run" "$m" --bench 2 2>&1 < /dev/null | grep -iE "error|^bench" | cut -c1-220
echo "=== [$SECONDS s] the register kernel's forms (branch, replayed): GLTENSOR_RNN_REGS=KS,RR, no subgroups, steps"
for m in lstm_s256_h128_d1 lstm_s256_h256_d2 lstm_s64_h64_d1; do
  IFS='|' read -r _ model _ args < <(grep "^$m|" "$W/cases.txt")
  case $m in
    lstm_s256_h128_d1) forms=${LSTM36_FORMS128:-"8,16 2,64 0,32,2 0,32,4"} ;;
    lstm_s256_h256_d2) forms=${LSTM36_FORMS256:-"0,64,4 0,32,16 16,16,8"} ;;
    *) forms=${LSTM36_FORMS64:-"1,64 4,16 0,32,2"} ;;
  esac
  for round in 1 2; do
    [ "$SECONDS" -gt 112 ] && break
    # shellcheck disable=SC2086
    run "$H/lib" "plan--replay" "$model" $args --bench "$N" --read-back --replay
    for f in $forms; do
      # shellcheck disable=SC2086
      GLTENSOR_RNN_REGS=$f run "$H/lib" "regs=$f--replay" "$model" $args --bench "$N" --read-back --replay
    done
    # shellcheck disable=SC2086
    GLTENSOR_SUBGROUPS=0 run "$H/lib" "nosubgroups--replay" "$model" $args --bench "$N" --read-back --replay
    for pr in nombar noy nox; do
      # shellcheck disable=SC2086
      GLTENSOR_GLSL_DIR=$H/glsl/$pr run "$H/lib" "probe-$pr--replay" "$model" $args --bench "$N" --read-back --replay
    done
    [ $round = 1 ] && GLTENSOR_RNN=steps run "$H/lib" "steps--replay" "$model" $args --bench "$N" --read-back --replay
  done
done
echo "=== [$SECONDS s] time against sequence length (LSTM, 1 direction, input 64; branch replayed; main at T=1)"
python3 - "$W/seq" <<'PY'
import os, sys
import numpy as np
from onnx import TensorProto as TP, helper as h, save
d = sys.argv[1]; os.makedirs(d, exist_ok=True); rng = np.random.default_rng(3)
for H in (64, 128):
    for T in (1, 16, 64, 256):
        I, G = 64, 4
        w = rng.uniform(-0.3, 0.3, (1, G * H, I)).astype(np.float32)
        r = rng.uniform(-1.5, 1.5, (1, G * H, H)).astype(np.float32) / np.sqrt(H)
        b = rng.uniform(-0.5, 0.5, (1, 2 * G * H)).astype(np.float32)
        inits = [h.make_tensor(n, TP.FLOAT, a.shape, a.flatten()) for n, a in (("W", w), ("R", r), ("B", b))]
        node = h.make_node("LSTM", ["x", "W", "R", "B"], ["y", "yh", "yc"], hidden_size=H)
        vi = [h.make_tensor_value_info("y", TP.FLOAT, [T, 1, 1, H])] + [
            h.make_tensor_value_info(o, TP.FLOAT, [1, 1, H]) for o in ("yh", "yc")]
        g = h.make_graph([node], "lstm", [h.make_tensor_value_info("x", TP.FLOAT, [T, 1, I])], vi, inits)
        save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), os.path.join(d, f"lstm_t{T}_h{H}.onnx"))
PY
for HID in 64 128; do
  [ "$SECONDS" -gt 124 ] && break
  run "$MAIN" "main--replay" "$W/seq/lstm_t1_h$HID.onnx" --bench "$N" --read-back --replay
  for T in 1 16 64 256; do run "$H/lib" "branch--replay" "$W/seq/lstm_t${T}_h$HID.onnx" --bench "$N" --read-back --replay; done
done
echo "=== [$SECONDS s] profiles (branch, plain, --bench 20)"
for m in lstm_s256_h128_d1 lstm_s256_h256_d2 lstm_s64_h64_d1; do
  [ "$SECONDS" -gt 133 ] && break
  IFS='|' read -r _ model _ args < <(grep "^$m|" "$W/cases.txt")
  # shellcheck disable=SC2086
  timeout 10 "$H/bin/gltensor-run" "$model" $args --bench 20 --profile 2>&1 | grep -E "^bench|GPU time|\.comp" | head -8
done
echo "=== [$SECONDS s] done"
