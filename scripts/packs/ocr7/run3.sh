#!/usr/bin/env bash
# ocr7's third GPU pack (issue 21): why the page's DB stage (host) takes 1.2 ms in one process and
# 2.5 in another: per process, each stage's median over the runs and DB post-processing alone, hot
# (200 calls on the same map), plain, pinned to one CPU (taskset), and with OpenCV's threads off.
# It crashed in every process (segmentation fault before the first row): another pack had left
# the font file empty on the machine (the unpacking then tested `[ -e ]`; common.sh tests `[ -s ]`).
. "$H/common.sh"  # the shared unpacking (moved there after the runs; the same steps)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr7 commit: $(cat "$H/COMMIT")"
lscpu | grep -E "^CPU\(s\)|Thread|Core|Socket|NUMA|Model name|L2|L3"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0"
step "the page, 12 processes (ocr7's bench): gltensor_ocr_bench $PAGE; per process: the totals, the stages' medians (det pre, det, DB, cls, rec pre, rec, decode, total), DB alone hot"
for v in plain pin1 nocvthreads plain pin1 nocvthreads plain pin1 nocvthreads plain plain plain; do
  case $v in plain) PRE="";; pin1) PRE="taskset -c 5";; nocvthreads) PRE="env OPENCV_FOR_THREADS_NUM=1";; esac
  LD_LIBRARY_PATH=$MINE timeout 30 $PRE $BMINE/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
  echo "-- $v: $(grep -E '^\| OCR' $W/p.txt | sed -e 's/.*the runs/the runs/' | cut -c1-150) | $(grep -E '^medians' $W/p.txt | sed -e 's/.*images://; s/ (the stages.*//') | $(grep -E '^DB boxes alone' $W/p.txt | sed -e 's/.*map)://') $(grep -E 'rror' $W/p.txt | head -2)"
done
step done
