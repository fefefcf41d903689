#!/usr/bin/env bash
# big14 window 2 (issues 21, 22): the near-limit tests on the H100 after window 1 (the QDQ warp case
# with 512 output channels: 256 gave 60 tiles, which a GPU's plan splits, so the warp path never ran);
# the four suites' binaries (test_conv_direct, test_random, test_matmul whole; test_iconv_warp's
# IConvWarp.*), the new tests again under GLTENSOR_CHECK_LOOPS=1; each kernel broken on purpose
# through GLTENSOR_GLSL_DIR (scripts/sabotage.sh on the pack's copies of the kernels).
set -x
B=$H/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
run() { local bin=$1 f=$2; shift 2; timeout 90 $B/$bin --gtest_brief=1 --gtest_filter="$f" "$@" 2>&1 | tail -25; echo "rc=${PIPESTATUS[0]}"; }
run test_iconv_warp 'IConvWarp.NearThe*'
run test_conv_direct '*'
run test_random '*'
run test_matmul '*'
run test_iconv_warp 'IConvWarp.*:-IConvWarp.NearThe*'
date -u
echo "== GLTENSOR_CHECK_LOOPS=1"
T="*NearThe*:*PastTheLoopLimit*:*GridsSplit*:Matmul.SplitKSum*"
export GLTENSOR_CHECK_LOOPS=1
run test_conv_direct "$T"
run test_iconv_warp "$T"
run test_random "$T"
run test_matmul "$T"
unset GLTENSOR_CHECK_LOOPS
date -u
echo "== sabotage (each must say CAUGHT)"
S() { SABOTAGE_TIMEOUT=60 bash $H/sabotage.sh "$@" | head -1; }
S $H/glsl/icol.comp 'k = WORKGROUP_ID.y' 'k = gl_WorkGroupID.y' $B/test_iconv_warp 'IConvWarp.NearTheSsboLimitPastTheLoopLimitOnGpus'
S $H/glsl/matmul_warp.comp 'for (uint t = 0u; LOOP(t < nk); ++t) {' 'for (uint t = 0u; LOOP(t < min(nk, 65528u / uint(BK))); ++t) {' $B/test_iconv_warp 'IConvWarp.NearTheSsboLimitPastTheLoopLimitOnGpus'
S $H/glsl/matmul_sum.comp 'load1(k * u_n + i)' 'load1((k * u_n + i) & 0xffffffu)' $B/test_matmul 'Matmul.SplitKSumNearTheSsboLimitAndPastTheLoopLimitOnGpus'
S $H/glsl/matmul_sum.comp 'LOOP(k < u_nsplit)' 'LOOP(k < min(u_nsplit, 65535u))' $B/test_matmul 'Matmul.SplitKSumNearTheSsboLimitAndPastTheLoopLimitOnGpus'
S $H/glsl/random.comp 'uvec4 r = philox(uvec4(e, 0u, offset.x, offset.y), u_seed);' 'uvec4 r = philox(uvec4(e & 0xffffffu, 0u, offset.x, offset.y), u_seed);' $B/test_random 'Random.DropoutNearTheSsboLimitOnGpus'
S $H/glsl/conv_direct.comp '  for (int j = 0; j < RR; ++j) {' '  for (int j = 0; j < min(RR, 65535); ++j) {' $B/test_conv_direct 'ConvDirect.QuadsFormPastTheLoopLimit'
S $H/glsl/conv_direct.comp '    uint e = ybase + uint(oh * u_OW);' '    uint e = (ybase + uint(oh * u_OW)) & 0xffffffu;' $B/test_conv_direct 'ConvDirect.QuadsFormNearTheSsboLimitOnGpus'
date -u
