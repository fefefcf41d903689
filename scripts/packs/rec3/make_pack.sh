#!/usr/bin/env bash
# Usage: [RUN=run1.sh|run2.sh|run3.sh] bash scripts/packs/rec3/make_pack.sh [FOLDER]; then touch FOLDER/READY.
# Builds rec3's GPU pack (default /work/main/gpu-multi/rec3) from /work/wt-rec3/build and /work/main/build.
set -eu
P=${1:-/work/main/gpu-multi/rec3}
R=${R:-/tmp/rec3src}  # staging: the compressed libraries and models are kept here between packs
D=$(cd "$(dirname "$0")" && pwd)
S=/tmp/rec3stage
rm -rf "$P" $S; mkdir -p "$P"/lib $S/bin $S/lib $S/main/bin $S/main/lib
cp /work/wt-rec3/build/bench/gltensor_ocr_bench /work/wt-rec3/build/tools/gltensor-run /work/wt-rec3/build/bench/gltensor_bench /work/wt-rec3/build/tests/test_reduce /work/wt-rec3/build/tests/test_conv_direct /work/wt-rec3/build/tests/test_matmul $S/bin/
cp -L /work/wt-rec3/build/libgltensor.so.0 $S/lib/
cp /work/main/build/bench/gltensor_ocr_bench /work/main/build/tools/gltensor-run $S/main/bin/
cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
strip $S/bin/* $S/lib/* $S/main/bin/* $S/main/lib/*
git -C /work/wt-rec3 log -1 --format='%h %s' | cut -c1-100 > "$P"/COMMIT
git -C /work/wt-rec3 status --porcelain --untracked-files=no | head -5 >> "$P"/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
if [ ! -e $R/sys.tar.xz ]; then
  rm -rf $R/sys && mkdir -p $R/sys
  for l in libX11.so.6 libXau.so.6 libXdmcp.so.6 libblas.so.3 libbsd.so.0 libgfortran.so.5 liblapack.so.3 libmd.so.0 libopencv_core.so.406 libopencv_imgproc.so.406 libpolyclipping.so.22 libquadmath.so.0 libtbb.so.12 libxcb.so.1; do cp -L /lib/x86_64-linux-gnu/$l $R/sys/; done
  tar -C $R/sys -cf - . | xz -T1 -6 > $R/sys.tar.xz
fi
if [ ! -e $R/models.tar.xz ]; then
  rm -rf $R/models && mkdir -p $R/models
  C=/work/main/.cache/models/ocr
  python3 $D/round_onnx.py $C/ch_PP-OCRv4_rec_infer.onnx $R/models/ch_PP-OCRv4_rec_infer.onnx 11
  python3 $D/round_onnx.py $C/ch_PP-OCRv4_det_infer.onnx $R/models/ch_PP-OCRv4_det_infer.onnx 11
  cp $C/ch_ppocr_mobile_v2.0_cls_infer.onnx $C/ppocr_keys_v1.txt $R/models/
  tar -C $R/models -cf - . | xz -T1 -6 > $R/models.tar.xz
fi
[ -e $R/DejaVuSans.ttf.xz ] || xz -T1 -6 -c /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf > $R/DejaVuSans.ttf.xz
# the binaries xz-compressed too (20 MiB limit): run.sh unpacks bin/ lib/ main/ into /tmp/rec3-run/gl
tar -C $S -cf - bin lib main | xz -T1 -6 > "$P"/gl.tar.xz
cp $R/sys.tar.xz $R/models.tar.xz $R/DejaVuSans.ttf.xz "$P"/
cp $D/${RUN:-run3.sh} "$P"/run.sh; cp $D/common.sh "$P"/  # run.sh sources common.sh
if [ -n "${EXP:-}" ]; then mkdir -p "$P"/exp && cp "$EXP"/*.comp "$P"/exp/; fi  # run2: EXP=folder of the experimental conv_direct.comp
du -sh "$P"
