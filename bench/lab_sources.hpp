// The kernel lab's candidate kernels from bench/lab/, embedded at build time
// (cmake/embed_glsl.cmake), by file name.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace gltensor::lab {
const std::map<std::string, std::string_view>& lab_sources();
}
