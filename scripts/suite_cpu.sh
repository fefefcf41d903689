#!/usr/bin/env bash
# The CPU time of each ctest entry, run alone and cold: one entry at a time (-j1, in ctest -N's
# order, fixtures' setup entries not added: their order runs them first), the entries' program cache
# emptied once at the start, Mesa's shader cache off (which also turns off program binaries, so
# that no entry reuses another's compiled programs: each entry's figure is its cold cost). CPU =
# user + system of the entry's processes (ctest's waited-for children: the test, node, xvfb-run...).
# Usage: scripts/suite_cpu.sh BUILD_DIR OUT.tsv [regex of entries]
# OUT.tsv: name, CPU s, user s, wall s, ctest's status, result; OUT.tsv.log: the last entry's output.
set -u
B=$1
OUT=$2
RE=${3:-.}
export MESA_SHADER_CACHE_DISABLE=true
rm -rf "$B/tests/program-cache"
: >"$OUT"
for t in $(ctest --test-dir "$B" -N | sed -n 's/^ *Test *#[0-9]*: //p' | grep -E "$RE"); do
  /usr/bin/time -f "%U %S %e" -o "$OUT.time" ctest --test-dir "$B" -R "^${t}\$" -FA '.*' --timeout 1800 >"$OUT.log" 2>&1
  rc=$?
  read -r u s e < <(tail -1 "$OUT.time")
  res=$(grep -Eo 'Passed|\*\*\*Failed|Not Run|\*\*\*Skipped|Timeout' "$OUT.log" | head -1)
  printf '%s\t%.1f\t%.1f\t%.1f\t%s\t%s\n' "$t" "$(echo "$u + $s" | bc)" "$u" "$e" "$rc" "$res" | tee -a "$OUT"
done
