#!/usr/bin/env bash
# Makes suite41a's GPU pack: P=/work/main/gpu-multi/suite41a bash scripts/packs/suite41a/make_pack.sh
# builds.tar.xz: bin/ (this worktree's release test_attention, test_attention_tiled, test_attention_head_dims, test_nn,
# gltensor_attention_bench) + lib/ (its libgltensor.so.0), stripped, unpacked by run.sh into /tmp; run.sh, COMMIT.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite41a}
T=$(mktemp -d); [ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite41a/result-last.txt"
rm -rf "$P"; mkdir -p "$P" "$T/bin" "$T/lib"
for t in test_attention test_attention_tiled test_attention_head_dims test_nn; do cp "$WT/build/tests/$t" "$T/bin/"; done
cp "$WT/build/bench/gltensor_attention_bench" "$T/bin/"; cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
strip "$T"/bin/* "$T"/lib/*
tar -C "$T" -cf - bin lib | xz -T1 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "$WT/scripts/packs/suite41a/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
