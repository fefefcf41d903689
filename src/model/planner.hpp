// Planning passes over the graph IR (internal), run once at load:
//   check_and_type   every node maps to a registered op, with handled attributes, supported
//                    dtypes and opset; infers element types (ModelError naming node/attribute).
//   fold_constants   nodes whose inputs are all constants are evaluated once (on the host where
//                    the op has a host form, else on the GPU and read back).
//   inline_ifs       If with a constant condition -> the nodes of the branch it takes.
//   fold_batchnorm   BatchNormalization after a Conv with constant weights -> new Conv weights.
//   fold_affine      Mul/Add by per-channel constants after a Conv -> Conv weights/bias; Add of
//                    a constant vector after a MatMul with a constant matrix -> its bias input.
//   fuse_hardswish   x * Clip(x + 3, 0, 6) / 6 -> HardSwish(x).
//   fuse_layernorm   (before fuse_muladd) d = x - ReduceMean(x), d / Sqrt(ReduceMean(Pow(d, 2)) +
//                    eps) * gamma (+ beta), the means over the last axis only (dims kept), x
//                    float32, eps > 0 a one-element constant of rank <= 1 (the exponent 2 too),
//                    gamma and beta constant float32 vectors of more than one element, no
//                    intermediate read elsewhere ->
//                    gltensor.LayerNorm(x, gamma, beta; epsilon eps): one layer_norm dispatch
//                    where gamma is x's width (fuse_layernorm.cpp; GLTENSOR_FUSE_LAYERNORM=0: off).
//   fuse_attention   (before fuse_muladd) MatMul(Softmax(MatMul(q [* c], Transpose(k, perm
//                    [0, 1, 3, 2])), last axis), v), float32 q, k, v, c a positive one-element
//                    constant, no intermediate read elsewhere -> gltensor.Attention(q, k, v;
//                    scale c): scaled_dot_product_attention's fused kernels where q, k, v are
//                    [B, H, T, E] alike (fuse_attention.cpp; GLTENSOR_FUSE_ATTENTION=0: off).
//   fuse_epilogues   Conv/ConvTranspose/Gemm/MatMul -> Relu, Clip, HardSigmoid, HardSwish,
//                    Sigmoid, Tanh or LeakyRelu -> one node with Node::epilogue.
//   fuse_muladd      Mul(x, s) -> Add(., b) with constant s, b -> gltensor.MulAdd (addcmul).
//   fuse_elementwise (after the others) maximal trees of elementwise nodes (Add, Sub, Mul, Div,
//                    Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Clip with constant
//                    bounds, Neg, Abs, Exp, Erf, gltensor.MulAdd; float32 or float16) whose
//                    intermediates nothing else reads and are not graph outputs, with at most 6
//                    tensor inputs (one-element constants become literals), two nodes or more ->
//                    gltensor.FusedElementwise: one generated kernel (ops/fused_elementwise.hpp),
//                    the same values as the unfused ops. A float32 Conv/ConvTranspose/Gemm/
//                    MatMul whose epilogue feeds such a node gives the activation back to the
//                    chain first (conv_direct applies epilogues in a dispatch of its own).
//                    GLTENSOR_FUSE_ELEMENTWISE=0: off, and fuse_conv_affine with it (the
//                    node-by-node path, for comparison).
//   fuse_mlp         (after fuse_muladd, before fuse_elementwise) chains of 2 to 8 float32
//                    MatMul / Gemm (transA 0) layers with constant weights and bias (fold_affine's
//                    input 2, Gemm's C per column) and their fused epilogues, each layer's output
//                    read only by the next layer's input (not a graph output), widths within the
//                    device's shared memory (nn/fused_mlp.hpp) -> gltensor.FusedMlp(x, packed
//                    parameters): one dispatch for the chain (on GPUs; GLTENSOR_FUSED_MLP=0: off,
//                    1: on software renderers too).
//   fuse_qdq         (before fold_constants) QDQ weights: DequantizeLinear(x_q) and
//                    DequantizeLinear(w_q constant) feeding Conv or MatMul -> one integer op
//                    (gltensor.QConv / gltensor.QMatMul: int32 sums of the 8-bit values, scaled to
//                    float in one pass, plus the float bias); any other DequantizeLinear of a
//                    constant 8-bit weight feeding Conv, ConvTranspose, Gemm or MatMul ->
//                    gltensor.DequantizeWeight, never folded, so that the weight stays 8-bit in
//                    memory (dequantized into a transient float32 buffer on each run).
//                    A QConv's Relu / Clip and per-tensor QuantizeLinear (constant parameters)
//                    join it (8-bit output, inputs 7, 8: y_scale, y_zero_point), and then a
//                    DequantizeLinear of the same scale and zero point that alone reads that
//                    8-bit output (the net's last layer): float32 output written by the QConv
//                    (attribute dequantize_output: the 8-bit type), bit for bit the two nodes'
//                    (GLTENSOR_FUSE_QDQ_OUTPUT=0: that DequantizeLinear left a node of its own).
//   fuse_se          (after fuse_conv_affine, before fuse_elementwise) squeeze-and-excitation:
//                    GlobalAveragePool(x) -> 1x1 Conv (+ act) -> 1x1 Conv (+ act) -> Mul(x, .)
//                    -> gltensor.SqueezeExcite: one dispatch where an image's planes are small
//                    (nn/squeeze_excite.hpp), else the nodes' ops (fuse_se.cpp).
//   fuse_residual    (after fuse_se) Conv -> Add(., r) -> the Conv with input 3 r, added in its
//                    kernel's stores (nn/conv_plan.hpp: conv2d_add).
//   remove_dead      drops nodes whose outputs nothing reads.
#pragma once
#include <string>

#include "model/graph.hpp"

namespace gltensor::model {

struct PlanStats {
  int ifs = 0, folded = 0, batchnorm = 0, affine = 0, hardswish = 0, epilogues = 0, muladd = 0, dead = 0;
  int conv_affine = 0;  ///< fuse_conv_affine: scalar Mul / Add nodes into Conv epilogues
  int qdq_integer = 0, qdq_weights = 0;
  int qdq_dequant_out = 0;  ///< fuse_qdq: output DequantizeLinear nodes into requantizing QConvs
  int qdq_quant_in = 0;     ///< fuse_qdq: input QuantizeLinear nodes into QConvs (quantize_input)
  int elementwise_groups = 0, elementwise_nodes = 0;  ///< fuse_elementwise: kernels made, nodes in them
  int mlp_chains = 0, mlp_layers = 0;                 ///< fuse_mlp: fused nodes made, layers in them
  int layernorm = 0;                                  ///< fuse_layernorm: gltensor.LayerNorm nodes made
  int attention = 0;                                  ///< fuse_attention: gltensor.Attention nodes made
  int se_blocks = 0;                                  ///< fuse_se: gltensor.SqueezeExcite nodes made
  int residual_adds = 0;                              ///< fuse_residual: Add nodes into Convs
  int stft_power = 0;                                 ///< fuse_stft_power: STFT -> Mul -> ReduceSum -> MatMul patterns
  int stft_mel = 0;                                   ///< fuse_stft_mel: gltensor.StftMel nodes made
  std::string summary() const;
};

void check_and_type(Graph& g);
void fold_constants(Graph& g, const Device& dev, PlanStats& s);
/// If, Loop or Scan (nodes with subgraphs).
bool is_control_flow(const Node& n);
/// Replaces each If whose condition is a constant by its chosen branch's nodes (and an Identity
/// per output); returns whether any was. Run fold_constants again after it.
bool inline_ifs(Graph& g, PlanStats& s);
void fold_batchnorm(Graph& g, PlanStats& s);
void fold_affine(Graph& g, PlanStats& s);
/// STFT -> Mul(spec, spec) -> ReduceSum(last axis, keepdims 0) -> MatMul(power, constant w [m, N])
/// (a power spectrum, then a mel matrix): the STFT with the square as its matmul's epilogue, its
/// [B, F, m, 2] output read as [B, F, 2 m] (a Reshape, a view) by the MatMul against w's rows
/// twice ([2 m, N]: re^2 w[k] + im^2 w[k] = |X_k|^2 w[k]): two dispatches fewer. float32 only;
/// not with GLTENSOR_FUSE_ELEMENTWISE=0.
void fuse_stft_power(Graph& g, PlanStats& s);
/// After fuse_epilogues: fuse_stft_power's gltensor.Frames -> MatMul(frames, its DFT matrix;
/// square) -> MatMul(., the mel weight's rows twice[, bias]; an activation) -> one
/// gltensor.StftMel node (ops_signal.cpp; nn/stft_mel.hpp: one dispatch where its plan takes the
/// sizes, else the two matmuls), with the kernel's constants made here from the matrices (the
/// window, the twiddles, the mel weight). float32 only; not with
/// f16_constants, GLTENSOR_STFT_MEL=0 or GLTENSOR_FUSE_ELEMENTWISE=0; by default not on
/// software rasterizers (GLTENSOR_STFT_MEL=1 there too).
void fuse_stft_mel(Graph& g, const Device& dev, bool f16_constants, PlanStats& s);
void fuse_hardswish(Graph& g, PlanStats& s);
void fuse_epilogues(Graph& g, PlanStats& s);
void fuse_muladd(Graph& g, PlanStats& s);
/// After fuse_muladd: the scalar Mul / Add / gltensor.MulAdd after a Conv (and its activation)
/// into the Conv's epilogue (Epilogue::scale, shift): one-element constants of at most the
/// output's rank (no broadcast to a higher one), float32 outputs only, not with f16_constants
/// (nor with GLTENSOR_FUSE_ELEMENTWISE=0).
void fuse_conv_affine(Graph& g, bool f16_constants, PlanStats& s);
void fuse_qdq(Graph& g, PlanStats& s);
/// After fuse_conv_affine, before fuse_elementwise (fuse_se.cpp): GlobalAveragePool(x) -> Conv
/// 1x1 (+ activation) -> Conv 1x1 (+ activation) -> Mul(x, .), float32, constant weights and
/// biases, no intermediate read elsewhere, the Mul not continued by an elementwise node ->
/// gltensor.SqueezeExcite(x, w1, b1, w2, b2; activations, activation_params). Not with
/// f16_constants nor with GLTENSOR_FUSE_ELEMENTWISE=0.
void fuse_se(Graph& g, bool f16_constants, PlanStats& s);
/// After fuse_se, before fuse_elementwise: a float32 2-D Conv (constant weight) whose output only
/// an Add reads, with a float32 tensor r made before the Conv -> the Conv with r as input 3, the
/// residual (detail::conv2d_add: in the direct kernel's stores where r is the output's shape, else
/// an add after). Not with GLTENSOR_FUSE_ELEMENTWISE=0.
void fuse_residual(Graph& g, PlanStats& s);
/// Runs after fuse_muladd (the device bounds the inputs per kernel by its SSBO bindings);
/// f16_constants: float32 constants are uploaded as float16 (ModelOptions::f16_weights), so the
/// expression's literals are rounded to float16 as the unfused ops read them.
void fuse_elementwise(Graph& g, const Device& dev, bool f16_constants, PlanStats& s);
void fuse_mlp(Graph& g, const Device& dev, PlanStats& s);
void fuse_layernorm(Graph& g, PlanStats& s);
void fuse_attention(Graph& g, PlanStats& s);
void remove_dead(Graph& g, PlanStats& s);

// Helpers of the rewrites (planner.cpp), shared by the passes in other files.
/// The single non-removed consumer of value v (not a graph output), or -1.
int sole_consumer(const Graph& g, int v);
/// The node of type `op` (default domain) producing value v, if v has no other reader and is not
/// a graph output; else null.
Node* sole_producer(Graph& g, int v, const char* op);
/// Rewrites node n in place as the planner's op `op` over `inputs` with one float attribute
/// (attr = value), noting the nodes it stands for in Node::fused, and recounts the uses.
void rewrite_node(Graph& g, Node& n, const std::string& op, std::vector<int> inputs, const std::string& attr,
                  double value, const std::string& fused);
/// Whether fuse_elementwise takes node n into a chain (an elementwise op of float operands).
bool elementwise_fusable(const Graph& g, const Node& n);
/// The constant of value v (-1: none), or null.
const HostTensor* const_of(const Graph& g, int v);
/// A new constant value (its name made unique from `name`); returns its id.
int new_constant(Graph& g, const std::string& name, HostTensor t);

}  // namespace gltensor::model
