# The knobs of a window's pack (sourced by run.sh with $H set; the environment overrides them); result-wN.txt name
# the knobs each window ran (their commits' knobs.sh). A39_PROF / A39_E2E: "case-regex:KNOB,KNOB" variants (words
# starting with -- are gltensor-run options); GLTENSOR_GLSL_DIR=$H/gv/NAME: make_pack.sh's GLSL variants.
# Window 1 (fd44eaf, result-w1.txt): attention_block.comp 79.6 us of GPU time against attention.comp's 38.6.
# Window 2 (5d110d0, result-w2.txt): loads without a branch 53.4 (gv/br 79.6), il 50.2, 8 rows 48.2, il + 8 rows 40.4;
# probes: phase 1 ~27.6 us over the floor. Window 3: phase 1's k row loaded together and the next one prefetched
# (gv/pf, ilpf), phase 3 eight keys a trip (u8), all three (ilpfu8), at 16, 8 and 4 rows; BlockKernelMatchesReference
# under the candidates on GLES and desktop GL (NVIDIA's compiler, their outputs).
KB=GLTENSOR_ATTENTION_BLOCK
G=GLTENSOR_GLSL_DIR=$H/gv
: "${A39_PROF:=8x300:$KB=0 8x300:$G/il,${KB}_ROWS=8 8x300:$G/pf 8x300:$G/ilpf 8x300:$G/u8 8x300:$G/ilpfu8 8x300:$G/pf,${KB}_ROWS=8 8x300:$G/ilpf,${KB}_ROWS=8 8x300:$G/ilpfu8,${KB}_ROWS=8 8x300:$G/ilpfu8,${KB}_ROWS=4 8x300:$G/ilpfu8,${KB}_ROWS=8,${KB}_LOCAL=512 8x300:$G/ilpf,${KB}_ROWS=4 8x300:$G/u8,${KB}_ROWS=8}"
: "${A39_E2E:=8x300:$KB=0 8x300:$G/il,${KB}_ROWS=8 8x300:$G/ilpfu8,${KB}_ROWS=8 8x300:$G/ilpf,${KB}_ROWS=8}"
: "${A39_TESTS:=1}" "${A39_TORCHK:=0}"
: "${A39_SAB:=}"
: "${A39_TEST_LIST:=test_nn:Attention.Block*:$G/ilpfu8 test_nn:Attention.Block*:$G/ilpf test_nn:Attention.Block*:$G/pf test_model_attention:*:$G/ilpfu8,${KB}_ROWS=8}"
: "${A39_TEST_LIST_GL:=test_nn:Attention.Block*:$G/ilpfu8 test_nn:Attention.Block*:$G/ilpf}"
: "${A39_TESTS_UNTIL:=35}" "${A39_SAB_S:=20}" "${A39_ROUNDS_S:=38}" "${A39_PROF_S:=68}" "${A39_END:=136}"
