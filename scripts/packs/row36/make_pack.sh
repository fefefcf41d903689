#!/usr/bin/env bash
# Makes row36's GPU pack: P=/work/main/gpu-multi/row36 bash scripts/packs/row36/make_pack.sh
# builds.tar.xz: bin/ + lib/ (this worktree's release gltensor-run, test_model_layernorm, test_model_softmax,
# test_model_host_io, test_nn, test_model_se and libgltensor.so.0, stripped; glsl-sab, below) and main/bin + main/lib (/work/main/build's gltensor-run and
# library), unpacked by run.sh into /tmp; py/ (torchcmp.py, onnx_torch_ext.py, shared/gpu's onnx_torch.py);
# ocr.tar.xz (PP-OCRv4 det and rec, the direction classifier; torchcmp.py prepare writes the LayerNorm and Softmax
# models); run.sh, COMMIT and main/COMMIT. About 16 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/row36}; MAIN=${MAIN:-/work/main}
OCR=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr; SHARED=${SHARED:-/work/shared/gpu}
T=$(mktemp -d); rm -rf "$P"; mkdir -p "$P/py" "$P/main" "$T/bin" "$T/lib" "$T/main/bin" "$T/main/lib"
cp "$WT/build/tools/gltensor-run" "$WT/build/tests/test_model_layernorm" "$WT/build/tests/test_model_softmax" \
  "$WT/build/tests/test_model_host_io" "$WT/build/tests/test_nn" "$WT/build/tests/test_model_se" "$T/bin/"
cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp "$MAIN/build/tools/gltensor-run" "$T/main/bin/"; cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/bin/* "$T"/main/lib/*
# glsl-sab: the branch's GLSL with norm.comp's subgroup sum sabotaged (x 1.01; GLTENSOR_GLSL_DIR): its
# test_model_layernorm run on the GPU must fail (llvmpipe has no subgroup arithmetic: that path runs on GPUs only)
cp -r "$WT/glsl" "$T/glsl-sab"
sed -i 's|  v = subgroupAdd(v);|  v = subgroupAdd(v) * 1.01;|' "$T/glsl-sab/nn/norm.comp"
grep -q "subgroupAdd(v) \* 1.01" "$T/glsl-sab/nn/norm.comp"
tar -C "$T" -cf - bin lib main glsl-sab | xz -T1 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/row36/run.sh" "$P/run.sh"
tar -C "$OCR" -cf - ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx |
  xz -T1 --lzma2=preset=6,pb=2,lp=2,lc=0 > "$P/ocr.tar.xz"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
