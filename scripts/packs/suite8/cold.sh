#!/bin/bash
# usage: cold.sh OUTPREFIX BIN [args...]; env passes through
o=$1; shift
d1=$(mktemp -d) d2=$(mktemp -d) d3=$(mktemp -d)
SUITE8_TRACE=1 XDG_CACHE_HOME=$d1 GLTENSOR_CACHE_DIR=$d2 MESA_SHADER_CACHE_DIR=$d3 GLTENSOR_REQUIRE_MODELS=1 GLTENSOR_MODEL_CACHE=/work/main/.cache \
  /usr/bin/time -f "%U %S %e" -o $o.time "$@" > $o.log 2>&1
echo "rc=$? $(cat $o.time) load=$(cut -d' ' -f1 /proc/loadavg)"
rm -rf $d1 $d2 $d3
