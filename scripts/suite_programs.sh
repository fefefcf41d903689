#!/usr/bin/env bash
# A cold ctest pass and a warm one of the same build, every process's programs logged by
# scripts/program_log.c (LD_PRELOAD), then scripts/suite_programs.py's account of the cold pass's CPU:
# compile per program (cold less warm first dispatch), duplicate compiles across entries (races,
# GALLIVM_PERF modes, rejected program binaries), fixed cost per process, the schedule's tail.
# Cold as the clean-clone CI's pass: the entries' program cache emptied, Mesa's shader cache and
# XDG_CACHE_HOME in new empty folders shared by all entries, no ctest timings of earlier runs
# (Testing/Temporary/CTestCostData.txt moved aside, put back after). The warm pass reuses those caches.
# Usage: scripts/suite_programs.sh BUILD_DIR OUT_DIR [ctest arguments, default -j2]
# OUT_DIR/{cold,warm}/: log.tsv, src/ (each program's source), ctest.log, time.txt (user, system,
# wall s of ctest and its children), load.txt (load average every 5 s); OUT_DIR/report.txt.
set -euo pipefail
B=$(cd "$1" && pwd)
OUT=$2
shift 2
[ $# -gt 0 ] || set -- -j2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cc -O2 -shared -fPIC -o "$OUT/program_log.so" "$here/program_log.c" -ldl -lEGL
cache=$(ctest --test-dir "$B" --show-only=json-v1 | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tests"]:
    for p in t.get("properties", []):
        if p["name"] == "ENVIRONMENT":
            for e in p["value"]:
                if e.startswith("GLTENSOR_CACHE_DIR="):
                    print(e.split("=", 1)[1]); sys.exit()')
costs=$B/Testing/Temporary/CTestCostData.txt
[ -f "$costs" ] && mv "$costs" "$OUT/CTestCostData.before"
rm -rf "${cache:?}" "$OUT/cold" "$OUT/warm" "$OUT/mesa" "$OUT/xdg"
mkdir -p "$OUT/mesa" "$OUT/xdg"
for pass in cold warm; do
  D=$OUT/$pass
  mkdir -p "$D/src"
  rm -f "$costs"
  (while sleep 5; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"; done) >"$D/load.txt" &
  lp=$!
  rc=0
  PROGRAM_LOG=$D LD_PRELOAD=$OUT/program_log.so MESA_SHADER_CACHE_DIR=$OUT/mesa XDG_CACHE_HOME=$OUT/xdg \
    /usr/bin/time -f "%U %S %e" -o "$D/time.txt" ctest --test-dir "$B" "$@" >"$D/ctest.log" 2>&1 || rc=$?
  kill $lp
  echo "ctest exit $rc" >>"$D/time.txt"
  echo "$pass: $(head -1 "$D/time.txt") (user, system, wall s); $(grep -E 'tests passed|tests failed' "$D/ctest.log")"
done
rm -f "$costs"
[ -f "$OUT/CTestCostData.before" ] && mv "$OUT/CTestCostData.before" "$costs"
python3 "$here/suite_programs.py" "$OUT/cold" "$OUT/warm" --glsl "$here/../glsl" | tee "$OUT/report.txt"
