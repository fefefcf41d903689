# The knobs of this window's pack (sourced by run.sh with $H set; the environment overrides them).
# A38_PROF: GPU-time variants, "case-regex:KNOB,KNOB"; A38_E2E: replayed end-to-end variants, same form.
# GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants of attention.comp: t0 / t1 (timing probes, wrong
# outputs: no key tile / at most one per workgroup), sab1..3 (sabotaged key halves: the tests must fail).
# The branch's default for 8 x 300 x 64: key halves, no key split; GLTENSOR_ATTENTION_HALVES=0: main's (the split
# merged in the dispatch).
G=GLTENSOR_GLSL_DIR=$H/gv
SP=GLTENSOR_ATTENTION_SPLIT
HV=GLTENSOR_ATTENTION_HALVES
: "${A38_PROF:=8x300:$HV=0 8x300:$HV=1,GLTENSOR_ATTENTION_BQ=32 8x300:$G/t1 8x300:$SP=2}"
: "${A38_E2E:=8x300:$HV=0}"
: "${A38_TESTS:=1}" "${A38_TORCHK:=0}" "${A38_TESTS_UNTIL:=60}" "${A38_SAB_S:=24}" "${A38_ROUNDS_S:=8}" "${A38_PROF_S:=14}"
: "${A38_END:=98}"
: "${A38_TEST_LIST:=test_nn:Attention.* test_model_attention:* test_kv_cache:*}"
: "${A38_SAB:=sab1 sab2 sab3}"
