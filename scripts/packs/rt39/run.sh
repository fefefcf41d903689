#!/usr/bin/env bash
# rt39's GPU pack (issue 21; review38's R11: Device::synchronize() after an upload that no dispatch follows). The lead
# runs it as `ONLY=rt39 bash gpu-multi/run-all.sh` ($H the pack of make_pack.sh; builds.tar.xz unpacked into $W/b:
# bin + lib this branch's, main/lib main's). In one call:
#   1. Pool.SynchronizeLeavesNoUploadRunning (public API + GL: an application's fence issued between from_host and
#      synchronize() must have signaled after it), the branch's test_pool binary with main's library, then with the
#      branch's; each upload way (UPLOAD_WAYS: the default ring, GLTENSOR_UPLOAD_PIECES=8, GLTENSOR_STAGING=copy,
#      glBufferSubData by GLTENSOR_UPLOAD_DIRECT), GLES and desktop GL, REPEAT repetitions each
#   2. the tests: test_pool (the new Pool.AnUploadWithNoDispatchAfterItIsPendingUntilSynchronize with it),
#      test_interop_state and test_model_host_io, GLES and desktop GL, the branch's library
#   3. upload timings (gltensor_io_bench --upload-sizes: from_bytes, then + synchronize), main's library and the
#      branch's, GLES, with PyTorch's pageable `.cuda()` + synchronize of the same sizes (torch_upload.py) as the
#      reference, compare_upload.py's ratios: main's synchronize returned before the copies below 4 MiB
set -u
W=/tmp/rt39w; PY=${PY:-python3}; RUNS=${RUNS:-200}; REPEAT=${REPEAT:-3}
rm -rf "$W"; mkdir -p "$W/log" "$W/b"
tar -C "$W/b" -xJf "$H/builds.tar.xz"
B=$W/b; LL=${LD_LIBRARY_PATH:-}; BR=$B/lib:$LL; MN=$B/main/lib:$LL
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"

step "1. Pool.SynchronizeLeavesNoUploadRunning: main's library, then the branch's ($REPEAT repetitions per way)"
WAYS=${UPLOAD_WAYS:-"ring ring-p8 staging-copy direct"}
for lib in main branch; do
  l=$BR; [ $lib = main ] && l=$MN
  for api in gles gl; do
    for way in $WAYS; do
      envs=""
      case $way in
        ring-p8) envs="GLTENSOR_UPLOAD_PIECES=8" ;;
        staging-copy) envs="GLTENSOR_STAGING=copy" ;;
        direct) envs="GLTENSOR_UPLOAD_DIRECT=999999999999" ;;
      esac
      [ "$SECONDS" -gt 50 ] && { echo "$lib $api $way: no time left"; continue; }
      # shellcheck disable=SC2086
      out=$(cd "$W" && env $envs GLTENSOR_API=$api LD_LIBRARY_PATH=$l timeout 15 "$B/bin/test_pool" \
        --gtest_filter=Pool.SynchronizeLeavesNoUploadRunning --gtest_repeat="$REPEAT" 2>&1)
      echo "$lib $api $way: passed $(grep -c '^\[       OK \]' <<< "$out") failed $(grep -cE "^\[  FAILED  \] Pool.*\([0-9]+ ms\)" <<< "$out") of $REPEAT;" \
        "$(grep -m3 -E 'has not signaled|floats$|Failure' <<< "$out" | tr '\n' ' ' | cut -c1-300)"
    done
  done
done

step "2. tests, the branch's library: test_pool, test_interop_state, test_model_host_io on GLES and desktop GL"
for t in test_pool test_interop_state test_model_host_io; do
  for api in gles gl; do
    [ "$SECONDS" -gt 95 ] && { echo "$t $api: no time left"; continue; }
    echo "$t $api: $(cd "$W" && GLTENSOR_API=$api LD_LIBRARY_PATH=$BR timeout 20 "$B/bin/$t" --gtest_brief=1 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|seed|rror" | head -8 | tr '\n' ' ')"
  done
done

step "3. uploads (from_bytes, then + synchronize), $RUNS per size, GLES: PyTorch, main's library, the branch's"
SIZES=${SIZES:-64,256,1024,4096,16384}
[ "$SECONDS" -lt 105 ] && { timeout 20 "$PY" "$H/torch_upload.py" --runs "$RUNS" --sizes "$SIZES" > "$W/torch.txt" 2>&1 || echo "torch: rc $?"; }
grep -E "^torch" "$W/torch.txt"
for lib in main branch; do
  l=$BR; [ $lib = main ] && l=$MN
  [ "$SECONDS" -gt 125 ] && { echo "$lib: no time left"; continue; }
  GLTENSOR_API=gles LD_LIBRARY_PATH=$l timeout 10 "$B/bin/gltensor_io_bench" --runs "$RUNS" --sizes "" --upload-sizes "$SIZES" \
    > "$W/log/io-$lib.txt" 2>&1 || echo "$lib: rc $?"
  echo "--- $lib"; grep -E "^upload|wrong|rror" "$W/log/io-$lib.txt"
done
"$PY" "$H/compare_upload.py" "$W/torch.txt" "main=$W/log/io-main.txt" "branch=$W/log/io-branch.txt"
step done
