#!/usr/bin/env bash
# The CPU time of each ctest entry, run alone and cold: one entry at a time (-j1, in ctest -N's
# order, fixtures' setup entries not added: their order runs them first). CPU = user + system of the
# entry's processes (ctest's waited-for children: the test, node, xvfb-run...).
# Two kinds of cold (SUITE_CPU_CACHE):
#   off (default): the entries' program cache emptied once at the start, Mesa's shader cache off
#     (which also turns off program binaries, so that no entry reuses another's compiled programs);
#   empty: before each entry the program cache emptied and Mesa's shader cache and XDG_CACHE_HOME
#     in new empty folders, Mesa's cache on (a fresh CI machine's first run of that entry).
# Usage: scripts/suite_cpu.sh BUILD_DIR OUT.tsv [regex of entries] [VAR=value ... for every entry]
# OUT.tsv: name, CPU s, user s, wall s, ctest's status, result, load average, the VAR=values;
# OUT.tsv.log: the last entry's output.
set -u
B=$1
OUT=$2
RE=${3:-.}
shift $(($# < 3 ? $# : 3))
CACHE=${SUITE_CPU_CACHE:-off}
[ "$CACHE" = off ] && export MESA_SHADER_CACHE_DISABLE=true
rm -rf "$B/tests/program-cache"
: >"$OUT"
for t in $(ctest --test-dir "$B" -N | sed -n 's/^ *Test *#[0-9]*: //p' | grep -E "$RE"); do
  dirs=()
  if [ "$CACHE" = empty ]; then
    rm -rf "$B/tests/program-cache"
    dirs=("$(mktemp -d)" "$(mktemp -d)")
    set -- MESA_SHADER_CACHE_DIR="${dirs[0]}" XDG_CACHE_HOME="${dirs[1]}" "${@}"
  fi
  env "$@" /usr/bin/time -f "%U %S %e" -o "$OUT.time" ctest --test-dir "$B" -R "^${t}\$" -FA '.*' --timeout 1800 >"$OUT.log" 2>&1
  rc=$?
  [ "$CACHE" = empty ] && { rm -rf "${dirs[@]}"; shift 2; }
  read -r u s e < <(tail -1 "$OUT.time")
  res=$(grep -Eo 'Passed|\*\*\*Failed|Not Run|\*\*\*Skipped|Timeout' "$OUT.log" | head -1)
  printf '%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\n' "$t" "$(echo "$u + $s" | bc)" "$u" "$e" "$rc" "$res" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$*" | tee -a "$OUT"
done
