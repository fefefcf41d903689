# shellcheck shell=bash
# rec3's GPU packs' common part, sourced by run1.sh, run2.sh and run3.sh (make_pack.sh copies it
# next to the pack's run.sh). Needs $H (the pack's folder), $OUT. Unpacks bin/ lib/ main/, the
# system libraries and the models into /tmp/rec3-run; then $H is the unpacked build, $HP the pack.
set -u
T0=$(date +%s)
HP=$H
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/rec3-run; rm -rf $W; mkdir -p $W/sys $W/models $W/gl
step unpack
tar -C $W/gl -xJf "$HP/gl.tar.xz" && tar -C $W/sys -xJf "$HP/sys.tar.xz" && tar -C $W/models -xJf "$HP/models.tar.xz" || exit 1
cp "$HP/COMMIT" $W/gl/COMMIT; H=$W/gl  # bin/ lib/ main/ unpacked
mkdir -p /usr/share/fonts/truetype/dejavu && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
  xz -dc "$HP/DejaVuSans.ttf.xz" > /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
MINE="$H/lib:$W/sys:${LD_LIBRARY_PATH:-}"
MAIN="$H/main/lib:$W/sys:${LD_LIBRARY_PATH:-}"
M=$W/models
REC="$M/ch_PP-OCRv4_rec_infer.onnx"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "rec3 commit: $(cat "$H/COMMIT"); main commit: $(cat "$H/main/COMMIT")"

# The binaries' folder of MAIN (main's build) or MINE (rec3's).
bin_of() { if [ "$1" = MAIN ]; then echo "$H/main/bin"; else echo "$H/bin"; fi; }
# page WHO SECONDS [OPTION...]: the OCR page (ocr960, GPU images, no ORT, every line in one
# recognizer batch, det 640, replayed, no cls) in WHO's build, with the extra options (default
# --runs 20 --rec-call-cost 6000); output unfiltered.
page() {
  local who=$1 t=$2; shift 2
  [ $# -gt 0 ] || set -- --runs 20 --rec-call-cost 6000
  LD_LIBRARY_PATH=${!who} timeout "$t" "$(bin_of "$who")/gltensor_ocr_bench" --models "$M" --ort none --only ocr960 \
    --images gpu --rec-batch 0 --det-limit 640 --replay 1 --cls 0 --out $W/ocr "$@" 2>&1
}
# rec WHO SECONDS SHAPE [OPTION...]: the recognizer alone at input shape SHAPE in WHO's build
# (gltensor-run; e.g. --bench 100 --replay), output unfiltered.
rec() {
  local who=$1 t=$2 shape=$3; shift 3
  LD_LIBRARY_PATH=${!who} timeout "$t" "$(bin_of "$who")/gltensor-run" "$REC" --shape x=$shape "$@" 2>&1
}
