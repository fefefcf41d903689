# The knobs of a window's pack (sourced by run.sh with $H set; the environment overrides them). This is the final
# check after window 4 (the key halves, GLTENSOR_ATTENTION_HALVES, were removed: NVIDIA's compiler rejected them in
# windows 3 and 4): the attention tests on GLES only, under 30 s; result-wN.txt name the knobs each window ran (their
# commits' knobs.sh). A38_PROF / A38_E2E: "case-regex:KNOB,KNOB" variants; GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's
# GLSL variants of attention.comp: pv4, merge, early, all (window 2's loop rewrites), t0 / t1 (timing probes, wrong
# outputs: no key tile / at most one per workgroup).
G=GLTENSOR_GLSL_DIR=$H/gv
SP=GLTENSOR_ATTENTION_SPLIT
: "${A38_PROF:=8x300:$SP=0 8x300:$G/t0 8x300:$G/t0,$SP=0 8x300:$G/t1 8x300:$G/t1,$SP=0}"
: "${A38_E2E:=8x300:$SP=0}"
: "${A38_TESTS:=1}" "${A38_ONLY_TESTS:=1}" "${A38_TORCHK:=0}" "${A38_TESTS_UNTIL:=28}"
: "${A38_TEST_LIST:=test_nn:Attention.* test_model_attention:* test_attention:*}"
: "${A38_TEST_LIST_GL:=test_nn:Attention.Lanes* test_model_attention:*}"
