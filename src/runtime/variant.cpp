// Defines and the define check (variant.hpp).
#include "runtime/variant.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "gltensor/errors.hpp"
#include "runtime/glsl_text.hpp"

namespace gltensor::detail {

namespace {
const char* ct_code(CT ct) { return ct == CT::f32 ? "f" : "i"; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
}  // namespace

Defines& Defines::add(Entry e, const std::string& key_part) {
  if (entries_.empty()) {
    entries_.reserve(16);
    key_.reserve(96);
  }
  key_ += key_part;
  key_ += ';';
  entries_.push_back(std::move(e));
  return *this;
}

Defines& Defines::flag(const char* name, bool on) {
  if (!on) return *this;
  return add({Kind::flag, name, "", 0, DType::f32, CT::f32, false}, name);
}
Defines& Defines::value(const char* name, std::int64_t v) {
  return add({Kind::value, name, std::to_string(v), 0, DType::f32, CT::f32, false},
             std::string(name) + "=" + std::to_string(v));
}
Defines& Defines::uvalue(const char* name, std::uint64_t v) {
  return add({Kind::uvalue, name, std::to_string(v) + "u", 0, DType::f32, CT::f32, false},
             std::string(name) + "=" + std::to_string(v) + "u");
}
Defines& Defines::ident(const char* name, const std::string& ident) {
  return add({Kind::ident, name, ident, 0, DType::f32, CT::f32, false}, std::string(name) + "=" + ident);
}
Defines& Defines::operand(int index, DType dtype, CT ct, bool write) {
  return add({Kind::operand, "", "", index, dtype, ct, write},
             std::string("@") + std::to_string(index) + dtype_name(dtype) + ct_code(ct) + (write ? "w" : "r"));
}
Defines& Defines::operand_vec4(int index, DType dtype, CT ct, bool write) {
  return add({Kind::operand_vec4, "", "", index, dtype, ct, write},
             std::string("@4") + std::to_string(index) + dtype_name(dtype) + ct_code(ct) + (write ? "w" : "r"));
}
Defines& Defines::subgroup(SubgroupFeature feature) {
  return add({Kind::subgroup, "", "", static_cast<int>(feature), DType::f32, CT::f32, false},
             std::string("!subgroup") + std::to_string(static_cast<int>(feature)));
}
Defines& Defines::text(const std::string& glsl) {
  return add({Kind::text, "", glsl, 0, DType::f32, CT::f32, false}, "!" + glsl);
}

std::string Defines::header() const {
  std::string h;
  for (const Entry& e : entries_) {
    switch (e.kind) {
      case Kind::flag:
        h += std::string("#define ") + e.name + " 1\n";
        break;
      case Kind::value:
      case Kind::uvalue:
      case Kind::ident:
        h += std::string("#define ") + e.name + " " + e.arg + "\n";
        break;
      case Kind::operand:
        h += operand_glsl(e.index, e.dtype, e.ct, e.write);
        break;
      case Kind::operand_vec4:
        h += operand_glsl_vec4(e.index, e.dtype, e.ct, e.write);
        break;
      case Kind::subgroup:
        h += subgroup_glsl(static_cast<SubgroupFeature>(e.index));
        break;
      case Kind::text:
        h += e.arg;
        break;
    }
  }
  return h;
}

SourceNames source_names(const std::string& source) {
  const std::string code = strip_glsl_comments(source);
  std::set<std::string> tested, words;
  std::size_t line_start = 0;
  while (line_start < code.size()) {
    std::size_t end = code.find('\n', line_start);
    if (end == std::string::npos) end = code.size();
    std::string line = code.substr(line_start, end - line_start);
    line_start = end + 1;
    std::size_t p = line.find_first_not_of(" \t");
    const bool condition = p != std::string::npos && line[p] == '#' &&
                           (line.compare(p, 3, "#if") == 0 || line.compare(p, 5, "#elif") == 0);
    for (std::size_t i = 0; i < line.size();) {
      if (!ident_char(line[i]) || std::isdigit(static_cast<unsigned char>(line[i]))) {
        // skip numbers as whole tokens
        if (std::isdigit(static_cast<unsigned char>(line[i])))
          while (i < line.size() && ident_char(line[i])) ++i;
        else
          ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && ident_char(line[j])) ++j;
      const std::string w = line.substr(i, j - i);
      words.insert(w);
      if (condition && w != "if" && w != "ifdef" && w != "ifndef" && w != "elif" && w != "defined") tested.insert(w);
      i = j;
    }
  }
  return {{tested.begin(), tested.end()}, {words.begin(), words.end()}};
}

void Defines::check(const std::string& kernel, const std::string& source) const {
  const SourceNames names = source_names(source);
  auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::binary_search(v.begin(), v.end(), n);
  };
  for (const Entry& e : entries_) {
    if (e.kind == Kind::flag && !has(names.tested, e.name))
      throw DeviceError("gltensor internal error: " + kernel + ": #define " + std::string(e.name) +
                        " is tested nowhere in the kernel's source (#if/#ifdef/defined): a misspelt variant");
    if ((e.kind == Kind::value || e.kind == Kind::uvalue || e.kind == Kind::ident) && !has(names.words, e.name))
      throw DeviceError("gltensor internal error: " + kernel + ": #define " + std::string(e.name) +
                        " is used nowhere in the kernel's source: a misspelt variant");
  }
}

}  // namespace gltensor::detail
