# The knobs of a window's pack (sourced by run.sh with $H set; the environment overrides them); result-wN.txt name
# the knobs each window ran (their commits' knobs.sh). A39_PROF / A39_E2E: "case-regex:KNOB,KNOB" variants (words
# starting with -- are gltensor-run options); GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants.
# Window 1 (fd44eaf, result-w1.txt): attention_block.comp 79.6 us of GPU time against attention.comp's 38.6.
# Window 2 (5d110d0, result-w2.txt): loads without a branch 53.4 (gv/br 79.6), il 50.2, 8 rows 48.2, il + 8 rows 40.4.
# Window 3 (result-w3.txt): ilpfu8 + 8 rows 33.5 (ilpf + 8 rows 34.9), replayed 0.103 ms against the graph's 0.106.
# Window 4 (b2344c8, result-w4.txt): built in as the default, 33.2 us; replayed 0.098-0.104 ms, the graph 0.102 (0.96x).
# Window 5: the final branch (the default narrowed to the measured range, the tests cut to fewer programs): every
# attention test on GLES, the block kernel's and the model tests on GL; main against the branch again.
KB=GLTENSOR_ATTENTION_BLOCK
G=GLTENSOR_GLSL_DIR=$H/gv
: "${A39_PROF:=8x300:$KB=0}"
: "${A39_E2E:=8x300:$KB=0}"
: "${A39_TESTS:=1}" "${A39_TORCHK:=0}"
: "${A39_SAB:=sab_m}"
: "${A39_TEST_LIST:=test_plans:PlanAttention.* test_nn:Attention.Block* test_nn:Attention.*-Attention.Block* test_attention:FlashAttention.InferenceQuads* test_model_attention:* test_attention_head_dims:*}"
: "${A39_TEST_LIST_GL:=test_plans:PlanAttention.* test_nn:Attention.* test_model_attention:* test_attention:FlashAttention.InferenceQuads*}"
: "${A39_TESTS_UNTIL:=55}" "${A39_SAB_S:=20}" "${A39_ROUNDS_S:=38}" "${A39_PROF_S:=68}" "${A39_END:=136}"
