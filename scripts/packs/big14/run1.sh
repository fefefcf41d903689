#!/usr/bin/env bash
# big14 (issues 21, 22): last session's kernels near the device limits on the H100 (near 128 MiB and
# past 65535), plain and under GLTENSOR_CHECK_LOOPS; sabotage of each through GLTENSOR_GLSL_DIR; the
# FC1 rule (kSplitShortMaxTiles) on a conv forward GEMM, on / off (libexp: exp.patch's knob).
set -x
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
T="IConvWarp.*:Random.Dropout*:Matmul.SplitKSum*:ConvDirect.Quads*:ConvDirect.LanesQuadsFormDepthwise:ConvDirect.UboWhole*"
run() { local bin=$1 f=$2; shift 2; timeout 60 $B/$bin --gtest_brief=1 --gtest_filter="$f" "$@" 2>&1 | tail -25; echo "rc=${PIPESTATUS[0]}"; }
for cl in 0 1; do
  echo "== GLTENSOR_CHECK_LOOPS=$cl"
  export GLTENSOR_CHECK_LOOPS=$cl
  run test_conv_direct "$T"
  run test_iconv_warp "$T"
  run test_random "$T"
  run test_matmul "$T"
  T="*NearThe*:*PastTheLoopLimit*:*GridsSplit*:Matmul.SplitKSum*"  # the loop checks: the new tests and the sum's
done
unset GLTENSOR_CHECK_LOOPS
date -u
echo "== sabotage (each must say CAUGHT)"
S() { SABOTAGE_TIMEOUT=60 bash $H/sabotage.sh "$@" | head -1; }
S $H/glsl/conv_direct.comp '  for (int j = 0; j < RR; ++j) {' '  for (int j = 0; j < min(RR, 65535); ++j) {' $B/test_conv_direct 'ConvDirect.QuadsFormPastTheLoopLimit'
S $H/glsl/conv_direct.comp '    uint e = ybase + uint(oh * u_OW);' '    uint e = (ybase + uint(oh * u_OW)) & 0xffffffu;' $B/test_conv_direct 'ConvDirect.QuadsFormNearTheSsboLimitOnGpus'
S $H/glsl/icol.comp 'k = WORKGROUP_ID.y' 'k = gl_WorkGroupID.y' $B/test_iconv_warp 'IConvWarp.NearTheSsboLimitPastTheLoopLimitOnGpus'
S $H/glsl/matmul_warp.comp 'for (uint t = 0u; LOOP(t < nk); ++t) {' 'for (uint t = 0u; LOOP(t < min(nk, 65528u / uint(BK))); ++t) {' $B/test_iconv_warp 'IConvWarp.NearTheSsboLimitPastTheLoopLimitOnGpus'
S $H/glsl/random.comp 'uvec4 r = philox(uvec4(e, 0u, offset.x, offset.y), u_seed);' 'uvec4 r = philox(uvec4(e & 0xffffffu, 0u, offset.x, offset.y), u_seed);' $B/test_random 'Random.DropoutNearTheSsboLimitOnGpus'
S $H/glsl/random.comp '  uint e = GLOBAL_ID_1D;' '  uint e = gl_GlobalInvocationID.x;' $B/test_random 'Random.DropoutNearTheSsboLimitOnGpus'
S $H/glsl/matmul_sum.comp 'LOOP(k < u_nsplit)' 'LOOP(k < min(u_nsplit, 65535u))' $B/test_matmul 'Matmul.SplitKSumNearTheSsboLimitAndPastTheLoopLimitOnGpus'
S $H/glsl/matmul_sum.comp '  uint i = GLOBAL_ID_1D;' '  uint i = GLOBAL_ID.x;' $B/test_matmul 'Matmul.SplitKSumNearTheSsboLimitAndPastTheLoopLimitOnGpus'
date -u
echo "== FC1 rule on a conv forward GEMM: rule on (planner) / off (BIG14_NO_SPLIT_SHORT=1, exp build), 3 rounds"
bench() { LD_LIBRARY_PATH=$H/libexp:$LD_LIBRARY_PATH timeout 30 $B/gltensor_bench --benchmark_filter=BM_conv2d_few_tiles --benchmark_min_time=0.5 2>&1 | grep BM_; }
for r in 1 2 3; do
  echo "-- round $r on"; bench
  echo "-- round $r off"; BIG14_NO_SPLIT_SHORT=1 bench
done
prof() { LD_LIBRARY_PATH=$H/libexp:$LD_LIBRARY_PATH GLTENSOR_PROFILE=1 timeout 30 $B/gltensor_bench --benchmark_filter='BM_conv2d_few_tiles/1/32' --benchmark_min_time=0.2 2>&1 | grep -v "^\s*$" | head -30; }
echo "-- profile on"; prof
echo "-- profile off"; BIG14_NO_SPLIT_SHORT=1 prof
date -u
