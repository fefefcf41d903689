#!/bin/bash
# lsan_pair.sh DIR BUILD: lsan_repro.sh's pair, test_conv_direct stopped once test_conv_ssbo_limit ends (its output in DIR/ssbo.txt);
# one line: ASAN_OPTIONS, ssbo's exit code, passed, the tracer's crash if any. The repetitions of RESULTS (rt39):
#   ASAN_OPTIONS=intercept_tls_get_addr=0 nice bash lsan_pair.sh DIR BUILD   (and with no ASAN_OPTIONS: the control)
d=$1; b=$2
rm -rf $d; mkdir -p $d/xdg $d/gc $d/mesa; cd $d
export XDG_CACHE_HOME=$PWD/xdg GLTENSOR_CACHE_DIR=$PWD/gc MESA_SHADER_CACHE_DIR=$PWD/mesa
$b/tests/test_conv_direct --gtest_brief=1 > direct.txt 2>&1 &
p=$!
sleep ${DELAY:-3}
$b/tests/test_conv_ssbo_limit --gtest_brief=1 2>&1 | grep -av "poisoning" > ssbo.txt; rc=${PIPESTATUS[0]}
kill $p; wait $p 2>/dev/null
echo "ASAN_OPTIONS=${ASAN_OPTIONS:-} ssbo rc=$rc $(grep -a -c '^\[  PASSED  \] 1 test' ssbo.txt) passed $(grep -a -m1 -o 'Tracer caught signal 11: addr=0x[0-9a-f]*' ssbo.txt) $(grep -a -m1 'suspected; tls' ssbo.txt)"
