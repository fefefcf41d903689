#!/usr/bin/env bash
# Makes suite41d's GPU pack: P=/work/main/gpu-multi/suite41d bash scripts/packs/suite41d/make_pack.sh
# bin/ (this worktree's release test_reduce, test_pool and test_model_signal_ops, stripped), lib/ (its libgltensor.so.0,
# stripped), run.sh, COMMIT. A few MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite41d}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite41d/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib"
cp "$WT/build/tests/test_reduce" "$WT/build/tests/test_pool" "$WT/build/tests/test_model_signal_ops" "$P/bin/"; cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/suite41d/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
