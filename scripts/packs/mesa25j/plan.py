#!/usr/bin/env python3
"""mesa25j's plan: the ctest entries that main's changes since mesa25i's code (ee5c5f0..1858833) reach, each with
why, and the queue order. Codes: N a new entry (never run on Mesa 25); T its test source or a test header it includes
changed (grad_check.hpp, conv_ref.hpp, qdq_ref.hpp, attention_ref.hpp); D its ctest definition changed
(GLTENSOR_MATMUL_REG_BLOCK=4x1, COST); K a kernel it runs changed (matmul_reg, unary/activations, norm, attention,
conv_direct, rnn*, fused_mlp, squeeze_excite, conv_winograd); H the op / nn host code it runs (attention, conv, rnn,
norm, matmul, reduce, kv_combine); M the model runtime or tools (planner, fuse_*, ops_*, gltensor-run); R only the
read path and settings (src/runtime: readback, host_copy, error_flags: every entry that reads a tensor back).
Order: the new entries; the entries under 20 CPU-s by their last Mesa 25 CPU (mesa25g/h/i's results), tier 1 (N, T),
then tier 2 (K, H, M), then tier 3 (R), each cheapest first; then the rest the same way; fixtures' setup entries
before their users.
Usage: python3 plan.py PREV.tsv > affected.txt (name, tier, codes, last Mesa 25 CPU s); queue: the names in order."""
import sys
prev = {}
for line in open(sys.argv[1]):
    c = line.rstrip('\n').split('\t')
    if len(c) > 2 and c[0] != 'TOTAL':
        prev[c[0]] = float(c[2])
why = {
    'test_conv_winograd': 'N,T,K', 'test_model_se_check_loops': 'N,T,K,M',
    'test_rnn_check_loops': 'T,K,H', 'test_fused_mlp': 'T,K,D,M', 'test_fused_mlp_check_loops': 'T,K,D,M',
    'test_model_signal_ops': 'T,M', 'test_model_softmax': 'T,M', 'test_model_layernorm_check_loops': 'T,K,M',
    'test_model_host_io': 'T,M,R', 'test_model_host_io_staging_copy': 'T,M,R', 'test_model_host_io_host_io_copy': 'T,M,R',
    'test_model_fusion_check_loops': 'T,M', 'test_model': 'T,M,K', 'test_model_check_loops': 'T,M,K',
    'test_pool': 'T,R', 'test_pool_staging_copy': 'T,R', 'test_nn_plans': 'T,H', 'test_plans': 'T,H',
    'test_kernel_variants': 'T,K', 'test_attention': 'T,K,H,D', 'test_attention_check_loops': 'T,K,H,D',
    'test_nn': 'T,K,H,D', 'test_nn_check_loops': 'T,K,H,D', 'test_matmul': 'T,K,H', 'test_matmul_check_loops': 'T,K,H',
    'test_iconv_direct': 'T', 'test_iconv_direct_check_loops': 'T', 'test_iconv_implicit': 'T',
    'test_iconv_implicit_check_loops': 'T', 'test_imatmul_forms': 'T', 'test_imatmul_forms_check_loops': 'T',
    'test_quant_int': 'T', 'test_quant_int_check_loops': 'T', 'test_model_ops': 'T,D,M,K', 'test_model_ops_check_loops': 'T,D,M,K',
    'test_window_sizes': 'T', 'test_iconv_warp': 'T', 'test_iconv_warp_check_loops': 'T',
    'test_attention_head_dims': 'T,K,H', 'test_attention_tiled': 'T,H', 'test_attention_tiled_check_loops': 'T,H',
    'test_conv_direct': 'T,K,D,H', 'test_conv_direct_check_loops': 'T,K,D,H', 'test_interop_entry': 'T',
    'test_quant': 'T', 'test_quant_check_loops': 'T', 'test_batch_norm_check_loops': 'T', 'test_lora_check_loops': 'T,K',
    'test_transformer_ops_check_loops': 'T,K,H', 'test_elementwise_grads_check_loops': 'T,K', 'test_autograd': 'T,D',
    # tier 2
    'test_model_attention_check_loops': 'K,H,M', 'test_kv_cache_check_loops': 'H,K', 'demo_chargpt_cached_decode': 'H,K',
    'test_conv_ssbo_limit_check_loops': 'H', 'test_model_run': 'M', 'test_model_replay': 'M', 'test_model_window_sizes': 'M',
    'test_model_sequences': 'M', 'test_ocr_models': 'M,K', 'test_ocr_pipeline': 'M', 'onnx_conformance_node': 'M,K',
    'onnx_conformance_pytorch_converted': 'M', 'onnx_conformance_pytorch_operator': 'M', 'onnx_conformance_simple': 'M',
    'gltensor_run_profile': 'M', 'demo_graphics_gles_network': 'M', 'test_elementwise': 'K', 'test_elementwise_check_loops': 'K',
    'test_elementwise_quads_check_loops': 'K', 'test_reduce_check_loops': 'H', 'test_amp': 'D,K', 'test_optim_check_loops': 'D',
    'test_gpt_training': 'K,H', 'demo_chargpt_small': 'K,H', 'demo_chargpt_eval': 'K,H', 'demo_chargpt_generate': 'K,H',
    'demo_chargpt_lora': 'K,H', 'demo_chargpt_interactive': 'K,H', 'demo_chargpt_generate_quantize_plain': 'K,H',
    'demo_chargpt_quantize_int8': 'K,H', 'demo_chargpt_quantize_int4': 'K,H', 'demo_chargpt_generate_int4': 'K,H',
    'demo_chargpt_quantized_eval': 'K,H', 'demo_fashion_mnist_learns': 'K,H', 'demo_fashion_mnist_f16': 'K,H',
    'demo_fashion_mnist_cnn': 'K,H', 'demo_fashion_mnist_second_run': 'K,H', 'kernel_lab_check': 'K', 'kernel_lab_check_loops': 'K',
}
# setup entries a user needs before it (ctest FIXTURES): moved just ahead of their first user
setup = {'demo_chargpt_eval': 'demo_chargpt_small', 'demo_chargpt_generate': 'demo_chargpt_small',
         'demo_chargpt_lora': 'demo_chargpt_small', 'demo_chargpt_interactive': 'demo_chargpt_small',
         'demo_chargpt_generate_quantize_plain': 'demo_chargpt_small', 'demo_chargpt_quantize_int8': 'demo_chargpt_small',
         'demo_chargpt_quantize_int4': 'demo_chargpt_small', 'demo_chargpt_generate_int4': 'demo_chargpt_quantize_int4',
         'demo_chargpt_quantized_eval': 'demo_chargpt_quantize_int4',
         'demo_graphics_gl_screenshot': 'demo_graphics_gl_frames', 'demo_graphics_gles_screenshot': 'demo_graphics_gles_frames',
         'demo_graphics_headless_screenshot': 'demo_graphics_headless_frames'}
def tier(n):
    w = why.get(n, 'R')
    return 1 if ('N' in w or 'T' in w) else 2 if w != 'R' else 3
# the new entries first; then every entry under 20 CPU-s (tier, then cost); then the rest (tier, then cost)
cost = lambda n: prev[n] if prev[n] >= 0 else 30.0
rows = sorted(prev, key=lambda n: (0 if prev[n] < 0 else 1 if cost(n) < 20 else 2, tier(n), cost(n)))
order = []
def add(n):
    if n in order: return
    if n in setup: add(setup[n])
    order.append(n)
for n in rows: add(n)
for n in order:
    print(n, tier(n), why.get(n, 'R'), prev[n], sep='\t')
