// Launches the strided elementwise kernels (unary.comp, binary.comp, ternary.comp and the
// generated expressions of fused_elementwise.comp) (internal).
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/variant.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

/// The strided elementwise kernel families (fused: a generated expression, ops/fused_elementwise.hpp).
enum class ElementwiseKernel { unary, binary, ternary, fused };
/// Its GLSL file: unary.comp, binary.comp, ternary.comp or fused_elementwise.comp (glsl/ops).
const char* kernel_file(ElementwiseKernel k);

struct Elementwise {
  const char* op = "";  // public op name, for errors
  ElementwiseKernel kernel = ElementwiseKernel::unary;
  std::string fn;                // GLSL function, e.g. "op_exp" (fused: the FUSED_BODY statements)
  std::string f16_fn;            // its f16 form from the op's table row ("op16_add"; "" none)
  CT in_ct = CT::f32;            // compute type of the inputs (and scalar)
  float p0 = 0, p1 = 0;          // u_p0, u_p1
  int i0 = 0;                    // u_i0
  float alpha = 1;               // u_alpha
  std::optional<double> scalar;  // binary.comp: one operand is this scalar
  bool scalar_first = false;     // the scalar is operand a (else b)
  /// u_words: raw 32-bit parameters (arange's 96-bit start and step).
  std::array<std::uint32_t, 7> words{};
  /// An ErrorFlags bit the kernel may set (ERR_FLAG: the flag word is bound after the
  /// operands), checked at the next read; 0: none.
  std::uint32_t error_flag = 0;
  /// Worst-case loop trips of OP for one element (binary.comp's float fmod/remainder and integer
  /// pow: 32), declared to the launch with the driver's own loops.
  std::uint32_t fn_loop = 0;
};

/// The compile-time choices of unary/binary/ternary.comp (and glsl/common/elementwise.glsl's
/// driver): the Variant of the elementwise kernels (runtime/variant.hpp).
struct ElementwiseVariant {
  ElementwiseKernel kernel = ElementwiseKernel::unary;
  std::string fn;           ///< OP (fused: FUSED_BODY, the expression's statements)
  std::string f16_fn;       ///< OP16 with F16V ("" = f32 math)
  std::string f16_ext;      ///< F16V: the device's f16 extension text (DeviceImpl::f16_extension_glsl)
  int ndim = 1;             ///< NDIM, collapsed dims
  bool contig = false;      ///< CONTIG: one dim, contiguous in every operand
  bool words = false;       ///< OUT_WORDS
  bool vec4 = false;        ///< VEC4
  int quads = 1;            ///< QUADS (VEC4): quads per invocation
  bool error_flag = false;  ///< ERR_FLAG
  enum class Scalar { none, a, b };
  Scalar scalar = Scalar::none;   ///< SCALAR_A / SCALAR_B: that operand is u_scalar
  CT in_ct = CT::f32;             ///< the inputs' compute type (SCALAR_INT for i32 with a scalar)
  int nops = 0;                   ///< NOPS: the output and the tensor inputs (at most 7: fused)
  std::array<DType, 7> dtypes{};  ///< operand 0 (the output), then the tensor inputs

  Defines defines() const;
  /// Every op of the tables (and the casts, fill, arange) in its compute types, then every layout
  /// (NDIM, CONTIG, OUT_WORDS, VEC4, F16V, ERR_FLAG, scalars) and every dtype for one op: every
  /// value of every field, in combinations the ops launch.
  static std::vector<ElementwiseVariant> space();
};

/// Uniforms of glsl/common/elementwise.glsl and the family's own (unary/binary/ternary.comp).
struct ElementwiseParams {
  const Elementwise& e;
  std::uint64_t count, numel;
  std::vector<std::uint32_t> shape, strides, offsets;
  void set(Uniforms& u) const {
    u.u32("u_count", static_cast<std::int64_t>(count));
    u.u32("u_numel", static_cast<std::int64_t>(numel));
    u.u32s("u_shape", shape);
    u.u32s("u_strides", strides);
    u.u32s("u_offset", offsets);
    if (e.kernel == ElementwiseKernel::unary) {
      u.f32("u_p0", e.p0);
      u.f32("u_p1", e.p1);
      u.i32("u_i0", e.i0);
      u.u32s("u_words", e.words);
    } else if (e.kernel == ElementwiseKernel::binary) {
      u.f32("u_alpha", e.alpha);
      if (e.scalar) {
        const double s = *e.scalar;
        u.f32("u_scalar", s);
        // The int form is read only for integral scalars (SCALAR_INT): Inf, NaN or 1e10 next to
        // a float tensor do not set it.
        if (std::isfinite(s) && std::fabs(s) <= 2147483647.0) u.i32("u_iscalar", static_cast<std::int64_t>(s));
      }
    } else if (e.kernel == ElementwiseKernel::ternary) {
      u.f32("u_p0", e.p0);
    }
  }
};

/// Worst-case loop iterations of one invocation: operand offsets (NDIM x NOPS), a word's elements
/// or `quads` quads' lanes (4 x NOPS each), OP's own loop (fn_loop) for each of those elements,
/// and past one quad the two loops over the quads (one quad: their single passes, as before the
/// quads loops, so that the ops' splits under lowered limits stay as they were).
inline std::uint64_t elementwise_loops(int ndim, int nops, std::uint32_t fn_loop, int quads = 1) {
  const auto q = static_cast<std::uint64_t>(quads);
  return static_cast<std::uint64_t>(ndim * nops) + q * (4ull * nops + 4 + 4ull * fn_loop) + (q > 1 ? 2 * q : 0);
}

/// Runs e over out (any view, any dtype) and inputs (each broadcastable to out's shape).
/// If out overlaps an input other than as the identical view, that input is copied first.
/// Throws ValueError if out has internal overlap (a stride-0 dim of size > 1).
void launch_elementwise(const Elementwise& e, const Tensor& out, std::vector<Tensor> inputs);

}  // namespace gltensor::detail
