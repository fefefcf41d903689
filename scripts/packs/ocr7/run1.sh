#!/usr/bin/env bash
# ocr7's first GPU pack (issue 21): the recognizer's time per call against lines x width (the cost
# model of the page's cut), the page at several call costs, and the spread between processes (each
# run's total, the GPU's clocks meanwhile, main's build against ocr7's alternating).
. "$H/common.sh"  # the shared unpacking (moved there after the runs; the same steps)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,pstate,temperature.gpu,power.draw --format=csv,noheader
nproc; grep -m1 "model name" /proc/cpuinfo
echo "ocr7 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr"
ROW="--rec-batch 0 --det-limit 640 --replay 1 --cls 0"
filt() { grep -E "^\| (OCR|det|DB|rec|total)|rror|^line|^recgrid" | sed -e 's/; first run.*//' | cut -c1-420; }

step "recgrid (ocr7's bench, 2 processes): gltensor_ocr_bench --only recgrid --runs 30 --rec-grid ..."
GRID="--rec-grid 1x320 --rec-grid 3x320 --rec-grid 6x320 --rec-grid 6x832 --rec-grid 10x832 --rec-grid 16x832 --rec-grid 3x1376 --rec-grid 9x1376 --rec-grid 16x1376 --rec-grid 25x1376 --rec-grid 4x640 --rec-grid 12x640 --rec-grid 10x992 --rec-grid 5x1120"
for r in 1 2; do
  LD_LIBRARY_PATH=$MINE timeout 60 $BMINE/gltensor_ocr_bench --models $M --ort none --only recgrid --runs 30 $GRID --out $W/ocr 2>&1 | grep -E "^\| rec|^recgrid|rror" | cut -c1-200
done

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,temperature.gpu --format=csv,noheader -lms 250 > $W/clocks.txt 2>&1 &
SMI=$!
step "the page, alternating main / ocr7, 3 rounds (main's bench: call cost 6000; ocr7's: call costs 6000 4500 3000 2000 1500 in one process, per-run spread)"
for r in 1 2 3; do
  echo "-- MAIN"
  LD_LIBRARY_PATH=$MAIN timeout 30 $BMAIN/gltensor_ocr_bench $PAGE --runs 20 $ROW --rec-call-cost 6000 --text 2>&1 | filt > $W/page.txt
  grep -v "^line" $W/page.txt; grep "^line" $W/page.txt > $W/text-MAIN
  echo "-- MINE"
  LD_LIBRARY_PATH=$MINE timeout 40 $BMINE/gltensor_ocr_bench $PAGE --runs 20 $ROW --rec-call-cost 6000 --rec-call-cost 4500 --rec-call-cost 3000 --rec-call-cost 2000 --rec-call-cost 1500 --text 2>&1 | filt > $W/page.txt
  grep -v "^line" $W/page.txt; grep "^line" $W/page.txt > $W/text-MINE
  echo "text: main and mine $(cmp -s $W/text-MAIN $W/text-MINE && echo same || echo DIFFER)"
done
[ $r = 3 ] && cat $W/text-MINE

step "spread: ocr7's bench, call cost 6000, 40 runs: 2 processes plain, 2 pinned (taskset -c 2), 2 with GLTENSOR_CUDA_MEMORY=0"
for v in plain pinned nocuda plain pinned nocuda; do
  case $v in plain) PRE="";; pinned) PRE="taskset -c 2";; nocuda) PRE="env GLTENSOR_CUDA_MEMORY=0";; esac
  echo "-- $v: $(LD_LIBRARY_PATH=$MINE timeout 30 $PRE $BMINE/gltensor_ocr_bench $PAGE --runs 40 $ROW --rec-call-cost 6000 2>&1 | grep -E "^\| (OCR|total)|rror" | sed -e 's/.*lines read otherwise than the first row//; s/; first run.*//' | tr '\n' ' ' | cut -c1-300)"
done
kill $SMI 2>/dev/null
echo "GPU clocks during the page runs (sm MHz: count):"; awk -F', ' '{print $2}' $W/clocks.txt | sort | uniq -c | sort -rn | head -8
awk -F', ' '{print $4}' $W/clocks.txt | sort | uniq -c | head -4
step done
