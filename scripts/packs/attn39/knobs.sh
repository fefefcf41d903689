# The knobs of a window's pack (sourced by run.sh with $H set; the environment overrides them); result-wN.txt name
# the knobs each window ran (their commits' knobs.sh). A39_PROF / A39_E2E: "case-regex:KNOB,KNOB" variants (words
# starting with -- are gltensor-run options); GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants.
# Window 1: attention_block.comp (the default for 8 x 300 x 64 on GPUs) against main's attention.comp, its rows and
# invocations per workgroup, timing probes (gv/t1: phase 1 only, gv/t12: phases 1-2) and phase 3 without its 4-key
# unroll (gv/p3plain); the tests on both APIs and the sabotages; PyTorch's kernel time.
KB=GLTENSOR_ATTENTION_BLOCK
G=GLTENSOR_GLSL_DIR=$H/gv
: "${A39_PROF:=8x300:$KB=0 8x300:${KB}_ROWS=8 8x300:${KB}_ROWS=32 8x300:${KB}_LOCAL=128 8x300:$G/t1 8x300:$G/t12 8x300:$G/p3plain}"
: "${A39_E2E:=8x300:$KB=0 8x300:${KB}_ROWS=8}"
: "${A39_TESTS:=1}" "${A39_TORCHK:=1}"
: "${A39_SAB:=sab_l sab_causal sab_scale}"
: "${A39_TEST_LIST:=test_plans:PlanAttention.* test_nn:Attention.Block* test_nn:Attention.*-Attention.Block* test_attention:FlashAttention.InferenceQuads* test_model_attention:*}"
: "${A39_TEST_LIST_GL:=test_nn:Attention.Block* test_model_attention:*}"
: "${A39_TESTS_UNTIL:=40}" "${A39_SAB_S:=12}" "${A39_ROUNDS_S:=38}" "${A39_PROF_S:=68}" "${A39_END:=136}"
