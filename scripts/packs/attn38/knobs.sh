# The knobs of this window's pack (sourced by run.sh with $H set; the environment overrides them).
# A38_PROF: GPU-time variants, "case-regex:KNOB,KNOB"; A38_E2E: replayed end-to-end variants, same form.
# GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants: attention.comp's pv4 (P.V four keys a trip), merge
# (COMBINE's tail loads together), early (the first K / V loads before Q's store), all (the three), allu (all with
# NVIDIA's unroll pragma); the lanes kernel's unroll.
LN=GLTENSOR_ATTENTION_LANES=1,GLTENSOR_ATTENTION_LANE_WIDTH
lw() { echo "$LN=$1,GLTENSOR_ATTENTION_LANE_KEYS=$2"; }
G=GLTENSOR_GLSL_DIR=$H/gv
SP=GLTENSOR_ATTENTION_SPLIT
if [ -z "${A38_PROF:-}" ]; then
  A38_PROF="8x300:$SP=0"
  for v in pv4 merge early all allu; do A38_PROF="$A38_PROF 8x300:$G/$v"; done
  for k in "$SP=0" "$SP=1" "$SP=4" "GLTENSOR_ATTENTION_COMBINE=dispatch" "$SP=1,GLTENSOR_ATTENTION_COMBINE=dispatch" \
    "GLTENSOR_SUBGROUPS=0" "GLTENSOR_ATTENTION_KEYS=32"; do
    A38_PROF="$A38_PROF 8x300:$G/all,$k"
  done
  A38_PROF="$A38_PROF 8x300:GLTENSOR_ATTENTION_COMBINE=dispatch 8x300:GLTENSOR_SUBGROUPS=0 svtr:$(lw 16 2)
    svtr:$(lw 16 2),$G/unroll svtr:$(lw 16 4),$G/unroll svtr:$(lw 8 4),$G/unroll svtr:GLTENSOR_ATTENTION_LANES=0,$G/all
    svtr:$(lw 32 8) svtr:$(lw 16 8),$G/unroll"
fi
: "${A38_E2E:=8x300:$G/all 8x300:$G/pv4 8x300:$G/all,GLTENSOR_ATTENTION_COMBINE=dispatch svtr:$(lw 16 2) svtr:$(lw 16 2),$G/unroll}"
: "${A38_TEST_LIST:=test_plans:PlanAttention* test_nn:Attention.* test_attention:* test_model_attention:* test_kv_cache:*}"
