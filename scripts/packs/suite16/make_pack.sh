#!/usr/bin/env bash
# Makes suite16's GPU pack: P=/work/main/gpu-multi/suite16 bash scripts/packs/suite16/make_pack.sh
# bin/ (this worktree's release test_matmul and test_plans, stripped), lib/ (its libgltensor.so.0), run.sh,
# COMMIT. No kernel changed on the branch (a planner setting, default unchanged, and the tests), so no
# speed A/B: the changed test programs on GLES and desktop GL.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite16}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite16/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib"
cp "$WT/build/tests/test_matmul" "$WT/build/tests/test_plans" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/suite16/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
