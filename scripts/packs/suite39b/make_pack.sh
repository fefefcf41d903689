#!/usr/bin/env bash
# Makes suite39b's GPU pack: P=/work/main/gpu-multi/suite39b [B=build] GLTENSOR_MODEL_CACHE=/work/main/.cache
# bash scripts/packs/suite39b/make_pack.sh
# bin/ (this worktree's release test_ocr_models, stripped, xz: its BatchedRecognitionMatchesLineByLine now
# recognizes the shared run's boxes through OcrPipeline::recognize_lines), lib/ (its libgltensor.so.0, xz),
# models/ (the OCR models, xz), run.sh, COMMIT. No kernel changed on the branch.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/suite39b}; B=$WT/${B:-build}
M=${GLTENSOR_MODEL_CACHE:-/work/main/.cache}/models/ocr
[ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/suite39b/result-last.txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/models/models/ocr"
for t in test_ocr_models; do
  strip -o "$P/bin/$t" "$B/tests/$t"
done
strip -o "$P/lib/libgltensor.so.0" "$B/libgltensor.so.0"
cp "$M"/*.onnx "$M"/ppocr_keys_v1.txt "$P/models/models/ocr/"
xz -T2 -6 "$P"/bin/* "$P"/lib/* "$P"/models/models/ocr/*
cp "$WT/scripts/packs/suite39b/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
