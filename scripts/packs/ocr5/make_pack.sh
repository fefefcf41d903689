#!/usr/bin/env bash
# Usage: [RUN=run1.sh|run2.sh] [TESTS='test_a test_b'] [EXP=DIR] bash scripts/packs/ocr5/make_pack.sh [FOLDER]; then touch FOLDER/READY.
# Builds ocr5's GPU pack (default /work/main/gpu-multi/ocr5) from /work/wt-ocr5/build and
# /work/main/build. The rounded models, OpenCV's libraries and the font are made as in
# scripts/packs/rec3/make_pack.sh (staged in $R; its models: float32 weights rounded to 11
# significant bits, so f16 weights are nearly exact there: the text check of f16 is llvmpipe's).
set -eu
P=${1:-/work/main/gpu-multi/ocr5}
R=${R:-/tmp/ocr5src}  # staging: sys.tar.xz, models.tar.xz, DejaVuSans.ttf.xz (rec3's make_pack.sh makes them)
D=$(cd "$(dirname "$0")" && pwd)
S=/tmp/ocr5stage
for f in sys.tar.xz models.tar.xz DejaVuSans.ttf.xz; do
  [ -e $R/$f ] || { echo "missing $R/$f: R=$R bash scripts/packs/rec3/make_pack.sh makes it"; exit 1; }
done
rm -rf "$P" $S; mkdir -p "$P" $S/bin $S/lib $S/main/bin $S/main/lib
cp /work/wt-ocr5/build/bench/gltensor_ocr_bench /work/wt-ocr5/build/tools/gltensor-run $S/bin/
for t in ${TESTS:-}; do cp /work/wt-ocr5/build/tests/$t $S/bin/; done
cp -L /work/wt-ocr5/build/libgltensor.so.0 $S/lib/
cp /work/main/build/bench/gltensor_ocr_bench /work/main/build/tools/gltensor-run $S/main/bin/
cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
strip $S/bin/* $S/lib/* $S/main/bin/* $S/main/lib/*
git -C /work/wt-ocr5 log -1 --format='%h %s' | cut -c1-100 > $S/COMMIT
git -C /work/wt-ocr5 status --porcelain --untracked-files=no | head -5 >> $S/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
tar -C $S -cf - bin lib main COMMIT | xz -T1 -6 > "$P"/gl.tar.xz
cp $R/sys.tar.xz $R/models.tar.xz $R/DejaVuSans.ttf.xz "$P"/
cp $D/${RUN:-run1.sh} "$P"/run.sh
# run2: EXP=folder of experimental kernel folders (each loaded through GLTENSOR_GLSL_DIR)
if [ -n "${EXP:-}" ]; then tar -C "$EXP" -cf - . | xz -T1 -6 > "$P"/exp.tar.xz; fi
du -sh "$P"
