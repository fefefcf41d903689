// How an elementwise launch runs (internal): which kernel form (quads, whole output words, the
// f16 form) and how many invocations. A pure function of the op, the operands' dtypes, offsets
// and layout and the device's f16 math, unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/codegen.hpp"

namespace gltensor::detail {

/// Invocations per workgroup of the elementwise kernels.
inline constexpr int kElementwiseLocal = 256;
/// VEC4's quads per invocation where the plan chooses (ElementwiseProblem::quads = 0).
inline constexpr int kElementwiseQuads = 1;

struct ElementwiseOperand {
  DType dtype = DType::f32;
  std::int64_t offset = 0;  ///< element offset into its storage
};

struct ElementwiseProblem {
  std::string f16_fn;  ///< the op's f16 form from its table row ("op16_add"; "" none)
  CT in_ct = CT::f32;
  bool error_flag = false;
  bool f16_math = false;        ///< DeviceImpl::f16_math(): f16_allowed on a device with fp16 arithmetic
  bool contig = false;          ///< one collapsed dim, contiguous in every operand
  bool out_contiguous = false;  ///< the output tensor is contiguous
  std::int64_t numel = 0;
  /// Operand 0 is the output, then the tensor inputs (a scalar operand is not one).
  std::vector<ElementwiseOperand> operands;
  std::optional<double> scalar;  ///< binary.comp: the scalar operand (u_scalar), if any
  double alpha = 1;              ///< binary.comp: u_alpha (op_add_alpha; 1 for every other op)
  int quads = 0;                 ///< VEC4's quads per invocation: 0 = the plan's choice (Settings)
  /// Neither VEC4 nor OUT_WORDS: one element per invocation (F16V: one word), the form with the
  /// fewest loop trips, where the others' pass the device's loop limit (launch_elementwise).
  bool one_element = false;
};

struct ElementwisePlan {
  bool vec4 = false;   ///< VEC4: quads of four 32-bit elements, `quads` per invocation
  int quads = 1;       ///< VEC4: quads per invocation (QUADS), consecutive in a workgroup's block
  bool words = false;  ///< OUT_WORDS: one whole 32-bit output word per invocation
  /// F16V: the op's f16 form ("op16_*"; "" = f32 math). Only where every operand (the output
  /// included) is f16, contiguous, at an even offset, numel even, float inputs, no error flag,
  /// and a scalar operand is an f16 value (the f16 form rounds it to f16, float16_t(u_scalar);
  /// the f32 path does not: a + 0.1 is not a + f16(0.1)) and alpha (op_add_alpha) a power of two
  /// (alpha * b exact in f16).
  std::string f16_fn;
  /// u_count: elements, quads (VEC4), f16 words (F16V: numel / 2) or output words (OUT_WORDS).
  std::uint64_t count = 0;
  /// Invocations of the grid: `count`, but VEC4's whole workgroups of kElementwiseLocal
  /// invocations, `quads` quads each.
  std::uint64_t invocations = 0;
};

ElementwisePlan plan_elementwise(const ElementwiseProblem& p);

/// Loop trips of one invocation of a plan without VEC4 (glsl/common/elementwise.glsl; VEC4's are
/// elementwise.hpp's elementwise_loops): the operand offsets (contiguous: 2 NOPS; else NOPS +
/// NDIM (1 + NOPS)) and OP's own loop (fn_loop) per element, OUT_WORDS' elements of a word
/// (PER_WORD0 of the output dtype `out`), F16V's offsets and its f16 forms' loops (op16_relu: 2).
std::uint64_t elementwise_element_loops(const ElementwisePlan& plan, DType out, bool contig, int ndim, int nops,
                                        std::uint32_t fn_loop);

}  // namespace gltensor::detail
