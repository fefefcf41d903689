#!/usr/bin/env bash
# Makes wino35's GPU pack (the lead runs it as `bash gpu-multi/wino35/run.sh`):
#   P=/work/main/gpu-multi/wino35 bash scripts/packs/wino35/make_pack.sh
# (WINDOW=4: the last window's pack, run4.sh as its run.sh, with test_conv_winograd.)
# bin/ (this worktree's release gltensor-run and gltensor_model_bench, stripped), lib/ (its libgltensor.so.0),
# base/ (main's build: BASE=/work/main/build's gltensor-run, gltensor_model_bench and lib/libgltensor.so.0,
# stripped), py/ (torchcmp.py, onnx_torch_ext.py, shared/gpu's onnx_torch.py), torchcmp.sh (torchcmp's run.sh),
# w35_torch.py, run.sh, COMMIT, ocr.tar.xz (PP-OCRv4 det and the direction classifier from $GLTENSOR_MODEL_CACHE/models/ocr:
# rec's 10.8 MB past 20 MiB; no conv of det, rec or cls takes the Winograd plan). Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/wino35}; BASE=${BASE:-/work/main/build}
SHARED=${SHARED:-/work/shared/gpu}; OCR=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py" "$P/base/lib"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp "$BASE/tools/gltensor-run" "$BASE/bench/gltensor_model_bench" "$P/base/"
cp -L "$BASE/libgltensor.so.0" "$P/base/lib/"
strip "$P"/bin/* "$P"/lib/* "$P"/base/gltensor-run "$P"/base/gltensor_model_bench "$P"/base/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" \
  "$WT/scripts/packs/wino35/w35_torch.py" "$P/py/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
if [ "${WINDOW:-}" = 4 ]; then  # the last window: run4.sh as run.sh, test_conv_winograd, no OCR model
  cp "$WT/scripts/packs/wino35/run4.sh" "$P/run.sh"
  cp "$WT/build/tests/test_conv_winograd" "$P/bin/" && strip "$P/bin/test_conv_winograd"
else
  cp "$WT/scripts/packs/wino35/run.sh" "$P/run.sh"
fi
[ "${WINDOW:-}" = 4 ] || tar -C "$OCR" -cf - ch_PP-OCRv4_det_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx |
  xz -T1 --lzma2=preset=6,pb=2,lp=2,lc=0 > "$P/ocr.tar.xz"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
echo "base: $BASE ($(git -C "$BASE/.." log -1 --format=%h 2> /dev/null), libgltensor built $(date -r "$BASE/libgltensor.so.0" -u +%H:%M))" >> "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
