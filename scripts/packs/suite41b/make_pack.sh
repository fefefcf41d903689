#!/usr/bin/env bash
# Makes suite41b's GPU pack: P=/work/main/gpu-multi/suite41b bash scripts/packs/suite41b/make_pack.sh
# bin/ (this worktree's release test_iconv_implicit, test_iconv_warp and test_quant, stripped), lib/ (its
# libgltensor.so.0), run.sh, COMMIT. No kernel or planner changed (tests narrowed on software rasterizers
# only), so no speed A/B: the GPU runs the three binaries whole.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite41b}
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite41b/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib"
for t in test_iconv_implicit test_iconv_warp test_quant; do cp "$WT/build/tests/$t" "$P/bin/"; done
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
strip "$P"/bin/* "$P"/lib/*
cp "$WT/scripts/packs/suite41b/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
