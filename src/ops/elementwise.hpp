// Launches the strided elementwise kernels (unary.comp, binary.comp, ternary.comp) (internal).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/codegen.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

/// The strided elementwise kernel families.
enum class ElementwiseKernel { unary, binary, ternary };
/// Its GLSL file: unary.comp, binary.comp or ternary.comp (glsl/ops).
const char* kernel_file(ElementwiseKernel k);

struct Elementwise {
  const char* op = "";  // public op name, for errors
  ElementwiseKernel kernel = ElementwiseKernel::unary;
  std::string fn;                // GLSL function, e.g. "op_exp"
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

/// Runs e over out (any view, any dtype) and inputs (each broadcastable to out's shape).
/// If out overlaps an input other than as the identical view, that input is copied first.
/// Throws ValueError if out has internal overlap (a stride-0 dim of size > 1).
void launch_elementwise(const Elementwise& e, const Tensor& out, std::vector<Tensor> inputs);

}  // namespace gltensor::detail
