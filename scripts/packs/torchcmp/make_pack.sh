#!/usr/bin/env bash
# Makes the GPU pack of scripts/packs/torchcmp (the lead runs it as `bash gpu-multi/torchcmp/run.sh`):
#   P=/work/main/gpu-multi/torchcmp bash scripts/packs/torchcmp/make_pack.sh
# (WINDOW=3: the last window's pack, run3.sh as its run.sh.)
# bin/ (this worktree's release gltensor-run and gltensor_model_bench, stripped), lib/ (its libgltensor.so.0),
# py/ (torchcmp.py, onnx_torch_ext.py and shared/gpu's onnx_torch.py), ocr.tar.xz (PP-OCRv4 det and rec, the
# direction classifier, from $GLTENSOR_MODEL_CACHE/models/ocr), run.sh, COMMIT. Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/torchcmp}
OCR=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr; SHARED=${SHARED:-/work/shared/gpu}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
if [ "${WINDOW:-}" = 3 ]; then  # the last window: run3.sh as run.sh, the table as torchcmp.sh, test_pool
  cp "$WT/scripts/packs/torchcmp/run3.sh" "$P/run.sh"
  cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
  cp "$WT/build/tests/test_pool" "$P/bin/" && strip "$P/bin/test_pool"
else
  cp "$WT/scripts/packs/torchcmp/run.sh" "$P/run.sh"
fi
tar -C "$OCR" -cf - ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx |
  xz -T1 --lzma2=preset=6,pb=2,lp=2,lc=0 > "$P/ocr.tar.xz"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
