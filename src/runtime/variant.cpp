// Defines and the define check (variant.hpp).
#include "runtime/variant.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "gltensor/errors.hpp"
#include "runtime/glsl_text.hpp"
#include "runtime/program_cache.hpp"

namespace gltensor::detail {

namespace {
const char* ct_code(CT ct) { return ct == CT::f32 ? "f" : "i"; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
}  // namespace

Defines::Entry& Defines::add(Kind kind, const char* name) {
  if (n_ == kMaxEntries)
    throw DeviceError(std::string("gltensor internal error: more than ") + std::to_string(kMaxEntries) +
                      " defines in one kernel variant");
  if (n_ == 0) key_.reserve(128);
  Entry& e = entries_[n_++];
  e = Entry{kind, name, 0, "", DType::f32, CT::f32, false, nullptr};
  return e;
}

void Defines::key_int(std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  key_.append(buf, r.ptr);
}

Defines& Defines::flag(const char* name, bool on) {
  if (!on) return *this;
  add(Kind::flag, name);
  key_ += name;
  key_ += ';';
  return *this;
}
Defines& Defines::value(const char* name, std::int64_t v) {
  add(Kind::value, name).v = v;
  key_ += name;
  key_ += '=';
  key_int(v);
  key_ += ';';
  return *this;
}
Defines& Defines::uvalue(const char* name, std::uint64_t v) {
  add(Kind::uvalue, name).v = static_cast<std::int64_t>(v);
  key_ += name;
  key_ += '=';
  key_int(static_cast<std::int64_t>(v));
  key_ += "u;";
  return *this;
}
Defines& Defines::ident(const char* name, const std::string& ident) { return this->ident(name, ident.c_str()); }
Defines& Defines::ident(const char* name, const char* ident) {
  add(Kind::ident, name).arg = ident;
  key_ += name;
  key_ += '=';
  key_ += ident;
  key_ += ';';
  return *this;
}
Defines& Defines::operand(int index, DType dtype, CT ct, bool write) {
  Entry& e = add(Kind::operand, "");
  e.v = index, e.dtype = dtype, e.ct = ct, e.write = write;
  key_ += '@';
  key_int(index);
  key_ += dtype_name(dtype);
  key_ += ct_code(ct);
  key_ += write ? "w;" : "r;";
  return *this;
}
Defines& Defines::operand_vec4(int index, DType dtype, CT ct, bool write) {
  Entry& e = add(Kind::operand_vec4, "");
  e.v = index, e.dtype = dtype, e.ct = ct, e.write = write;
  key_ += "@4.";
  key_int(index);
  key_ += dtype_name(dtype);
  key_ += ct_code(ct);
  key_ += write ? "w;" : "r;";
  return *this;
}
Defines& Defines::quads(const char* name, int index, DType dtype) {
  Entry& e = add(Kind::quads, name);
  e.v = index, e.dtype = dtype;
  key_ += "@q";
  key_ += name;
  key_int(index);
  key_ += dtype_name(dtype);
  key_ += ';';
  return *this;
}
Defines& Defines::quad_array(const char* name, int index) {
  add(Kind::quad_array, name).v = index;
  key_ += "@a";
  key_ += name;
  key_int(index);
  key_ += ';';
  return *this;
}
Defines& Defines::subgroup(SubgroupFeature feature) {
  add(Kind::subgroup, "").v = static_cast<int>(feature);
  key_ += "!subgroup";
  key_int(static_cast<int>(feature));
  key_ += ';';
  return *this;
}
Defines& Defines::text(const std::string& glsl) {
  add(Kind::text, "").arg = glsl.c_str();
  key_ += '!';
  key_int(static_cast<std::int64_t>(fnv1a(glsl)));
  key_ += ';';
  return *this;
}
Defines& Defines::macro(const char* signature, std::string (*body)(int), int arg) {
  Entry& e = add(Kind::macro, signature);
  e.v = arg, e.body = body;
  key_ += signature;
  key_ += ':';
  key_int(arg);
  key_ += ';';
  return *this;
}

Defines& Defines::macro(const char* signature, const std::string& body) {
  add(Kind::macro_text, signature).arg = body.c_str();
  key_ += signature;
  key_ += ':';
  key_ += body;
  key_ += ';';
  return *this;
}

const std::string& Defines::finish_key(const char* file, std::uint32_t lx, std::uint32_t ly, std::uint32_t lz) {
  key_ += '|';
  key_ += file;
  key_ += '|';
  key_int(lx);
  key_ += ',';
  key_int(ly);
  key_ += ',';
  key_int(lz);
  return key_;
}

std::string Defines::header() const {
  std::string h;
  for (std::size_t i = 0; i < n_; ++i) {
    const Entry& e = entries_[i];
    switch (e.kind) {
      case Kind::flag:
        h += std::string("#define ") + e.name + " 1\n";
        break;
      case Kind::value:
        h += std::string("#define ") + e.name + " " + std::to_string(e.v) + "\n";
        break;
      case Kind::uvalue:
        h += std::string("#define ") + e.name + " " + std::to_string(static_cast<std::uint64_t>(e.v)) + "u\n";
        break;
      case Kind::ident:
        h += std::string("#define ") + e.name + " " + e.arg + "\n";
        break;
      case Kind::operand:
        h += operand_glsl(static_cast<int>(e.v), e.dtype, e.ct, e.write);
        break;
      case Kind::operand_vec4:
        h += operand_glsl_vec4(static_cast<int>(e.v), e.dtype, e.ct, e.write);
        break;
      case Kind::quads:
        h += quad_glsl(e.name, static_cast<int>(e.v), e.dtype);
        break;
      case Kind::quad_array:
        h += "layout(std430, binding = " + std::to_string(e.v) + ") readonly buffer Quads_" + e.name + " { vec4 " +
             e.name + "[]; };\n";
        break;
      case Kind::subgroup:
        h += subgroup_glsl(static_cast<SubgroupFeature>(e.v));
        break;
      case Kind::text:
        h += e.arg;
        break;
      case Kind::macro:
        h += std::string("#define ") + e.name + " " + e.body(static_cast<int>(e.v)) + "\n";
        break;
      case Kind::macro_text:
        h += std::string("#define ") + e.name + " " + e.arg + "\n";
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
  for (std::size_t i = 0; i < n_; ++i) {
    const Entry& e = entries_[i];
    if (e.kind == Kind::flag && !has(names.tested, e.name))
      throw DeviceError("gltensor internal error: " + kernel + ": #define " + std::string(e.name) +
                        " is tested nowhere in the kernel's source (#if/#ifdef/defined): a misspelt variant");
    if ((e.kind == Kind::value || e.kind == Kind::uvalue || e.kind == Kind::ident) && !has(names.words, e.name))
      throw DeviceError("gltensor internal error: " + kernel + ": #define " + std::string(e.name) +
                        " is used nowhere in the kernel's source: a misspelt variant");
  }
}

}  // namespace gltensor::detail
