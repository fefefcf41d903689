// Element types. f16 and bf16 are storage types: kernels load them, compute in f32 and round
// back on store (round to nearest even). bool is stored as one byte holding 0 or 1. u8 and i8 are
// one byte each (uint8 0..255, int8 -128..127, two's complement); kernels load them as int.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gltensor {

enum class DType : std::uint8_t { f32, f16, bf16, i32, u8, bool_, i8 };

/// Bytes per element.
constexpr std::size_t itemsize(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::u8:
    case DType::i8:
    case DType::bool_:
      return 1;
  }
  return 4;
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// PyTorch-style names: "float32", "float16", "bfloat16", "int32", "uint8", "int8", "bool".
const char* dtype_name(DType t);

/// Result dtype of a binary op on two tensors (torch.promote_types): bool < u8, i8 < i32 < floats;
/// u8 with i8 gives i32 (torch gives int16, which gltensor does not have); f16 with bf16 gives f32;
/// a float with an integer gives the float.
DType promote_types(DType a, DType b);

/// IEEE 754 binary16 / bfloat16 conversions on the host (round to nearest even, NaN kept).
std::uint16_t f32_to_f16(float f);
float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_bf16(float f);
float bf16_to_f32(std::uint16_t h);

}  // namespace gltensor
