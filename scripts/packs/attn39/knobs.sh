# The knobs of a window's pack (sourced by run.sh with $H set; the environment overrides them); result-wN.txt name
# the knobs each window ran (their commits' knobs.sh). A39_PROF / A39_E2E: "case-regex:KNOB,KNOB" variants (words
# starting with -- are gltensor-run options); GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants.
# Window 1 (fd44eaf, result-w1.txt): attention_block.comp 79.6 us of GPU time against attention.comp's 38.6 (probes:
# phase 1 26 us over the floor, phase 2 8, phase 3 39). Window 2: fab3fd7's loads without a branch (gv/br: the
# branched ones of window 1) and the loop forms il, p1k2, p3r8, ilr8 (gen/block_variants.py); rows and invocations
# per workgroup swept (4, 8, 16 rows; 256, 512 invocations); probes t1, t12 again; the tests again on the review's
# fixes (e5de734..: sk a power of two, the device's invocations, the spike case) and five sabotages.
KB=GLTENSOR_ATTENTION_BLOCK
G=GLTENSOR_GLSL_DIR=$H/gv
: "${A39_PROF:=8x300:$KB=0 8x300:$G/br 8x300:$G/t1 8x300:$G/t12 8x300:$G/il 8x300:$G/p1k2 8x300:$G/p3r8 8x300:$G/ilr8 8x300:${KB}_ROWS=8 8x300:${KB}_ROWS=4 8x300:${KB}_LOCAL=512 8x300:${KB}_ROWS=8,${KB}_LOCAL=512 8x300:${KB}_ROWS=4,${KB}_LOCAL=512 8x300:$G/il,${KB}_ROWS=4 8x300:$G/il,${KB}_ROWS=8}"
: "${A39_E2E:=8x300:$KB=0 8x300:${KB}_ROWS=4 8x300:$G/ilr8}"
: "${A39_TESTS:=1}" "${A39_TORCHK:=0}"
: "${A39_SAB:=sab_m sab_m8 sab_l sab_causal sab_scale}"
: "${A39_TEST_LIST:=test_plans:PlanAttention.* test_nn:Attention.Block* test_nn:Attention.*-Attention.Block* test_attention:FlashAttention.InferenceQuads* test_model_attention:*}"
: "${A39_TEST_LIST_GL:=test_nn:Attention.Block* test_model_attention:*}"
: "${A39_TESTS_UNTIL:=40}" "${A39_SAB_S:=20}" "${A39_ROUNDS_S:=38}" "${A39_PROF_S:=68}" "${A39_END:=136}"
