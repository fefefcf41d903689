#!/usr/bin/env bash
# Makes attn39's GPU pack: P=/work/main/gpu-multi/attn39 bash scripts/packs/attn39/make_pack.sh
# builds.tar.xz: bin/ + lib/ (this worktree's release gltensor-run, test_nn, test_plans, test_model_attention,
# test_attention, test_attention_head_dims and libgltensor.so.0, stripped) and main/bin + main/lib (/work/main/build's
# gltensor-run and libgltensor.so.0), unpacked by run.sh into /tmp; py/ (torchcmp.py, onnx_torch_ext.py,
# torch_kernels.py (attn38's), shared/gpu's onnx_torch.py), run.sh, knobs.sh (the window's variants), COMMIT and main/COMMIT;
# gv/ (GLSL variants of attention_block.comp for GLTENSOR_GLSL_DIR: scripts/packs/attn39/gv, gen/block_variants.py).
# Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/attn39}; MAIN=${MAIN:-/work/main}
SHARED=${SHARED:-/work/shared/gpu}
T=$(mktemp -d); rm -rf "$P"; mkdir -p "$P/py" "$P/main" "$T/bin" "$T/lib" "$T/main/bin" "$T/main/lib"
cp "$WT/build/tools/gltensor-run" "$T/bin/"
for t in test_nn test_plans test_model_attention test_attention test_attention_head_dims; do
  cp "$WT/build/tests/$t" "$T/bin/"
done
cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp "$MAIN/build/tools/gltensor-run" "$T/main/bin/"; cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/bin/* "$T"/main/lib/*
tar -C "$T" -cf - bin lib main | xz -T1 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" \
  "$WT/scripts/packs/attn38/torch_kernels.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/attn39/knobs.sh" "$P/knobs.sh"
cp "$WT/scripts/packs/attn39/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
mkdir -p "$P/gv"
git -C "$WT" show fab3fd7:glsl/nn/attention_block.comp > "$P/gv/base.comp"  # the loop forms' base (windows 2-3)
python3 "$WT/scripts/packs/attn39/gen/block_variants.py" "$WT/glsl/nn/attention_block.comp" "$P/gv" "$P/gv/base.comp"
rm "$P/gv/base.comp"
du -sh "$P"
