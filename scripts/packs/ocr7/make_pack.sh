#!/usr/bin/env bash
# Usage: [NAME=ocr7] [RUN=run1.sh] [EXTRA=files] [LIB2=lib] bash scripts/packs/ocr7/make_pack.sh [FOLDER]; then
# touch FOLDER/READY.
# NAME's GPU pack (default /work/main/gpu-multi/NAME; NAME ocr7 unless given: ocr8 packs with it too, its
# run*.sh in scripts/packs/NAME, the unpacking in this folder's common.sh): NAME's binaries and library
# (/work/wt-NAME/build)
# and main's (/work/main/build: gltensor_ocr_bench, gltensor-run, libgltensor.so.0; the page's pipeline is
# in the bench binary, so each side runs its own), the rounded models and DejaVuSans from rec3's staging
# ($R, as ocr5 and ocr6 packed them) and OpenCV's libraries.
set -eu
NAME=${NAME:-ocr7}
P=${1:-/work/main/gpu-multi/$NAME}
R=${R:-/tmp/ocr5src}
D=$(cd "$(dirname "$0")" && pwd)
S=/tmp/${NAME}stage
for f in models.tar.xz DejaVuSans.ttf.xz; do [ -e $R/$f ] || { echo "missing $R/$f"; exit 1; }; done
if [ ! -e /tmp/ocr7src/sys.tar.xz ]; then
  rm -rf /tmp/ocr7src/sys && mkdir -p /tmp/ocr7src/sys
  for l in libX11.so.6 libXau.so.6 libXdmcp.so.6 libblas.so.3 libbsd.so.0 libgfortran.so.5 liblapack.so.3 libmd.so.0 libopencv_core.so.406 libopencv_imgproc.so.406 libpolyclipping.so.22 libquadmath.so.0 libtbb.so.12 libxcb.so.1; do cp -L /lib/x86_64-linux-gnu/$l /tmp/ocr7src/sys/; done
  tar -C /tmp/ocr7src/sys -cf - . | xz -T1 -6 > /tmp/ocr7src/sys.tar.xz
fi
# The lead's result.txt of the last call is kept (copied to /tmp/${NAME}results/ with the time) before the folder is replaced.
mkdir -p /tmp/${NAME}results; [ -e "$P/result.txt" ] && cp "$P/result.txt" /tmp/${NAME}results/result-$(date -u +%H%M).txt
rm -rf "$P" $S; mkdir -p "$P" $S/bin $S/lib $S/main/bin $S/main/lib
cp /work/wt-$NAME/build/bench/gltensor_ocr_bench /work/wt-$NAME/build/tools/gltensor-run $S/bin/
for t in ${EXTRA:-}; do cp $t $S/bin/; done
cp -L /work/wt-$NAME/build/libgltensor.so.0 $S/lib/
cp /work/main/build/bench/gltensor_ocr_bench /work/main/build/tools/gltensor-run $S/main/bin/
cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
# LIB2: a second build of ocr7's library to compare (run4.sh: lib2/, an uncommitted experiment)
if [ -n "${LIB2:-}" ]; then mkdir -p $S/lib2 && cp -L "$LIB2" $S/lib2/libgltensor.so.0; fi
strip $S/bin/* $S/lib/* $S/main/bin/* $S/main/lib/* $S/lib2/* 2>/dev/null || true
git -C /work/wt-$NAME log -1 --format='%h %s' | cut -c1-100 > $S/COMMIT
git -C /work/wt-$NAME status --porcelain --untracked-files=no | head -5 >> $S/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
tar -C $S -cf - $(cd $S && ls -d bin lib lib2 main COMMIT 2>/dev/null) | xz -T2 -6 > "$P"/gl.tar.xz
cp /tmp/ocr7src/sys.tar.xz $R/models.tar.xz $R/DejaVuSans.ttf.xz "$P"/
cp $D/../$NAME/${RUN:-run1.sh} "$P"/run.sh
cp $D/common.sh "$P"/
du -sh "$P"
