// GLSL source text helpers (glsl_text.hpp).
#include "runtime/glsl_text.hpp"

namespace gltensor::detail {

std::string strip_glsl_comments(const std::string& source) {
  std::string code;
  code.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source.compare(i, 2, "//") == 0) {
      i = source.find('\n', i);
      if (i == std::string::npos) break;
    } else if (source.compare(i, 2, "/*") == 0) {
      i = source.find("*/", i);
      if (i == std::string::npos) break;
      ++i;
      continue;
    }
    code += source[i];
  }
  return code;
}

std::string glsl_macro_list(int n, const char* pre) {
  std::string l;
  for (int i = 0; i < n; ++i) l += std::string("X(") + pre + std::to_string(i) + ") ";
  return l;
}

}  // namespace gltensor::detail
