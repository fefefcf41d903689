// Kernel sources from glsl/, embedded at build time (cmake/embed_glsl.cmake).
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace gltensor::detail {
const std::map<std::string, std::string_view>& shader_sources();
}
