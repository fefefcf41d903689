// GLSL declarations for kernel operands (internal). Every SSBO is declared as uint[]; the
// generated loadN/storeN/bitsN functions unpack and pack the element dtype, so one kernel source
// serves every dtype combination.
#pragma once
#include <string>

#include "gltensor/dtype.hpp"

namespace gltensor::detail {

/// Compute type in a shader: floats compute in f32, integer and bool types in int.
enum class CT { f32, i32 };
inline CT natural_ct(DType d) { return is_floating(d) ? CT::f32 : CT::i32; }
inline const char* ct_glsl(CT c) { return c == CT::f32 ? "float" : "int"; }
/// Elements per 32-bit word.
inline int per_word(DType d) { return 4 / static_cast<int>(itemsize(d)); }

/// Declares operand `index` (binding = index): buffer tN, type CTN, loadN(e), bitsN(v),
/// storeN(e, v) (atomic for 8/16-bit dtypes) and PER_WORDN.
std::string operand_glsl(int index, DType dtype, CT ct, bool write);
/// The same for a 32-bit dtype viewed as uvec4[] (tN4). No storeN (the vec4 path stores whole
/// uvec4s). A written operand keeps loadN(e) by element; a read-only one is read a quad at a time:
/// fetchN(quad) loads tN4[quad] into a register (one 128-bit load), loadN(lane) returns lane 0..3.
std::string operand_glsl_vec4(int index, DType dtype, CT ct, bool write);
/// Operand `index` (a floating dtype) read-only as quads of 4 consecutive elements: buffer qNAME,
/// vec4 quadNAME(i) loads elements 4i..4i+3 (one 128-bit load for f32, 64-bit for f16/bf16).
std::string quad_glsl(const char* name, int index, DType dtype);

/// KHR_shader_subgroup features a kernel may use beside basic (DeviceImpl::subgroup_arithmetic,
/// subgroup_shuffle tell whether the device allows them).
enum class SubgroupFeature { arithmetic, shuffle };
/// The #extension lines for subgroup basic and `feature`, then `#define SUBGROUP 1`: the only
/// place outside src/runtime that needs #extension text gets it here.
std::string subgroup_glsl(SubgroupFeature feature);
/// The float atomics extension's line (NV_shader_atomic_float: atomicAdd on float buffer
/// variables) and `#define ATOMIC_FLOAT 1`.
std::string atomic_float_glsl();

}  // namespace gltensor::detail
