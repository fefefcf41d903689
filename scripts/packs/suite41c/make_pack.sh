#!/usr/bin/env bash
# Makes suite41c's GPU pack: P=/work/main/gpu-multi/suite41c bash scripts/packs/suite41c/make_pack.sh
# bin/ (this worktree's release test_matmul, stripped), lib/ (its libgltensor.so.0, stripped; the library is main's code:
# the branch changes tests only), run.sh, COMMIT. Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite41c}
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib"
cp "$WT/build/tests/test_matmul" "$P/bin/"; cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/suite41c/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
