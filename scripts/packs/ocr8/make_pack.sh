#!/usr/bin/env bash
# Usage: [RUN=run1.sh] [EXTRA=files] [LIB2=lib] bash scripts/packs/ocr8/make_pack.sh [FOLDER]; then touch FOLDER/READY.
# ocr8's GPU pack (default /work/main/gpu-multi/ocr8): ocr8's binaries and library (/work/wt-ocr8/build)
# and main's (/work/main/build: gltensor_ocr_bench, gltensor-run, libgltensor.so.0; the page's pipeline is
# in the bench binary, so each side runs its own), the rounded models and DejaVuSans from rec3's staging
# ($R, as ocr5 and ocr6 packed them) and OpenCV's libraries.
set -eu
P=${1:-/work/main/gpu-multi/ocr8}
R=${R:-/tmp/ocr5src}
D=$(cd "$(dirname "$0")" && pwd)
S=/tmp/ocr8stage
for f in models.tar.xz DejaVuSans.ttf.xz; do [ -e $R/$f ] || { echo "missing $R/$f"; exit 1; }; done
if [ ! -e /tmp/ocr8src/sys.tar.xz ]; then
  rm -rf /tmp/ocr8src/sys && mkdir -p /tmp/ocr8src/sys
  for l in libX11.so.6 libXau.so.6 libXdmcp.so.6 libblas.so.3 libbsd.so.0 libgfortran.so.5 liblapack.so.3 libmd.so.0 libopencv_core.so.406 libopencv_imgproc.so.406 libpolyclipping.so.22 libquadmath.so.0 libtbb.so.12 libxcb.so.1; do cp -L /lib/x86_64-linux-gnu/$l /tmp/ocr8src/sys/; done
  tar -C /tmp/ocr8src/sys -cf - . | xz -T1 -6 > /tmp/ocr8src/sys.tar.xz
fi
# The lead's result.txt of the last call is kept (copied to /tmp/ocr8results/ with the time) before the folder is replaced.
mkdir -p /tmp/ocr8results; [ -e "$P/result.txt" ] && cp "$P/result.txt" /tmp/ocr8results/result-$(date -u +%H%M).txt
rm -rf "$P" $S; mkdir -p "$P" $S/bin $S/lib $S/main/bin $S/main/lib
cp /work/wt-ocr8/build/bench/gltensor_ocr_bench /work/wt-ocr8/build/tools/gltensor-run $S/bin/
for t in ${EXTRA:-}; do cp $t $S/bin/; done
cp -L /work/wt-ocr8/build/libgltensor.so.0 $S/lib/
cp /work/main/build/bench/gltensor_ocr_bench /work/main/build/tools/gltensor-run $S/main/bin/
cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
# LIB2: a second build of ocr8's library to compare (run4.sh: lib2/, an uncommitted experiment)
if [ -n "${LIB2:-}" ]; then mkdir -p $S/lib2 && cp -L "$LIB2" $S/lib2/libgltensor.so.0; fi
strip $S/bin/* $S/lib/* $S/main/bin/* $S/main/lib/* $S/lib2/* 2>/dev/null || true
git -C /work/wt-ocr8 log -1 --format='%h %s' | cut -c1-100 > $S/COMMIT
git -C /work/wt-ocr8 status --porcelain --untracked-files=no | head -5 >> $S/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
tar -C $S -cf - $(cd $S && ls -d bin lib lib2 main COMMIT 2>/dev/null) | xz -T2 -6 > "$P"/gl.tar.xz
cp /tmp/ocr8src/sys.tar.xz $R/models.tar.xz $R/DejaVuSans.ttf.xz "$P"/
cp $D/${RUN:-run1.sh} "$P"/run.sh
cp $D/common.sh "$P"/
du -sh "$P"
