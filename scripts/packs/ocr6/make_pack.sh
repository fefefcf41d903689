#!/usr/bin/env bash
# Usage: [RUN=run1.sh|run2.sh] [EXTRA=files] [TESTS=names] [LIB2=lib] bash scripts/packs/ocr6/make_pack.sh [FOLDER]; then touch FOLDER/READY.
# ocr6's GPU pack (default /work/main/gpu-multi/ocr6): ocr6's binaries (/work/wt-ocr6/build; the
# benches link libgltensor.so.0, so main's library (/work/main/build) runs under the same binaries
# through LD_LIBRARY_PATH), the rounded models and OpenCV's libraries as ocr5's pack had them
# (models.tar.xz and DejaVuSans.ttf.xz from scripts/packs/rec3/make_pack.sh's staging, $R).
set -eu
P=${1:-/work/main/gpu-multi/ocr6}
R=${R:-/tmp/ocr5src}
D=$(cd "$(dirname "$0")" && pwd)
S=/tmp/ocr6stage
for f in models.tar.xz DejaVuSans.ttf.xz; do [ -e $R/$f ] || { echo "missing $R/$f"; exit 1; }; done
if [ ! -e /tmp/ocr6src/sys.tar.xz ]; then
  rm -rf /tmp/ocr6src/sys && mkdir -p /tmp/ocr6src/sys
  for l in libX11.so.6 libXau.so.6 libXdmcp.so.6 libblas.so.3 libbsd.so.0 libgfortran.so.5 liblapack.so.3 libmd.so.0 libopencv_core.so.406 libopencv_imgproc.so.406 libpolyclipping.so.22 libquadmath.so.0 libtbb.so.12 libxcb.so.1; do cp -L /lib/x86_64-linux-gnu/$l /tmp/ocr6src/sys/; done
  tar -C /tmp/ocr6src/sys -cf - . | xz -T1 -6 > /tmp/ocr6src/sys.tar.xz
fi
rm -rf "$P" $S; mkdir -p "$P" $S/bin $S/lib $S/main/lib
cp /work/wt-ocr6/build/bench/gltensor_ocr_bench /work/wt-ocr6/build/tools/gltensor-run /work/wt-ocr6/build/bench/gltensor_kernel_lab $S/bin/
# EXTRA: more files for bin/ (scratch tools, e.g. /tmp/ocr6db/dbb and its prob.bin)
for t in ${EXTRA:-}; do cp $t $S/bin/; done
for t in ${TESTS:-}; do cp /work/wt-ocr6/build/tests/$t $S/bin/; done
cp -L /work/wt-ocr6/build/libgltensor.so.0 $S/lib/
cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
# LIB2: a second build of ocr6's library to compare (run2.sh: lib2/)
if [ -n "${LIB2:-}" ]; then mkdir -p $S/lib2 && cp -L "$LIB2" $S/lib2/libgltensor.so.0; fi
strip $S/bin/* $S/lib/* $S/main/lib/* $S/lib2/* 2>/dev/null || true
git -C /work/wt-ocr6 log -1 --format='%h %s' | cut -c1-100 > $S/COMMIT
git -C /work/wt-ocr6 status --porcelain --untracked-files=no | head -5 >> $S/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
tar -C $S -cf - $(cd $S && ls -d bin lib lib2 main COMMIT 2>/dev/null) | xz -T2 -6 > "$P"/gl.tar.xz
cp /tmp/ocr6src/sys.tar.xz $R/models.tar.xz $R/DejaVuSans.ttf.xz $D/torch_pointwise.py "$P"/
cp $D/${RUN:-run1.sh} "$P"/run.sh
du -sh "$P"
