#!/bin/bash
# Mesa 25.0.7 of bookworm-backports beside the system's Mesa 22.3.6, never installed: the packages fetched with a
# private source list (the system's lists and sources untouched), unpacked with dpkg -x into $M/root, and $M/env.sh
# that puts them first (mesa25c's way, README.md). Then the check that Mesa 25's libgallium is the one loaded.
# M: the folder (default /work/m25j); BUILD: a build whose tools/gltensor-info to run (default /work/main/build).
set -eu
M=${M:-/work/m25j}; BUILD=${BUILD:-/work/main/build}
mkdir -p $M/apt/lists/partial $M/apt/cache/archives/partial $M/debs $M/root
echo "deb http://deb.debian.org/debian bookworm-backports main" > $M/apt/sources.list
A="-o Dir::Etc::SourceList=$M/apt/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$M/apt/lists -o Dir::Cache=$M/apt/cache"
apt-get $A update
cd $M/debs
apt-get $A download libegl-mesa0 libglx-mesa0 libgl1-mesa-dri libgbm1 mesa-libgallium libdrm2 libdrm-common libdrm-amdgpu1 libdrm-intel1
for f in *.deb; do dpkg -x $f $M/root; done
L=$M/root/usr/lib/x86_64-linux-gnu
cat > $M/egl_vendor.json <<JSON
{
    "file_format_version" : "1.0.0",
    "ICD" : {
        "library_path" : "$L/libEGL_mesa.so.0"
    }
}
JSON
cat > $M/env.sh <<ENV
# Mesa 25.0.7 (bookworm-backports, dpkg -x into $M/root) ahead of the system's Mesa 22: source this.
M25ROOT=$L
export LD_LIBRARY_PATH=\$M25ROOT\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export __EGL_VENDOR_LIBRARY_FILENAMES=$M/egl_vendor.json
export LIBGL_DRIVERS_PATH=\$M25ROOT/dri
export GBM_BACKENDS_PATH=\$M25ROOT/gbm
ENV
# The check: the renderer's version, and the libraries the dynamic loader initialised (Mesa 25's libgallium, its EGL).
(source $M/env.sh; MESA_SHADER_CACHE_DISABLE=true LD_DEBUG=libs $BUILD/tools/gltensor-info > $M/info25.txt 2> $M/ld25.txt)
grep -E "Device|version|self-check" $M/info25.txt
grep -o "calling init: [^ ]*\(gallium\|EGL_mesa\|dri\)[^ ]*" $M/ld25.txt | sort -u
