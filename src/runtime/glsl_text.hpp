// GLSL source text helpers (internal): shared by the uniform check (program_cache) and the
// define check (variant).
#pragma once
#include <string>

namespace gltensor::detail {

/// The f16 arithmetic types extension for devices without NV_gpu_shader5
/// (DeviceImpl::f16_extension_glsl; the offline variant compiles).
inline constexpr const char* kF16TypesExtensionGlsl =
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";

/// A list macro's body written out: "X(<pre>0) X(<pre>1) .. X(<pre>n-1) " (register blocks whose
/// elements the kernel indexes by constants, e.g. matmul_reg.comp's ROWS(X)).
std::string glsl_macro_list(int n, const char* pre);

/// `source` without its // and /* */ comments (line breaks kept).
std::string strip_glsl_comments(const std::string& source);

/// Whether a complete program source can run a `LOOP()` (common.glsl's counted loops,
/// GLTENSOR_CHECK_LOOPS): LOOP appears in main, outside every function (a macro, a global), or in
/// a function that main reaches through the names those mention. Conservative: preprocessor
/// conditionals are ignored (a name under any #if counts), overloads are one function, and a
/// source whose functions it cannot delimit (unbalanced braces, no main) counts as looping. The
/// lines that define LOOP itself are left out.
bool glsl_reaches_loop(const std::string& source);

}  // namespace gltensor::detail
