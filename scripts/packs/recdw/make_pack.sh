#!/usr/bin/env bash
# Usage: [RUN=run1.sh] bash scripts/packs/recdw/make_pack.sh [FOLDER]; then touch FOLDER/READY.
# recdw's GPU pack (default /work/main/gpu-multi/recdw): recdw's binaries and library
# (/work/wt-recdw/build: gltensor_ocr_bench, gltensor-run, test_conv_direct, test_plans) and main's
# (/work/main/build: gltensor_ocr_bench, gltensor-run, libgltensor.so.0; the page's pipeline is in the
# bench binary, so each side runs its own), the rounded models and DejaVuSans as rec3's staging
# ($R, as ocr5-ocr7 packed them), OpenCV's libraries, torch_dw.py (PyTorch's depthwise reference).
set -eu
P=${1:-/work/main/gpu-multi/recdw}
R=${R:-/tmp/ocr5src}
WT=/work/wt-recdw
D=$(cd "$(dirname "$0")" && pwd)
S=/tmp/recdwstage
for f in models.tar.xz DejaVuSans.ttf.xz; do [ -e $R/$f ] || { echo "missing $R/$f"; exit 1; }; done
if [ ! -e /tmp/recdwsrc/sys.tar.xz ]; then
  rm -rf /tmp/recdwsrc/sys && mkdir -p /tmp/recdwsrc/sys
  for l in libX11.so.6 libXau.so.6 libXdmcp.so.6 libblas.so.3 libbsd.so.0 libgfortran.so.5 liblapack.so.3 libmd.so.0 libopencv_core.so.406 libopencv_imgproc.so.406 libpolyclipping.so.22 libquadmath.so.0 libtbb.so.12 libxcb.so.1; do cp -L /lib/x86_64-linux-gnu/$l /tmp/recdwsrc/sys/; done
  tar -C /tmp/recdwsrc/sys -cf - . | xz -T1 -6 > /tmp/recdwsrc/sys.tar.xz
fi
mkdir -p /tmp/recdwresults; [ -e "$P/result.txt" ] && cp "$P/result.txt" /tmp/recdwresults/result-$(date -u +%H%M).txt
rm -rf "$P" $S; mkdir -p "$P" $S/bin $S/lib $S/main/bin $S/main/lib
cp $WT/build/bench/gltensor_ocr_bench $WT/build/tools/gltensor-run $WT/build/tests/test_conv_direct $S/bin/
[ -e $WT/build/tests/test_plans ] && cp $WT/build/tests/test_plans $S/bin/
cp -L $WT/build/libgltensor.so.0 $S/lib/
cp /work/main/build/bench/gltensor_ocr_bench /work/main/build/tools/gltensor-run $S/main/bin/
cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
strip $S/bin/* $S/lib/* $S/main/bin/* $S/main/lib/* 2>/dev/null || true
git -C $WT log -1 --format='%h %s' | cut -c1-100 > $S/COMMIT
git -C $WT status --porcelain --untracked-files=no | head -5 >> $S/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
tar -C $S -cf - bin lib main COMMIT | xz -T2 -6 > "$P"/gl.tar.xz
cp /tmp/recdwsrc/sys.tar.xz $R/models.tar.xz $R/DejaVuSans.ttf.xz "$P"/
cp $D/${RUN:-run1.sh} "$P"/run.sh
cp $D/common.sh $D/torch_dw.py $D/../ocr6/torch_pointwise.py "$P"/
du -sh "$P"
