#!/bin/bash
# The brief's step 3: each other helper's branch tip as a plain source tree (git archive: no commit, no worktree, the
# helpers' worktrees untouched) in /work/m25j/src-NAME, a release build there (ccache, nice 19) of only the targets
# its changed entries run. BRANCHES: "name:target,target ..." (default below). Log: /work/m25j/branches.out.
set -u
export CCACHE_DIR=/work/.ccache CCACHE_BASEDIR=/work CCACHE_NOHASHDIR=1
BRANCHES=${BRANCHES:-"io37:test_pool,gltensor-run lstm37:test_rnn mel37:test_model_signal_ops,test_nn_plans,test_kernel_variants suite17:test_plans,test_conv_direct attn37:test_nn,test_plans"}
cd /work/wt-mesa25j
for bt in $BRANCHES; do
  b=${bt%%:*}; targets=${bt#*:}; c=$(git rev-parse --short $b); d=/work/m25j/src-$b
  echo "$(date -u +%T) $b $c: $targets" >> /work/m25j/branches.out
  rm -rf $d; mkdir -p $d; git archive $c | tar -x -C $d; echo $c > $d/COMMIT
  (cd $d && nice -n 19 cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGLTENSOR_BUILD_BENCH=ON \
     -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache > build.log 2>&1 &&
   nice -n 19 cmake --build build -j2 --target ${targets//,/ } >> build.log 2>&1)
  echo "$(date -u +%T) $b built: exit $?" >> /work/m25j/branches.out
done
