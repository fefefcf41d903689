#!/usr/bin/env bash
# ocr9's last GPU pack (the lead's limit then: 15 MiB): ocr7's make_pack.sh's layout, recompressed (BCJ x86
# for the binaries, 4-byte literals for the models' floats), without gltensor-run and the
# tests, the two libraries next to each other in gl.tar.xz (xz -9: the second one costs its difference), a
# third bench binary ($STRIPS: c29737f's, the threshold's row strips, with the head's library), and the
# models without the angle classifier (the page runs with --cls 0; the bench loads a classifier all the same,
# so run4.sh gives it ONNX's test_relu model, cls.onnx here).
set -eu
P=/work/main/gpu-multi/ocr9; S=/tmp/ocr9stage4; R=/tmp/ocr5src
mkdir -p /tmp/ocr9results; [ -e "$P/result.txt" ] && cp "$P/result.txt" /tmp/ocr9results/result-$(date -u +%H%M).txt
rm -rf "$P" $S; mkdir -p "$P" $S/bin $S/lib $S/main/bin $S/main/lib $S/m
cp /work/wt-ocr9/build/bench/gltensor_ocr_bench $S/bin/; cp "$STRIPS" $S/bin/gltensor_ocr_bench_strips
cp -L /work/wt-ocr9/build/libgltensor.so.0 $S/lib/; cp -L /work/main/build/libgltensor.so.0 $S/main/lib/
cp /work/main/build/bench/gltensor_ocr_bench $S/main/bin/
strip $S/bin/* $S/lib/* $S/main/bin/* $S/main/lib/*
git -C /work/wt-ocr9 log -1 --format='%h %s' | cut -c1-100 > $S/COMMIT
git -C /work/main log -1 --format='%h %s' | cut -c1-100 > $S/main/COMMIT
tar -C $S -cf - COMMIT main/COMMIT lib/libgltensor.so.0 main/lib/libgltensor.so.0 bin main/bin | xz -T1 --x86 --lzma2=preset=9 > "$P"/gl.tar.xz
tar -C $S/m -xJf $R/models.tar.xz
tar -C $S/m -cf - ch_PP-OCRv4_rec_infer.onnx ch_PP-OCRv4_det_infer.onnx ppocr_keys_v1.txt | xz -T1 --lzma2=preset=6,pb=2,lp=2,lc=0 > "$P"/models.tar.xz
cp /usr/share/libonnx-testdata/data/node/test_relu/model.onnx "$P"/cls.onnx
[ -e /tmp/ocr9-sys.tar.xz ] || xz -dc /tmp/ocr7src/sys.tar.xz | xz -T1 --x86 --lzma2=preset=9 > /tmp/ocr9-sys.tar.xz
cp /tmp/ocr9-sys.tar.xz "$P"/sys.tar.xz; cp $R/DejaVuSans.ttf.xz "$P"/
cp /work/wt-ocr9/scripts/packs/ocr9/run4.sh "$P"/run.sh
cp /work/wt-ocr9/scripts/packs/ocr7/common.sh "$P"/
du -b "$P" | tail -1
