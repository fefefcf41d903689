# The knobs of a window's pack (sourced by run.sh with $H set; the environment overrides them); result-wN.txt name
# the knobs each window ran (their commits' knobs.sh). A39_PROF / A39_E2E: "case-regex:KNOB,KNOB" variants (words
# starting with -- are gltensor-run options); GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants.
# Window 1 (fd44eaf, result-w1.txt): attention_block.comp 79.6 us of GPU time against attention.comp's 38.6.
# Window 2 (5d110d0, result-w2.txt): loads without a branch 53.4 (gv/br 79.6), il 50.2, 8 rows 48.2, il + 8 rows 40.4.
# Window 3 (result-w3.txt): ilpfu8 + 8 rows 33.5 (ilpf + 8 rows 34.9), replayed 0.103 ms against the graph's 0.106.
# Window 4: the kernel in ilpfu8's form at 8 rows, the default now: every attention test on GLES, the block kernel's
# on desktop GL, five sabotages of it; main against the branch, 16 rows and attention.comp as knobs; probes t1, t12.
KB=GLTENSOR_ATTENTION_BLOCK
G=GLTENSOR_GLSL_DIR=$H/gv
: "${A39_PROF:=8x300:$KB=0 8x300:${KB}_ROWS=16 8x300:$G/t1 8x300:$G/t12 8x300:$G/ilpfu8,${KB}_ROWS=8}"
: "${A39_E2E:=8x300:$KB=0 8x300:${KB}_ROWS=16}"
: "${A39_TESTS:=1}" "${A39_TORCHK:=0}"
: "${A39_SAB:=sab_m sab_m8 sab_l sab_causal sab_scale}"
: "${A39_TEST_LIST:=test_plans:PlanAttention.* test_nn:Attention.Block* test_nn:Attention.*-Attention.Block* test_attention:FlashAttention.InferenceQuads* test_model_attention:* test_attention_head_dims:*}"
: "${A39_TEST_LIST_GL:=test_nn:Attention.Block* test_model_attention:*}"
: "${A39_TESTS_UNTIL:=45}" "${A39_SAB_S:=20}" "${A39_ROUNDS_S:=38}" "${A39_PROF_S:=68}" "${A39_END:=136}"
