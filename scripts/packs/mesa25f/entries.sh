#!/bin/bash
# ctest entries on Mesa 25.0.7 (mesa25c's unpacked debs), ctest's own command and environment, one at a time, nice 19, Mesa's shader cache off.
# With M22 first: the same on the system's Mesa 22.3.6 (results22.tsv, program cache pc22).
if [ "$1" = M22 ]; then
  shift; R=results22.tsv; PC=pc22
else
  source /work/m25c/env.sh; R=results.tsv; PC=pc-entries
fi
export GLTENSOR_MODEL_CACHE=/work/main/.cache GLTENSOR_REQUIRE_MODELS=1 MESA_SHADER_CACHE_DISABLE=true NICE=19 CAP=${CAP:-1500}
cd /work/wt-mesa25f && exec python3 scripts/ctest_entries_cpu.py build /work/m25f/run${PC#pc-entries} /work/m25f/$PC /work/m25f/$R -- "$@"
