#!/bin/bash
# lsan_repro.sh DIR BUILD: cold caches in DIR; test_conv_direct, then 3 s later test_conv_ssbo_limit beside it (the CI's
# ctest -j2 neighbours), both of the sanitizer build BUILD; ASAN_OPTIONS / LSAN_OPTIONS from the environment; the
# ssbo_limit output without ASan's (un)poisoning lines in DIR/ssbo.txt (README.md).
d=$1; b=$2
rm -rf $d; mkdir -p $d/xdg $d/gc $d/mesa; cd $d
export XDG_CACHE_HOME=$PWD/xdg GLTENSOR_CACHE_DIR=$PWD/gc MESA_SHADER_CACHE_DIR=$PWD/mesa
$b/tests/test_conv_direct --gtest_brief=1 > direct.txt 2>&1 &
p=$!
sleep ${DELAY:-3}
$b/tests/test_conv_ssbo_limit --gtest_brief=1 2>&1 | grep -av "poisoning" > ssbo.txt; echo "ssbo rc=${PIPESTATUS[0]}"
grep -a "Tracer\|fatal\|Leak\|PASSED\|FAILED" ssbo.txt
wait $p; echo "direct rc=$?"
