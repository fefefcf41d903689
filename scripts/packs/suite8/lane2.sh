#!/bin/bash
B=$1; OUT=$2; : > $OUT
while IFS='|' read -r name env args; do
  bin=${name%_check_loops}
  d1=$(mktemp -d) d2=$(mktemp -d) d3=$(mktemp -d)
  eval "env $env XDG_CACHE_HOME=$d1 GLTENSOR_CACHE_DIR=$d2 MESA_SHADER_CACHE_DIR=$d3 GLTENSOR_REQUIRE_MODELS=1 GLTENSOR_MODEL_CACHE=/work/main/.cache /usr/bin/time -f '%U %S %e' -o $OUT.time $B/$bin $args" > $OUT.$name.log 2>&1 < /dev/null
  rc=$?
  read -r u s e < <(tail -1 $OUT.time)
  printf '%s\t%.1f\t%.1f\t%s\t%s\n' $name $(echo "$u + $s" | bc) $e $rc $(cut -d' ' -f1 /proc/loadavg) >> $OUT
  rm -rf $d1 $d2 $d3
done < ${ENTRIES:-/tmp/suite8/entries.txt}
