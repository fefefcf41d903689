#!/bin/bash
# ctest entries on Mesa 25.0.7 (unpacked into /work/m25j by setup.sh), ctest's own command and environment, one at a time,
# nice 19, Mesa's shader cache off: mesa25f's entries.sh with this run's folders. M25 (the run folder, default /work/m25j)
# and WT (the worktree, default /work/wt-mesa25j). With M22 first: the same on the system's Mesa 22.3.6 (results22.tsv,
# program cache pc22). With B:NAME first (the brief's step 3): the same on Mesa 25 in branches.sh's build of helper NAME's
# branch (/work/m25j/src-NAME), results in results-NAME.tsv, logs in run-NAME, the run's program cache shared.
RUN=run
if [ "${1#B:}" != "$1" ]; then
  b=${1#B:}; shift; WT=/work/m25j/src-$b; RUN=run-$b
  source /work/m25j/env.sh; R=results-$b.tsv; PC=pc-entries
elif [ "$1" = M22 ]; then
  shift; R=results22.tsv; PC=pc22
else
  source /work/m25j/env.sh; R=results.tsv; PC=pc-entries
fi
export GLTENSOR_MODEL_CACHE=/work/main/.cache GLTENSOR_REQUIRE_MODELS=1 MESA_SHADER_CACHE_DISABLE=true NICE=19 CAP=${CAP:-1500}
M25=${M25:-/work/m25j}
cd ${WT:-/work/wt-mesa25j} && exec python3 scripts/ctest_entries_cpu.py build $M25/$RUN${PC#pc-entries} $M25/$PC $M25/$R -- "$@"
