#!/usr/bin/env bash
# Makes rt39's GPU pack: P=/work/main/gpu-multi/rt39 bash scripts/packs/rt39/make_pack.sh
# builds.tar.xz: bin/ (this worktree's release test_pool, test_interop_state, test_model_host_io, gltensor_io_bench;
# stripped), lib/ (this worktree's libgltensor.so.0) and main/lib (/work/main/build's libgltensor.so.0), unpacked by
# run.sh into /tmp; torch_upload.py and compare_upload.py (upload38's), run.sh, COMMIT and main/COMMIT. About 5 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/rt39}; MAIN=${MAIN:-/work/main}; S=$WT/scripts/packs/rt39
T=$(mktemp -d); rm -rf "$P"; mkdir -p "$P/main" "$T/bin" "$T/lib" "$T/main/lib"
cp "$WT/build/bench/gltensor_io_bench" "$T/bin/"
for t in test_pool test_interop_state test_model_host_io; do cp "$WT/build/tests/$t" "$T/bin/"; done
cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/lib/*
tar -C "$T" -cf - bin lib main | xz -T2 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "$S/run.sh" "$S/../upload38/torch_upload.py" "$S/../upload38/compare_upload.py" "$P/"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
