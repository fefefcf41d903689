// Compute program cache: in memory by (kernel, defines, local size); on disk as program binaries
// (OES_get_program_binary) keyed by renderer, GL version and source hash.
#include "runtime/program_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/device_impl.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/glsl_text.hpp"
#include "runtime/settings.hpp"
#include "runtime/shader_sources.hpp"

namespace gltensor::detail {

std::uint64_t fnv1a(std::string_view s, std::uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

// A kernel source by file name: from Settings::glsl_dir where that folder has the file, else the
// embedded copy.
std::string kernel_source(const std::string& name) {
  if (const auto& dir = settings().glsl_dir; !dir.empty()) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file() && it->path().filename() == name) {
        std::ifstream f(it->path());
        return std::string(std::istreambuf_iterator<char>(f), {});
      }
  }
  const auto& src = shader_sources();
  auto it = src.find(name);
  if (it == src.end()) throw ShaderError("gltensor::ProgramCache: no kernel source named '" + name + "'", "", "");
  return std::string(it->second);
}

std::string resolve_includes(const std::string& name, int depth = 0) {
  if (depth > 8) throw ShaderError("gltensor::ProgramCache: include depth exceeded in '" + name + "'", "", "");
  std::istringstream in{kernel_source(name)};
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("#include \"", 0) == 0) {
      const auto end = line.find('"', 10);
      out += resolve_includes(line.substr(10, end - 10), depth + 1);
    } else {
      out += line;
      out += '\n';
    }
  }
  return out;
}

// Line number named by a driver's info log: Mesa "0:12(5): error", NVIDIA "0(12) : error".
int log_line(const std::string& log) {
  int a = 0, b = 0;
  if (std::sscanf(log.c_str(), "%d:%d(", &a, &b) == 2) return b;
  if (std::sscanf(log.c_str(), "%d(%d)", &a, &b) == 2) return b;
  return -1;
}

std::string source_line(const std::string& source, int n) {
  if (n <= 0) return "";
  std::istringstream in(source);
  std::string line;
  for (int i = 1; std::getline(in, line); ++i)
    if (i == n) return line;
  return "";
}

constexpr char kMagic[8] = {'G', 'L', 'T', 'B', 'I', 'N', '0', '1'};

}  // namespace

std::string ProgramCache::full_source(const Capabilities& c, const std::string& kernel, const std::string& header,
                                      std::uint32_t lx, std::uint32_t ly, std::uint32_t lz, bool check_loops) {
  // Layout: #version, #extension lines hoisted from the header and kernel (GLSL ES wants them
  // before any other token), local size, common.glsl, the header, the kernel.
  std::string body = header + "\n" + resolve_includes(kernel);
  std::string extensions, rest;
  {
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) (line.rfind("#extension", 0) == 0 ? extensions : rest) += line + "\n";
  }
  // Kernels are written in GLSL ES 3.10; desktop GLSL 4.30 accepts them (precision qualifiers
  // are allowed and ignored there).
  std::string source = c.desktop                             ? "#version 430 core\n"
                       : (c.gl_major > 3 || c.gl_minor >= 2) ? "#version 320 es\n"
                                                             : "#version 310 es\n";
  source += extensions;
  source += "#define LOCAL_X " + std::to_string(lx) + "u\n#define LOCAL_Y " + std::to_string(ly) +
            "u\n#define LOCAL_Z " + std::to_string(lz) + "u\n";
  if (check_loops)  // common.glsl's LOOP() counts (GLTENSOR_CHECK_LOOPS)
    source +=
        "#define CHECK_LOOPS 1\n#define CHECK_LOOPS_BINDING " + std::to_string(ErrorFlags::loop_binding(c)) + "\n";
  source += resolve_includes("common.glsl");
  source += rest;
  return source;
}

std::unordered_set<std::string> ProgramCache::declared_uniforms(const std::string& source) {
  // Comments removed, then every `uniform <type> <name>[...]` and `uniform <type> a, b;`
  // (kernels declare no uniform blocks).
  const std::string code = strip_glsl_comments(source);
  std::unordered_set<std::string> names;
  std::size_t pos = 0;
  while ((pos = code.find("uniform", pos)) != std::string::npos) {
    const bool word =
        (pos == 0 || !(std::isalnum(static_cast<unsigned char>(code[pos - 1])) || code[pos - 1] == '_')) &&
        pos + 7 < code.size() && std::isspace(static_cast<unsigned char>(code[pos + 7]));
    const std::size_t end = code.find(';', pos);
    if (end == std::string::npos) break;
    if (word) {
      std::istringstream decl(code.substr(pos + 7, end - pos - 7));
      std::string type, rest, name;
      decl >> type;
      if (type == "highp" || type == "mediump" || type == "lowp") decl >> type;
      std::getline(decl, rest, '\0');
      int depth = 0;
      for (char ch : rest + ",") {
        if (ch == '[') ++depth;
        if (ch == ']') --depth;
        if (depth == 0 && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) {
          name += ch;
        } else if (!name.empty() &&
                   (ch == ',' || ch == '[' || ch == '=' || std::isspace(static_cast<unsigned char>(ch)))) {
          names.insert(name);
          name.clear();
        }
      }
    }
    pos = end;
  }
  return names;
}

const Program& ProgramCache::get(const std::string& kernel, const std::string& header, std::uint32_t lx,
                                 std::uint32_t ly, std::uint32_t lz) {
  std::string key = kernel;
  key += '|';
  key += header;
  key += '|' + std::to_string(lx) + 'x' + std::to_string(ly) + 'x' + std::to_string(lz);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;

  const Capabilities& c = dev_.caps();
  // A device that checks loop lengths compiles with CHECK_LOOPS every program that can run a
  // LOOP() (fixed for the device's life, so the keys need not say it); the others are the plain
  // programs, their source and on-disk binary the same as without the mode (a check_loops entry
  // shares them with the plain entries: suite11). A launch of one still takes a loop slot and sets
  // u_loop_declared / u_loop_slot, which such a program declares under #ifdef only (skipped).
  std::string source = full_source(c, kernel, header, lx, ly, lz, false);
  if (dev_.check_loops() && glsl_reaches_loop(source)) source = full_source(c, kernel, header, lx, ly, lz, true);
  const Settings& set = settings();
  if (!set.dump_source.empty() && kernel.find(set.dump_source) != std::string::npos)
    std::fprintf(stderr, "==== %s\n%s\n", kernel.c_str(), source.c_str());

  Program prog;
  prog.kernel = kernel;
  prog.local_size[0] = lx;
  prog.local_size[1] = ly;
  prog.local_size[2] = lz;
  prog.declared = declared_uniforms(source);
  const std::filesystem::path dir = c.program_binary ? set.cache_dir : std::filesystem::path();
  std::string path;
  std::uint64_t hash = 0;
  if (!dir.empty()) {
    hash = fnv1a(source, fnv1a(c.renderer + '\n' + c.version + '\n' + c.vendor));
    char name[40];
    std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(hash));
    path = (dir / name).string();
    prog.id = load_binary(path, hash);
  }
  if (prog.id == 0) {
    prog.id = compile(kernel, source);
    if (!path.empty()) store_binary(path, hash, prog.id);
  }
  GLint n = 0;
  glGetProgramiv(prog.id, GL_ACTIVE_UNIFORMS, &n);
  for (GLint i = 0; i < n; ++i) {
    char name[256];
    GLsizei len = 0;
    GLint size = 0;
    GLenum type = 0;
    glGetActiveUniform(prog.id, static_cast<GLuint>(i), sizeof name, &len, &size, &type, name);
    std::string s(name, static_cast<std::size_t>(len));
    if (s.size() > 3 && s.compare(s.size() - 3, 3, "[0]") == 0) s.resize(s.size() - 3);
    prog.uniforms[s] = glGetUniformLocation(prog.id, name);
  }
  return programs_.emplace(key, std::move(prog)).first->second;
}

GLuint ProgramCache::compile(const std::string& name, const std::string& source) {
  GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
  const char* src = source.c_str();
  glShaderSource(sh, 1, &src, nullptr);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    GLint len = 0;
    glGetShaderiv(sh, GL_INFO_LOG_LENGTH, &len);
    std::string log(static_cast<std::size_t>(std::max(len, 1)), '\0');
    glGetShaderInfoLog(sh, len, nullptr, log.data());
    glDeleteShader(sh);
    const int line = log_line(log);
    std::string text = source_line(source, line);
    throw ShaderError("gltensor::ProgramCache: kernel '" + name + "' failed to compile" +
                          (line > 0 ? " at line " + std::to_string(line) + ": " + text : "") + "\n" + log,
                      log, text);
  }
  GLuint prog = glCreateProgram();
  glAttachShader(prog, sh);
  glProgramParameteri(prog, GL_PROGRAM_BINARY_RETRIEVABLE_HINT, GL_TRUE);
  glLinkProgram(prog);
  glDeleteShader(sh);
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  if (!ok) {
    GLint len = 0;
    glGetProgramiv(prog, GL_INFO_LOG_LENGTH, &len);
    std::string log(static_cast<std::size_t>(std::max(len, 1)), '\0');
    glGetProgramInfoLog(prog, len, nullptr, log.data());
    glDeleteProgram(prog);
    throw ShaderError("gltensor::ProgramCache: kernel '" + name + "' failed to link\n" + log, log, "");
  }
  return prog;
}

GLuint ProgramCache::load_binary(const std::string& path, std::uint64_t hash) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return 0;
  char magic[8];
  std::uint64_t h = 0;
  std::uint32_t format = 0, size = 0;
  f.read(magic, 8);
  f.read(reinterpret_cast<char*>(&h), sizeof h);
  f.read(reinterpret_cast<char*>(&format), sizeof format);
  f.read(reinterpret_cast<char*>(&size), sizeof size);
  if (!f || std::memcmp(magic, kMagic, 8) != 0 || h != hash || size == 0 || size > (256u << 20)) return 0;
  std::string data(size, '\0');
  f.read(data.data(), size);
  if (!f) return 0;
  // A format the driver lists cannot raise a GL error; a stale or corrupt binary only fails to
  // link. So no glGetError is needed (an adopted context's error flags are the application's).
  const auto& formats = dev_.binary_formats();
  if (std::find(formats.begin(), formats.end(), static_cast<GLint>(format)) == formats.end()) return 0;
  GLuint prog = glCreateProgram();
  glProgramBinary(prog, format, data.data(), static_cast<GLsizei>(size));
  GLint ok = 0;
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  dev_.clear_pending_gl_error();
  if (!ok) {  // stale or corrupt: recompile
    glDeleteProgram(prog);
    dev_.log(LogLevel::debug, "program binary " + path + " rejected; recompiling");
    return 0;
  }
  ++binary_hits_;
  return prog;
}

void ProgramCache::store_binary(const std::string& path, std::uint64_t hash, GLuint prog) {
  GLint len = 0;
  glGetProgramiv(prog, GL_PROGRAM_BINARY_LENGTH, &len);
  if (len <= 0) return;
  std::string data(static_cast<std::size_t>(len), '\0');
  GLenum format = 0;
  GLsizei got = 0;
  glGetProgramBinary(prog, len, &got, &format, data.data());
  if (got <= 0) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return;
    const std::uint64_t h = hash;
    const std::uint32_t fmt = format, size = static_cast<std::uint32_t>(got);
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    f.write(reinterpret_cast<const char*>(&fmt), sizeof fmt);
    f.write(reinterpret_cast<const char*>(&size), sizeof size);
    f.write(data.data(), got);
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

void ProgramCache::destroy_all() {
  for (auto& [k, p] : programs_) {
    glDeleteProgram(p.id);
    dev_.gl().forget_program(p.id);
  }
  programs_.clear();
  keyed_.clear();
}

GLint Program::loc(const char* name) const {
  auto it = loc_by_ptr.find(name);
  if (it != loc_by_ptr.end()) return it->second;
  GLint l = -1;
  if (auto u = uniforms.find(name); u != uniforms.end()) {
    l = u->second;
  } else if (!declared.count(name)) {
    throw DeviceError(std::string("gltensor internal error: kernel ") + kernel + " declares no uniform named '" + name +
                      "'");
  }
  return loc_by_ptr[name] = l;
}

void Program::set(GLint l, UniformValue::Kind kind, const void* v, std::size_t words) const {
  if (l < 0) return;
  UniformValue& prev = last[l];
  if (prev.kind == kind && prev.words.size() == words && std::memcmp(prev.words.data(), v, words * 4) == 0) return;
  prev.kind = kind;
  prev.words.resize(words);
  std::memcpy(prev.words.data(), v, words * 4);
  const auto n = static_cast<GLsizei>(words);
  const auto* u = prev.words.data();
  switch (kind) {
    case UniformValue::uints:
      glProgramUniform1uiv(id, l, n, u);
      break;
    case UniformValue::ints:
      glProgramUniform1iv(id, l, n, reinterpret_cast<const GLint*>(u));
      break;
    case UniformValue::floats:
      glProgramUniform1fv(id, l, n, reinterpret_cast<const float*>(u));
      break;
    case UniformValue::uvec2:
      glProgramUniform2uiv(id, l, 1, u);
      break;
    case UniformValue::uvec3:
      glProgramUniform3uiv(id, l, 1, u);
      break;
  }
}

void Program::set_uints(const char* name, const GLuint* v, GLsizei n) const {
  set(loc(name), UniformValue::uints, v, static_cast<std::size_t>(n));
}

void Program::set_ints(const char* name, const GLint* v, GLsizei n) const {
  set(loc(name), UniformValue::ints, v, static_cast<std::size_t>(n));
}

void Program::set_floats(const char* name, const float* v, GLsizei n) const {
  set(loc(name), UniformValue::floats, v, static_cast<std::size_t>(n));
}

void Program::set_uvec(const char* name, const GLuint* v, int components) const {
  set(loc(name), components == 2 ? UniformValue::uvec2 : UniformValue::uvec3, v, static_cast<std::size_t>(components));
}

void Program::set_value(GLint l, const UniformValue& v) const { set(l, v.kind, v.words.data(), v.words.size()); }

}  // namespace gltensor::detail
