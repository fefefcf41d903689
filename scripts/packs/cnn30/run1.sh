#!/usr/bin/env bash
# cnn30 window 1 (issue 21): per-product GPU profile of the CNN step with each product's kernel / split-K forced
# per shape (CNN30_MM="MxNxK:kernel:split;..." in an experiment build: exp = cnn30 at main cdda1eb + ops named per
# product (cnn29's exp-names.patch) + the CNN30_MM knob), and the replayed step main vs exp.
set -x
B=$H/bin
with() { local v=$1; shift; LD_LIBRARY_PATH=$H/libs/$v:$LD_LIBRARY_PATH "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
for r in 1 2; do for v in main exp; do echo "== $v round $r"; with $v timeout 20 $B/gltensor_train_profile --model cnn --steps 200 --replay | sed -n '2p;4p'; done; done
prof() { echo "== CNN30_MM=$1"; CNN30_MM="$1" with exp timeout 25 $B/gltensor_train_profile --model cnn --steps 40 2>&1 | sed -n '/^GPU time/,$p' | cut -c1-100; }
FC1F=128x128x3136 FC1B=128x3136x128 C2F=64x25088x288 C2W=288x64x25088 F2F=128x10x128 F2X=128x128x10 F2W=10x128x128
prof ""
prof "$FC1F:tile64:4;$FC1B:tile64:0;$C2F:warp:0;$C2W:tile64:32;$F2F:reg:0;$F2X:reg:0;$F2W:reg:0"
prof "$FC1F:tile64:8;$FC1B:vec4:0;$C2F:vec4:0;$C2W:tile64:64;$F2F:-:2;$F2X:-:2;$F2W:-:2"
prof "$FC1F:tile64:16;$FC1B:warp:0;$C2F:tile128:0;$C2W:tile64:24;$F2F:tile64:0;$F2X:tile64:0;$F2W:tile64:0"
prof "$FC1F:tile64:32;$FC1B:reg:0;$C2F:vec4s:0;$C2W:tile64:16"
prof "$FC1F:vec4:8;$FC1B:vec4s:0;$C2F:vec4u:0;$C2W:warp:16"
prof "$FC1F:vec4:16;$FC1B:tile64:2;$C2F:warp:2;$C2W:warp:32"
prof "$FC1F:warp:0;$FC1B:-:2;$C2F:tile64:2;$C2W:tile128:16"
prof "$FC1F:warp:4;$FC1B:warp:2;$C2W:tile128:32"
prof "$FC1F:warp:8;$FC1B:vec4:2"
prof "$FC1F:-:4;$FC1B:-:4"
prof "$FC1F:-:8;$FC1B:tile128:0"
prof "$FC1F:tile128:8"
prof "$FC1F:tile64:49"
prof "$F2F:gemv:0;$F2X:gemv:0;$F2W:gemv:0;$FC1F:gemv:0"
prof ""
date -u
