#!/usr/bin/env bash
# Makes suite39b's GPU pack: P=/work/main/gpu-multi/suite39b [B=build] GLTENSOR_MODEL_CACHE=/work/main/.cache
# bash scripts/packs/suite39b/make_pack.sh
# builds.tar.xz: bin/ (this worktree's release test_ocr_models, stripped: its BatchedRecognitionMatchesLineByLine
# now recognizes the shared run's boxes through OcrPipeline::recognize_lines) and lib/ (its libgltensor.so.0;
# OpenCV's core and imgproc and what they load: the
# GPU machine's common-lib has no OpenCV; its X11 libraries are there: the other packs' test programs load
# them through libGLX); DejaVuSans.ttf.xz (the OCR sample's font); models/ (the OCR models, xz), run.sh, COMMIT.
# No kernel changed on the branch. Under 20 MiB: the programs and libraries in one xz with the x86 filter, the
# models xz'd with settings for float data.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite39b}; B=$WT/${B:-build}
M=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite39b/result-last.txt"
rm -rf "$P"; mkdir -p "$P/models/models/ocr"
T=$(mktemp -d); mkdir -p "$T/bin" "$T/lib"
for t in test_ocr_models; do
  strip -o "$T/bin/$t" "$B/tests/$t"
done
strip -o "$T/lib/libgltensor.so.0" "$B/libgltensor.so.0"
S=/usr/lib/x86_64-linux-gnu
for l in libopencv_imgproc.so.406 libopencv_core.so.406 libtbb.so.12 liblapack.so.3 libblas.so.3 libgfortran.so.5 \
  libquadmath.so.0; do strip -o "$T/lib/$l" "$(readlink -f "$S/$l")"; done
tar -C "$T" -cf - bin lib | xz -T1 --x86 --lzma2=preset=9e > "$P/builds.tar.xz"; rm -rf "$T"
# DejaVu Sans, where the OCR sample's renderer looks for it (demos/ocr/image.hpp; run.sh puts it there if absent)
xz -9e -c /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf > "$P/DejaVuSans.ttf.xz"
cp "$M"/*.onnx "$M"/ppocr_keys_v1.txt "$P/models/models/ocr/"
xz -T2 --lzma2=preset=9e,pb=2,lp=2,lc=0 "$P"/models/models/ocr/*
cp "$WT/scripts/packs/suite39b/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
