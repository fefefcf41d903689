# Sourced by ocr8's run*.sh on the GPU machine ($H: the pack's folder): unpacks the pack into
# $W = /tmp/ocr8-run (binaries and libraries in $H/gl, OpenCV's libraries, the rounded models in
# $M), installs the font where it is missing or empty (another pack once left it empty), and sets
# MINE / MAIN / LIB2 (library paths) and BMINE / BMAIN (binaries); step prints a timed header.
set -u
T0=$(date +%s)
HP=$H
step() { echo; echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/ocr8-run; rm -rf $W; mkdir -p $W/sys $W/cache/models/ocr $W/gl
step unpack
tar -C $W/gl -xJf "$HP/gl.tar.xz" && tar -C $W/sys -xJf "$HP/sys.tar.xz" && tar -C $W/cache/models/ocr -xJf "$HP/models.tar.xz" || exit 1
H=$W/gl
F=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
mkdir -p ${F%/*} && [ -s $F ] || { xz -dc "$HP/DejaVuSans.ttf.xz" > $F.tmp && mv $F.tmp $F; }
MINE="$H/lib:$W/sys:${LD_LIBRARY_PATH:-}"
MAIN="$H/main/lib:$W/sys:${LD_LIBRARY_PATH:-}"
LIB2="$H/lib2:$W/sys:${LD_LIBRARY_PATH:-}"
BMINE=$H/bin; BMAIN=$H/main/bin
M=$W/cache/models/ocr
