#!/usr/bin/env bash
# suite41b's GPU pack (issue 21): the tests this branch narrows on software rasterizers only
# (test_iconv_implicit's GpuTilings requantizing at form 8 alone, test_iconv_warp's LargeSums reference
# at 4 x 4, test_quant's WordsGemvShapes in one format per shape and problem) run whole on the GPU, as
# ctest runs them (GLTENSOR_CHECK_LOOPS=1; test_iconv_implicit with GLTENSOR_IMATMUL_BLOCKS=1), on GLES,
# then GpuTilings, LargeSums and WordsGemvShapes on desktop GL. The lead runs it as
# `bash gpu-multi/suite41b/run.sh` ($H the pack); at most 135 s (per-run timeouts, a hard end).
# F=FILTER replaces every gtest filter (a short local try on llvmpipe).
set -u
W=/tmp/suite41bw; rm -rf "$W"; mkdir -p "$W"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
summary() { grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^\[  SKIPPED \]|Failure|seed|tests ran" "$1" | head -30; }
run() {  # NAME LIMIT BINARY FILTER [VAR=value ...]
  local name=$1 lim=$2 bin=$3 filt=${F:-$4}; shift 4
  [ $SECONDS -ge 125 ] && { step "$name: skipped (hard end)"; return; }
  [ $((SECONDS + lim)) -gt 133 ] && lim=$((133 - SECONDS))
  step "$name ($*)"
  (cd "$W" && env "$@" timeout $lim "$H/bin/$bin" --gtest_brief=1 --gtest_filter="$filt" > "$W/$name.txt" 2>&1); echo "rc $?"
  summary "$W/$name.txt"
}
loops=GLTENSOR_CHECK_LOOPS=1
# (window 1: test_iconv_warp whole ran past 30 s, cold, on GLES; implicit 29 s, quant 19 s)
run warp 55 test_iconv_warp '*' GLTENSOR_API=gles $loops
run implicit 40 test_iconv_implicit '*' GLTENSOR_API=gles $loops GLTENSOR_IMATMUL_BLOCKS=1
run quant 25 test_quant '*' GLTENSOR_API=gles $loops
run implicit-gl 12 test_iconv_implicit 'IConvImplicit.GpuTilings' GLTENSOR_API=gl $loops GLTENSOR_IMATMUL_BLOCKS=1
run warp-gl 8 test_iconv_warp 'IConvWarp.LargeSums' GLTENSOR_API=gl $loops
run quant-gl 6 test_quant 'Quant.WordsGemvShapes' GLTENSOR_API=gl $loops
step "done"
