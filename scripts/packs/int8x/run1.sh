#!/usr/bin/env bash
# int8x window 1 (branch int8x, commit in $H/COMMIT): why the integer GEMM's 8 x 8 forms are slow and what
# GLSL offers for integer products on the H100. (1) the GL extensions (GLES and desktop GL contexts);
# (2) the driver's assembly of the integer GEMM's forms (each form's programs in its own program cache,
# summarized by nvasm.py: instructions, opcodes, local memory; the texts to $OUT/int8x-asm.tar.xz);
# (3) the integer GEMM alone against f32 matmul (--gemm), the 3x3 QDQ layers and the wide chain under
# the forms, with the one-block-per-launch forms (no int32 totals); (4) the four QDQ nets int8 / f32 and
# the wide net's GPU time per node.
set -x
cat $H/COMMIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
B=$H/bin
ok() { echo "--- t=${SECONDS}s"; [ $SECONDS -lt 215 ]; }
echo "=== extensions (GLES, then desktop GL)"
for api in gles gl; do
  GLTENSOR_API=$api timeout 20 $B/gltensor-info --extensions > /tmp/int8x-ext-$api.txt 2>&1
  grep -E "^Device|version|GLSL|self-check" /tmp/int8x-ext-$api.txt | head -6
  echo "$api: $(grep -c '^    GL_' /tmp/int8x-ext-$api.txt) extensions; integer / dot / shader5 / 16-bit / 8-bit ones:"
  grep -E '^    GL_' /tmp/int8x-ext-$api.txt | grep -iE 'int|dot|shader5|16|8bit|arith|spirv|gpu_program|NV_shader' | tr -s ' \n' ' '
  echo
done
cat /tmp/int8x-ext-gl.txt > $OUT/int8x-ext.txt
echo "=== assembly per form (one program cache each)"
for f in default implicit-8x8-regs implicit-8x8t128-regs im2col-8x8-blocks im2col-8x8t128-blocks; do
  ok || break
  GLTENSOR_CACHE_DIR=/tmp/int8x-asm/$f timeout 40 $B/gltensor_iconv_forms_bench --size 112 --rounds 1 --min-ms 1 --forms $f > /dev/null 2>&1
done
timeout 30 python3 $H/nvasm.py /tmp/int8x-asm/* --dump /tmp/int8x-asmtxt 2>&1 | head -c 20000
(cd /tmp && tar cJf $OUT/int8x-asm.tar.xz int8x-asmtxt 2>/dev/null; ls -la $OUT)
export GLTENSOR_CACHE_DIR=/tmp/int8x-cache
echo "=== the integer GEMM alone, the layers, the wide chain"
G=default,im2col-4x4-regs,im2col-8x8-regs,implicit-8x8t128-regs,im2col-4x8-blocks,im2col-8x8-blocks,im2col-8x8t128-blocks
ok && timeout 60 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms $G --chain-only --gemm 2>&1 | grep -v "^|---"
F=default,implicit-8x8-regs,implicit-8x8t128-regs,im2col-4x8-regs,im2col-8x8-blocks,im2col-8x8t128-blocks
ok && timeout 60 $B/gltensor_iconv_forms_bench --size 112 --rounds 3 --min-ms 15 --forms $F --chain 10 2>&1 | grep -v "^|---"
echo "=== the QDQ nets"
M="--qdq --runs 20 --gpu-time"
for i in 1 2; do
  ok && timeout 30 $B/gltensor_model_bench $M 2>&1 | grep -v "^|---"
done
echo "=== per node, the wide net at 112"
ok && timeout 40 $B/gltensor_model_bench --qdq-loads 1 --runs 10 2>&1 | grep -v "^|---" | tail -60
echo "--- end t=${SECONDS}s"
