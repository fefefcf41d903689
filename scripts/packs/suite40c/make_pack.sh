#!/usr/bin/env bash
# Makes suite40c's GPU pack: P=/work/main/gpu-multi/suite40c bash scripts/packs/suite40c/make_pack.sh
# bin/ (this worktree's release test_plans, test_nn_plans, test_model, test_iconv_warp,
# test_iconv_implicit, test_iconv_direct and the REG-capped entries' binaries, stripped), lib/ (its libgltensor.so.0), py/ort_run.py
# (test_model's ONNX Runtime reference through python3), run.sh, COMMIT. No kernel changed (a
# planner setting, default unchanged, and ctest's environment), so no speed A/B.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite40c}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite40c/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py"
for t in test_plans test_nn_plans test_model test_iconv_warp test_iconv_implicit test_iconv_direct test_rnn test_model_run \
  test_model_replay test_conv_winograd test_lora test_model_attention test_model_signal_ops; do
  cp "$WT/build/tests/$t" "$P/bin/"
done
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/tools/ort-reference/ort_run.py" "$P/py/"
cp "$WT/scripts/packs/suite40c/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
