// Compute programs: compiled from glsl/ sources with a header of defines, cached in memory by
// (kernel, header, local size) and on disk as program binaries (internal).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/gl.hpp"

namespace gltensor {
struct Capabilities;
}

namespace gltensor::detail {

struct DeviceImpl;

/// FNV-1a hash (on-disk cache keys).
std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull);

/// A uniform's value as last set on a program: the setter it needs and its 32-bit words.
struct UniformValue {
  enum Kind : std::uint8_t { uints, ints, floats, uvec2, uvec3 };
  Kind kind = uints;
  std::vector<std::uint32_t> words;
  bool operator==(const UniformValue&) const = default;
};

/// A linked compute program with its uniforms. Uniforms are set through Uniforms (launch.hpp),
/// which checks every name against the names the source declares: a misspelt uniform throws,
/// one the compiler removed (declared but unused in this variant) is skipped.
struct Program {
  GLuint id = 0;
  std::string kernel;  // glsl file name, for messages
  std::uint32_t local_size[3] = {1, 1, 1};
  std::unordered_map<std::string, GLint> uniforms;  // active uniforms by name ("[0]" dropped)
  std::unordered_set<std::string> declared;         // every `uniform` name in the source

  /// Location of `name` (a string literal: cached by address); -1 where the compiler removed it.
  /// Throws DeviceError ("internal") if the source declares no such uniform.
  GLint loc(const char* name) const;
  /// Sets uniform values only when they differ from the last values set (driver calls cost).
  void set_uints(const char* name, const GLuint* v, GLsizei n) const;
  void set_ints(const char* name, const GLint* v, GLsizei n) const;
  void set_floats(const char* name, const float* v, GLsizei n) const;
  void set_uvec(const char* name, const GLuint* v, int components) const;
  /// Sets location `l` to `v` unless it holds it already (a recording's replay).
  void set_value(GLint l, const UniformValue& v) const;

  mutable std::unordered_map<const char*, GLint> loc_by_ptr;
  mutable std::unordered_map<GLint, UniformValue> last;  // by location: the values set

 private:
  void set(GLint l, UniformValue::Kind kind, const void* v, std::size_t words) const;
};

class ProgramCache {
 public:
  explicit ProgramCache(DeviceImpl& dev) : dev_(dev) {}
  /// Program for `kernel` (a glsl/ file name) with `header` prepended and the local size.
  /// Compiles on first use, or loads a matching on-disk program binary. Throws ShaderError.
  const Program& get(const std::string& kernel, const std::string& header, std::uint32_t lx, std::uint32_t ly = 1,
                     std::uint32_t lz = 1);
  /// As get(), found by a short caller-made key; `header` builds the defines only on a miss.
  template <typename HeaderFn>
  const Program& get_keyed(const std::string& key, const char* kernel, HeaderFn&& header, std::uint32_t lx,
                           std::uint32_t ly = 1, std::uint32_t lz = 1) {
    auto it = keyed_.find(key);
    if (it != keyed_.end()) return *it->second;
    const Program& p = get(kernel, header(), lx, ly, lz);
    keyed_.emplace(key, &p);
    return p;
  }
  void destroy_all();
  std::size_t size() const { return programs_.size(); }
  std::size_t binary_cache_hits() const { return binary_hits_; }

  /// The complete GLSL source of a kernel as compiled on a device with `caps`: #version, hoisted
  /// #extension lines, local size, common.glsl, `header`, the kernel with its includes resolved.
  /// `check_loops`: with CHECK_LOOPS defined before common.glsl (DeviceImpl::check_loops).
  static std::string full_source(const Capabilities& caps, const std::string& kernel, const std::string& header,
                                 std::uint32_t lx, std::uint32_t ly, std::uint32_t lz, bool check_loops = false);
  /// Compiles and links a complete compute shader source (the current context). Throws
  /// ShaderError naming `name`, the line and the driver's log.
  static GLuint compile(const std::string& name, const std::string& source);
  /// Every `uniform` name a source declares.
  static std::unordered_set<std::string> declared_uniforms(const std::string& source);

 private:
  GLuint load_binary(const std::string& path, std::uint64_t hash);
  void store_binary(const std::string& path, std::uint64_t hash, GLuint program);
  DeviceImpl& dev_;
  std::unordered_map<std::string, Program> programs_;
  std::unordered_map<std::string, const Program*> keyed_;
  std::size_t binary_hits_ = 0;
};

}  // namespace gltensor::detail
