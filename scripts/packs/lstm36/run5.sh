#!/usr/bin/env bash
# lstm36's fix-check pack (issue 21; the lead's short window, <= 40 s): the GRID form on the GPU at the branch's final
# state (window 2's counter protocol, capped at the multiprocessors CUDA reports): the two hidden-256 LSTMs (and hidden 128, 64) once with
# the branch and main (outputs compared), test_rnn's register-kernel tests on GLES and desktop GL (Rnn.RegistersKernelGrid must pass,
# not skip), and GRID's wait removed (GLTENSOR_GLSL_DIR: must fail).
#   bash gpu-multi/lstm36/run.sh   ($H: the pack; RUN=run5.sh make_pack.sh makes it)
set -u
echo "commit: $(cat "$H/COMMIT")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,pstate --format=csv,noheader
L=/tmp/lstm36libs; rm -rf "$L"; mkdir -p "$L"; tar -C "$L" -xJf "$H/libs.tar.xz"; MAIN=$L/libmain
W=/tmp/lstm36fix; rm -rf "$W"; mkdir -p "$W"
timeout 20 "$H/bin/gltensor_model_bench" --save-models "$W/models" > /dev/null 2>&1 || echo "save-models failed"
for m in lstm_s64_h256_d2:64 lstm_s256_h256_d2:256 lstm_s256_h128_d1:256 lstm_s64_h64_d1:64; do
  n=${m%%:*} t=${m##*:}
  for lib in branch main; do
    dir=$H/lib; [ $lib = main ] && dir=$MAIN
    echo "$lib $n $(LD_LIBRARY_PATH=$dir:$LD_LIBRARY_PATH timeout 15 "$H/bin/gltensor-run" "$W/models/$n.onnx" --shape "x=${t}x1x64" \
      --bench 50 --read-back --replay --output-dir "$W/$lib-$n" 2>&1 < /dev/null | grep -E '^bench|rror' | cut -c1-160)"
  done
done
python3 - "$W" <<'PY'
import glob, os, sys
import numpy as np
for f in sorted(glob.glob(os.path.join(sys.argv[1], "main-*/*.npy"))):
    g = f.replace("/main-", "/branch-")
    if os.path.exists(g):
        a, b = np.load(f), np.load(g)
        print(f"outputs main vs branch {os.path.basename(os.path.dirname(f))[5:]}/{os.path.basename(f)}: max|d| {abs(a - b).max():.2e} (max|y| {abs(a).max():.2f})")
PY
for api in gles gl; do
  e=(); [ $api = gl ] && e=(GLTENSOR_API=gl)
  env ${e[@]+"${e[@]}"} timeout 13 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernel*:Rnn.SequenceKernelMatchesReference:Rnn.SequenceKernelEdgeShapes' > "$W/t-$api.txt" 2>&1
  echo "test_rnn $api rc $?: $(grep -cE '^\[       OK' "$W/t-$api.txt") OK; $(grep -E 'RegistersKernelGrid \(|SKIPPED \] Rnn|a GPU of' "$W/t-$api.txt" | head -3 | tr '\n' ' ')"
  grep -E "FAILED|Failure|seed|what\(\)" "$W/t-$api.txt" | head -6
done
GLTENSOR_GLSL_DIR=$H/glsl/nowait timeout 8 "$H/bin/test_rnn" --gtest_filter='Rnn.RegistersKernelGrid' > "$W/sab.txt" 2>&1
echo "sabotage nowait: rc $? ($(grep -c Failure "$W/sab.txt") failures; CAUGHT if rc 1)"
echo "=== [$SECONDS s] done"
