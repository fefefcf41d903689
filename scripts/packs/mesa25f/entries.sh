#!/bin/bash
# ctest entries on Mesa 25.0.7 (mesa25c's unpacked debs), ctest's own command and environment, one at a time, nice 19, Mesa's shader cache off.
# M25 (the run folder, default /work/m25f) and WT (the worktree, default /work/wt-mesa25f) from the environment
# (mesa25g: M25=/work/m25g WT=/work/wt-mesa25g). With M22 first: the same on the system's Mesa 22.3.6 (results22.tsv, program cache pc22).
if [ "$1" = M22 ]; then
  shift; R=results22.tsv; PC=pc22
else
  source /work/m25c/env.sh; R=results.tsv; PC=pc-entries
fi
export GLTENSOR_MODEL_CACHE=/work/main/.cache GLTENSOR_REQUIRE_MODELS=1 MESA_SHADER_CACHE_DISABLE=true NICE=19 CAP=${CAP:-1500}
M25=${M25:-/work/m25f}
cd ${WT:-/work/wt-mesa25f} && exec python3 scripts/ctest_entries_cpu.py build $M25/run${PC#pc-entries} $M25/$PC $M25/$R -- "$@"
