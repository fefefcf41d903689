// Epilogue activations (internal): their GLSL in fused kernels, and the same function applied as
// separate ops (autograd, split-K).
#pragma once
#include <string>

#include "gltensor/linalg.hpp"

namespace gltensor::detail {

/// The ACT(x) expression of glsl/common/activations.glsl for an epilogue ("" for none).
/// Parameters are read from the uniforms u_act_p0 / u_act_p1.
std::string activation_glsl(Activation act);
/// ACT(x)'s expression with the epilogue's affine after the activation where `affine`:
/// (act(x) * u_act_scale + u_act_shift); the activation's alone otherwise.
std::string epilogue_glsl(Activation act, bool affine);
/// ValueError naming `op` for an epilogue with scale or shift (ops whose kernels take none).
void check_epilogue_act_only(const char* op, const Epilogue& e);
/// ValueError naming `op` for parameters no activation takes (clip with min > max).
void check_epilogue(const char* op, const Epilogue& e);
/// A short name for program cache keys and messages ("relu", ...).
const char* activation_name(Activation act);

}  // namespace gltensor::detail
