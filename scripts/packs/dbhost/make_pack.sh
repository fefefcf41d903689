#!/usr/bin/env bash
# Usage: bash scripts/packs/dbhost/make_pack.sh [FOLDER]; then touch FOLDER/READY.
# dbhost's GPU pack (default /work/main/gpu-multi/dbhost): this branch's gltensor_ocr_bench and
# library (/work/wt-dbhost/build) and the same bench built with main's DB code (fd995a6's
# demos/ocr_det/det.cpp and det.hpp swapped in for one build, then restored), stripped; run.sh.
set -eu
P=${1:-/work/main/gpu-multi/dbhost}
B=/work/wt-dbhost/build
D=$(cd "$(dirname "$0")" && pwd)
cd /work/wt-dbhost
git diff --quiet HEAD -- demos/ocr_det || { echo "demos/ocr_det has uncommitted changes"; exit 1; }
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib"
git show fd995a6:demos/ocr_det/det.cpp > demos/ocr_det/det.cpp
git show fd995a6:demos/ocr_det/det.hpp > demos/ocr_det/det.hpp
cmake --build $B -j2 --target gltensor_ocr_bench > /dev/null
cp $B/bench/gltensor_ocr_bench "$P/bin/gltensor_ocr_bench_main_db"
git checkout -q demos/ocr_det/det.cpp demos/ocr_det/det.hpp
cmake --build $B -j2 --target gltensor_ocr_bench > /dev/null
cp $B/bench/gltensor_ocr_bench "$P/bin/"
cp -L $B/libgltensor.so.0 "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
git log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
cp $D/run.sh "$P/"
du -sh "$P"
