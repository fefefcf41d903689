#!/bin/bash
# rt39's Mesa 25 re-check (bench/RESULTS.md, rt39's section): main's release build (/work/main/build, read-only: its
# CTestTestfile.cmake files copied to $M/ct, the binaries run where they are) on Mesa 25.0.7's llvmpipe
# (/work/m25j/env.sh, mesa25j's unpacked Mesa), ctest's command, filter, ENVIRONMENT and pass rules per entry
# (scripts/ctest_entries_cpu.py), nice 19, one entry at a time, an empty program cache at the start shared by the
# entries in turn, Mesa's shader cache off. Entries: the lines of $M/queue.txt in order; a line STOP, or the file
# $M/stop, ends the run (the deadline: no entry is started after it).
# Usage: M=/tmp/rt39/m25 WT=/work/wt-rt39 bash scripts/packs/rt39/m25q.sh
M=${M:-/tmp/rt39/m25}; WT=${WT:-/work/wt-rt39}; BUILD=${BUILD:-/work/main/build}
mkdir -p "$M/ct" "$M/run" "$M/pc"
(cd "$BUILD" && find . -maxdepth 2 -name CTestTestfile.cmake) | while read -r f; do
  mkdir -p "$M/ct/$(dirname "$f")"; cp "$BUILD/$f" "$M/ct/$f"
done
source /work/m25j/env.sh
export GLTENSOR_MODEL_CACHE=/work/main/.cache GLTENSOR_REQUIRE_MODELS=1 MESA_SHADER_CACHE_DISABLE=true NICE=19 CAP=${CAP:-900}
n=0
while true; do
  n=$((n + 1))
  line=$(sed -n "${n}p" "$M/queue.txt")
  [ -z "$line" ] || [ "$line" = STOP ] || [ -e "$M/stop" ] && break
  echo "$(date -u +%T) start $line (load $(cut -d' ' -f1 /proc/loadavg))" >> "$M/q.out"
  python3 "$WT/scripts/ctest_entries_cpu.py" "$M/ct" "$M/run" "$M/pc" "$M/results.tsv" -- "$line" >> "$M/q.out" 2>&1
done
echo "$(date -u +%T) end" >> "$M/q.out"
