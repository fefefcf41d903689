# The knobs of this window's pack (sourced by run.sh with $H set; the environment overrides them).
# A38_PROF: GPU-time variants, "case-regex:KNOB,KNOB"; A38_E2E: replayed end-to-end variants, same form.
# GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants (glob: the lanes kernel reading K / V from memory, no
# shared tiles; nopf: no register prefetch; unroll / NAMEu: NVIDIA's unroll pragma).
LN=GLTENSOR_ATTENTION_LANES=1,GLTENSOR_ATTENTION_LANE_WIDTH
lw() { echo "$LN=$1,GLTENSOR_ATTENTION_LANE_KEYS=$2"; }
if [ -z "${A38_PROF:-}" ]; then
  A38_PROF="8x300:GLTENSOR_ATTENTION_SPLIT=0 8x300:GLTENSOR_GLSL_DIR=$H/gv/unroll"
  for gk in "8 8" "8 4" "16 2" "32 1" "16 1" "4 8" "16 4" "8 2"; do A38_PROF="$A38_PROF .:$(lw $gk)"; done
  for gv in glob unroll nopf globu nopfu; do
    for gk in "8 4" "16 2" "32 1" "8 8"; do A38_PROF="$A38_PROF 8x300:$(lw $gk),GLTENSOR_GLSL_DIR=$H/gv/$gv"; done
  done
  for gv in glob unroll globu; do
    for gk in "16 8" "32 2" "16 2"; do A38_PROF="$A38_PROF svtr:$(lw $gk),GLTENSOR_GLSL_DIR=$H/gv/$gv"; done
  done
  A38_PROF="$A38_PROF 8x300:GLTENSOR_ATTENTION_BQ=32 8x300:GLTENSOR_ATTENTION_BQ=32,GLTENSOR_ATTENTION_SPLIT=1
    8x300:GLTENSOR_ATTENTION_BQ=32,GLTENSOR_ATTENTION_SPLIT=2 8x300:GLTENSOR_ATTENTION_BQ=32,GLTENSOR_ATTENTION_SPLIT=4
    8x300:GLTENSOR_ATTENTION_SPLIT=1"
fi
: "${A38_E2E:=8x300:$(lw 16 2),GLTENSOR_GLSL_DIR=$H/gv/glob 8x300:$(lw 16 2) svtr:$(lw 32 1)}"
: "${A38_TEST_LIST:=test_plans:PlanAttention* test_nn:Attention.* test_attention:* test_model_attention:* test_kv_cache:*}"
