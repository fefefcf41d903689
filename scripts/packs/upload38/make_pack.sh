#!/usr/bin/env bash
# Makes upload38's GPU pack: P=/work/main/gpu-multi/upload38 [TESTS="test_interop_state ..."] bash scripts/packs/upload38/make_pack.sh
# builds.tar.xz: bin/ + lib/ (this worktree's release gltensor_io_bench, gltensor-run, test_pool, test_model_host_io and
# TESTS, libgltensor.so.0; stripped) and main/lib (/work/main/build's libgltensor.so.0), unpacked by run.sh into /tmp;
# ocr.tar.xz (PP-OCRv4 det), torch_upload.py, compare_upload.py, run.sh, COMMIT and main/COMMIT. About 6 MiB.
# (Window 1's pack also had both builds' gltensor_ocr_bench, rec, cls and the keys: OpenCV is not on the GPU machine.)
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/upload38}; MAIN=${MAIN:-/work/main}
OCR=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr; S=$WT/scripts/packs/upload38
T=$(mktemp -d); rm -rf "$P"; mkdir -p "$P/main" "$T/bin" "$T/lib" "$T/main/bin" "$T/main/lib"
cp "$WT/build/bench/gltensor_io_bench" "$WT/build/tools/gltensor-run" "$T/bin/"
for t in test_pool test_model_host_io ${TESTS:-}; do cp "$WT/build/tests/$t" "$T/bin/"; done
cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/lib/*
tar -C "$T" -cf - bin lib main | xz -T2 -6 > "$P/builds.tar.xz"; rm -rf "$T"
tar -C "$OCR" -cf - ch_PP-OCRv4_det_infer.onnx |
  xz -T2 --lzma2=preset=6,pb=2,lp=2,lc=0 > "$P/ocr.tar.xz"
cp "$S/run.sh" "$S/torch_upload.py" "$S/compare_upload.py" "$P/"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
