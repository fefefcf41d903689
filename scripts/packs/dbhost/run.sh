#!/usr/bin/env bash
# dbhost's GPU pack (issue 21): the 960 x 960 page with the DB post-processing of main (fd995a6's
# demos/ocr_det/det.cpp, built with this branch's bench and library: bin/gltensor_ocr_bench_main_db)
# and of this branch (bin/gltensor_ocr_bench) alternating, 3 processes each. The first process writes
# the page's det map on this GPU (--db-map) and every process reads it for its hot DB timing and
# prints the hash of its boxes there (corners and scores, bit for bit): all six must agree. OpenCV's
# libraries, the rounded models and the font are ocr7's pack ($H/../ocr7, left in place by the lead).
set -u
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
O=$H/../ocr7
W=/tmp/dbhost-run; rm -rf $W; mkdir -p $W/sys $W/models
step unpack
for f in sys.tar.xz models.tar.xz DejaVuSans.ttf.xz; do [ -s $O/$f ] || { echo "missing $O/$f"; exit 1; }; done
timeout 60 tar -C $W/sys -xJf $O/sys.tar.xz && timeout 60 tar -C $W/models -xJf $O/models.tar.xz || exit 1
F=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
mkdir -p ${F%/*} && [ -s $F ] || { xz -dc $O/DejaVuSans.ttf.xz > $F.tmp && mv $F.tmp $F; }
export LD_LIBRARY_PATH=$H/lib:$W/sys:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
lscpu | grep -E "^Model name|^CPU\(s\)" | tr -s ' '
echo "commit: $(cat $H/COMMIT)"
PAGE="--models $W/models --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text --db-map $W/page.map"
filt() { grep -E "^\| (OCR|det|DB|rec|total)|^medians|^DB|rror|^line" | cut -c1-300; }
step "the page, alternating main's DB code / dbhost's, 3 rounds: gltensor_ocr_bench $PAGE"
for r in 1 2 3; do
  for who in main_db dbhost; do
    echo "-- $who (round $r)"
    B=$H/bin/gltensor_ocr_bench; [ $who = main_db ] && B=$H/bin/gltensor_ocr_bench_main_db
    timeout 30 $B $PAGE 2>&1 | filt > $W/page.txt
    grep -v "^line" $W/page.txt; grep "^line" $W/page.txt > $W/text-$who
    [ -e $W/text-main_db ] && echo "text: main_db and $who $(cmp -s $W/text-main_db $W/text-$who && echo same || echo DIFFER)"
  done
done
cat $W/text-dbhost
step done
