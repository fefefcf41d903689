#!/usr/bin/env bash
# Compiles gltensor's f16-math kernels (Precision::f16_allowed, docs/precision.md) offline with
# glslangValidator (Debian: glslang-tools), on a machine whose device has no fp16 arithmetic
# (llvmpipe): gltensor_precision_error --compile-check runs every f16 kernel form with
# GLTENSOR_PRECISION=f16-force and GLTENSOR_DUMP_SOURCE (the driver rejects them; their source is
# printed first), once per matmul kernel variant; each dumped source using F16_MATH / F16V is
# validated. glslang 12 does not know GL_NV_gpu_shader5, so the check swaps in
# GL_EXT_shader_explicit_arithmetic_types_float16 (the same float16_t / f16vecN types and
# pack/unpackFloat2x16), and turns common.glsl's F_NAN / F_INF constants into macros (glslang does
# not fold uintBitsToFloat in a const initializer). The real compile is the GPU driver's (run test_precision there).
#   scripts/check_f16_glsl.sh [build-dir]
set -euo pipefail
build=${1:-build}
tool=$build/bench/gltensor_precision_error
command -v glslangValidator >/dev/null || { echo "glslangValidator not found (apt-get install glslang-tools)"; exit 2; }
[ -x "$tool" ] || { echo "$tool not built (-DGLTENSOR_BUILD_BENCH=ON, target gltensor_precision_error)"; exit 2; }
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "sources kept in $work" || trap 'rm -rf "$work"' EXIT
for kernel in "" tile64 tile128 vec4 vec4s vec4u vec4su; do
  GLTENSOR_CACHE_DIR=off GLTENSOR_PRECISION=f16-force GLTENSOR_DUMP_SOURCE=.comp GLTENSOR_MATMUL_KERNEL=$kernel \
    "$tool" --compile-check >"$work/log-$kernel.txt" 2>"$work/dump-$kernel.txt" || true
done
# Split the dumps ("==== file" then the source) into one file per distinct source.
python3 - "$work" <<'PY'
import glob, hashlib, os, sys
work = sys.argv[1]
seen = set()
for dump in glob.glob(os.path.join(work, "dump-*.txt")):
    text = open(dump).read()
    for part in text.split("==== ")[1:]:
        name, _, src = part.partition("\n")
        if "F16_MATH" not in src and "F16V" not in src:
            continue
        src = src.replace("#extension GL_NV_gpu_shader5 : require",
                          "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require")
        # glslang does not fold uintBitsToFloat in const initializers (GPU drivers do).
        for c in ("F_NAN", "F_INF"):
            src = src.replace(f"const float {c} = uintBitsToFloat(", f"#define {c} uintBitsToFloat(")
        src = "\n".join(l[:-1] if l.startswith("#define F_") and l.endswith(";") else l for l in src.split("\n"))
        # The dump holds only the source up to the driver's messages.
        src = src.split("\ngltensor")[0]
        h = hashlib.sha1(src.encode()).hexdigest()[:10]
        if h in seen:
            continue
        seen.add(h)
        open(os.path.join(work, f"{name.strip().replace('.comp', '')}-{h}.comp"), "w").write(src)
PY
n=0 bad=0
for f in "$work"/*.comp; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  if ! out=$(glslangValidator -S comp "$f" 2>&1); then
    bad=$((bad + 1))
    echo "== $(basename "$f")"; echo "$out" | head -20
  fi
done
echo "f16 kernel sources checked: $n, failed: $bad"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
