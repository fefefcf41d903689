#!/usr/bin/env bash
# mel36's test-only GPU pack (the lead's fix-check window, under 40 s): the branch's tests that changed after
# window 3, on GLES and desktop GL: test_model_signal_ops (SignalOps.*: the log-mel front end, fuse_mlp leaving the
# frames' two matmuls by default), test_matmul's log and square epilogues, test_fused_mlp's strided rows.
# make_pack.sh with TESTS=1 ships it as run.sh.
set -u
W=/tmp/mel36t; rm -rf "$W"; mkdir -p "$W/b"; tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
echo "branch: $(cat "$H/COMMIT")"
for api in gles gl; do
  echo "--- GLTENSOR_API=$api [$SECONDS s]"
  (cd "$W" && GLTENSOR_API=$api timeout 12 "$B/bin/test_model_signal_ops" --gtest_filter='SignalOps.*' 2>&1 | grep -E "^\[ +(FAILED|PASSED) |Failure|Which is|seed=|trace" | head -20)
  (cd "$W" && GLTENSOR_API=$api timeout 12 "$B/bin/test_matmul" --gtest_filter='Matmul.EpilogueLogAndSquare*' 2>&1 | grep -E "^\[ +(FAILED|PASSED) |Failure|Which is|seed=" | head -10)
  (cd "$W" && GLTENSOR_API=$api timeout 8 "$B/bin/test_fused_mlp" --gtest_filter='FusedMlp.Strided*:FusedMlp.ThreeGemm*' 2>&1 | grep -E "^\[ +(FAILED|PASSED) |Failure|Which is|seed=" | head -10)
done
echo "done [$SECONDS s]"
