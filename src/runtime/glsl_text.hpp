// GLSL source text helpers (internal): shared by the uniform check (program_cache) and the
// define check (variant).
#pragma once
#include <string>

namespace gltensor::detail {

/// The f16 arithmetic types extension for devices without NV_gpu_shader5
/// (DeviceImpl::f16_extension_glsl; the offline variant compiles).
inline constexpr const char* kF16TypesExtensionGlsl =
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";

/// `source` without its // and /* */ comments (line breaks kept).
std::string strip_glsl_comments(const std::string& source);

}  // namespace gltensor::detail
