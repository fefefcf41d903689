#!/usr/bin/env bash
# Makes suite17's GPU pack: P=/work/main/gpu-multi/suite17 [B=build] bash scripts/packs/suite17/make_pack.sh
# bin/ (this worktree's release test_plans and test_conv_direct, stripped), lib/ (its libgltensor.so.0),
# run.sh, COMMIT. No kernel changed on the branch (the ubo layout's positions per invocation on software
# rasterizers), so no speed A/B: the changed programs on GLES and desktop GL.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite17}; B=$WT/${B:-build}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite17/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib"
cp "$B/tests/test_plans" "$B/tests/test_conv_direct" "$P/bin/"
cp -L "$B/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/suite17/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
