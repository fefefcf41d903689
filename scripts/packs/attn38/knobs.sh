# The knobs of this window's pack (sourced by run.sh with $H set; the environment overrides them).
# A38_PROF: GPU-time variants, "case-regex:KNOB,KNOB"; A38_E2E: replayed end-to-end variants, same form.
# GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants: attention.comp's pv4 (P.V four keys a trip), merge
# (COMBINE's tail loads together), early (the first K / V loads before Q's store), all (the three), allu (all with
# NVIDIA's unroll pragma), t0 / t1 (timing probes, wrong outputs: no key tile / at most one per workgroup);
# the lanes kernel's unroll. GLTENSOR_ATTENTION_HALVES=1: the branch's key halves.
LN=GLTENSOR_ATTENTION_LANES=1,GLTENSOR_ATTENTION_LANE_WIDTH
lw() { echo "$LN=$1,GLTENSOR_ATTENTION_LANE_KEYS=$2"; }
G=GLTENSOR_GLSL_DIR=$H/gv
SP=GLTENSOR_ATTENTION_SPLIT
HV=GLTENSOR_ATTENTION_HALVES=1
if [ -z "${A38_PROF:-}" ]; then
  A38_PROF="8x300:$SP=0"
  for k in "" ",$SP=0" ",GLTENSOR_ATTENTION_BQ=32" ",GLTENSOR_ATTENTION_BQ=32,$SP=0" ",$SP=1" ",$SP=4" \
    ",GLTENSOR_ATTENTION_COMBINE=dispatch" ",$G/t0,$SP=0" ",$G/t1,$SP=0" ",$G/t0" ",$G/t1"; do
    A38_PROF="$A38_PROF 8x300:$HV$k"
  done
  A38_PROF="$A38_PROF 8x300:$G/t0,$SP=0 8x300:$G/t1,$SP=0 8x300:$G/t0 8x300:$G/t1 svtr:GLTENSOR_ATTENTION_LANES=0,$HV
    svtr:GLTENSOR_ATTENTION_LANES=0,$G/t0"
fi
: "${A38_E2E:=8x300:$HV 8x300:$HV,$SP=0 8x300:$HV,GLTENSOR_ATTENTION_BQ=32}"
: "${A38_TESTS:=1}" "${A38_TORCHK:=0}" "${A38_TESTS_UNTIL:=34}" "${A38_ROUNDS_S:=12}" "${A38_PROF_S:=26}" "${A38_END:=86}"
: "${A38_TEST_LIST:=test_nn:Attention.KeyHalves* test_plans:PlanAttention*}"
