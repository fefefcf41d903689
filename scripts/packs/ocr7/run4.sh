#!/usr/bin/env bash
# ocr7's fourth GPU pack (issue 21): why the page's DB stage (host) takes 1.2 ms in one process and
# 2.5 in another (run3.sh again, which crashed: the font file that another pack left empty on the
# machine), and the page with the host spinning on the GPU's fences longer before a blocking wait
# (lib2: ocr7's library with client_wait's spin read from GLTENSOR_OCR7_SPIN_US, an uncommitted
# experiment; 100 us as committed), against ocr7's library, alternating: whether a host that stays
# awake through det's and rec's waits runs the DB stage faster and steadier. Per process: the
# totals, each stage's median over the runs, DB post-processing alone, hot (200 calls on one map).
. "$H/common.sh"  # the shared unpacking (moved there after the runs; the same steps)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "ocr7 commit: $(cat "$H/COMMIT")"
lscpu | grep -E "^CPU\(s\)|Core|NUMA node0"
PAGE="--models $M --ort none --only ocr960 --images gpu --out $W/ocr --runs 20 --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --text"
step "the page, alternating: ocr7 (spin 100 us), the same pinned to one CPU (taskset -c 5), with OpenCV's threads off (OPENCV_FOR_THREADS_NUM=1), lib2 spin 100 us, 2000 us, 20000 us; 3 rounds: gltensor_ocr_bench $PAGE; per process: the totals, the stages' medians (det pre, det, DB, cls, rec pre, rec, decode, total), DB alone hot"
for r in 1 2 3; do
  for v in mine pin1 nocv s100 s2000 s20000; do
    PRE=""; S=100; L=$MINE
    case $v in pin1) PRE="taskset -c 5";; nocv) PRE="env OPENCV_FOR_THREADS_NUM=1";; s*) L=$LIB2; S=${v#s};; esac
    GLTENSOR_OCR7_SPIN_US=$S LD_LIBRARY_PATH=$L timeout 30 $PRE $BMINE/gltensor_ocr_bench $PAGE > $W/p.txt 2>&1
    grep "^line" $W/p.txt > $W/text-$v
    echo "-- $v: $(grep -E '^\| OCR' $W/p.txt | sed -e 's/.*the runs/the runs/' | cut -c1-150) | $(grep -E '^medians' $W/p.txt | sed -e 's/.*images://; s/ (the stages.*//') | $(grep -E '^DB boxes alone' $W/p.txt | sed -e 's/.*map)://') | text $(cmp -s $W/text-mine $W/text-$v && echo same || echo DIFFER) $(grep -E 'rror' $W/p.txt | head -2) $(grep -c . $W/p.txt) lines"
  done
done
step done
