// The kernel-launch layer (internal): the only path from an op to a compute dispatch.
//
//   Launch(dev, "softmax")
//       .program("softmax.comp", header, {256})      // kernel file, defines + operands, local size
//       .write(out).read(x)                          // operands in binding order, with access
//       .params(SoftmaxParams{...})                  // a typed params struct sets the uniforms
//       .loop_iterations(n)                          // worst-case loop trips of one invocation
//       .groups(gx, gy);                             // or .invocations(n) for 1-D grids
//
// Kernel variants (defines) are typed too: a Variant struct per kernel whose defines() build the
// header and the program key in one place (runtime/variant.hpp).
//
// It enters the device (thread check, current context, adopted-context state guard), checks
// the declared loop length against the device's limit (llvmpipe stops any invocation's loops
// after 65535 iterations in all, silently: ops must split longer work), splits grids larger than
// the device's workgroup counts into several dispatches (kernels read WORKGROUP_ID, GLOBAL_ID and
// GLOBAL_ID_1D from glsl/common/common.glsl, which add the launch's u_group_base), and leaves
// hazard tracking and batching to the queue.
//
// Params structs spell their uniforms in one place, a `void set(Uniforms&) const` member; a
// uniform name the kernel does not declare throws (misspellings cannot pass silently).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/queue.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

struct Storage;

/// Sets a program's uniforms (cached: unchanged values make no GL call). Values are range-checked
/// where a narrowing could hide a bug (uint uniforms must fit 32 bits).
class Uniforms {
 public:
  explicit Uniforms(const Program& p) : p_(p) {}
  void u32(const char* name, std::int64_t v);
  void i32(const char* name, std::int64_t v);
  void f32(const char* name, double v);
  void f32s(const char* name, std::span<const float> v);
  void u32s(const char* name, std::span<const std::uint32_t> v);
  void u32s(const char* name, std::initializer_list<std::int64_t> v);
  void i32s(const char* name, std::span<const std::int32_t> v);
  void uvec2(const char* name, std::uint32_t x, std::uint32_t y);
  const Program& program() const { return p_; }

 private:
  const Program& p_;
};

/// Workgroup size of a kernel.
struct Local {
  std::uint32_t x = 64, y = 1, z = 1;
};

class Launch {
 public:
  /// `op`: the public op name (errors, profiler, debug groups).
  Launch(DeviceImpl& dev, const char* op);
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  /// The program of a kernel variant (variant.hpp): found by (file, the defines' key, local
  /// size); the header is rendered only for a new key, and in debug builds every define name is
  /// then checked against the kernel's source.
  Launch& program(const char* file, Defines defines, Local local);
  /// The program: glsl file, header (defines and operand declarations from codegen.hpp). For
  /// kernels not yet converted to a Variant.
  Launch& program(const char* file, const std::string& header, Local local);
  /// As program(), found by a short key; `header()` runs only when the key is new.
  template <typename HeaderFn>
  Launch& program_keyed(const std::string& key, const char* file, HeaderFn&& header, Local local) {
    program_ = &dev_.programs().get_keyed(key, file, header, local.x, local.y, local.z);
    return *this;
  }
  const Program& current_program() const;

  /// Operands in binding order (binding = position): a tensor's storage (any type with
  /// impl()->storage, i.e. Tensor; a template so that the runtime layer needs no tensor
  /// internals), read or written.
  template <typename T>
  Launch& read(const T& t) {
    return bind(*t.impl()->storage, false);
  }
  template <typename T>
  Launch& write(const T& t) {
    return bind(*t.impl()->storage, true);
  }
  Launch& bind(Storage& s, bool write);
  /// Bytes [offset, offset + size) of a tensor's storage read as the uniform block at `binding`
  /// (offset aligned to GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT).
  template <typename T>
  Launch& uniform_block(GLuint binding, const T& t, GLintptr offset, GLsizeiptr size) {
    return block(binding, *t.impl()->storage, offset, size);
  }
  Launch& block(GLuint binding, Storage& s, GLintptr offset, GLsizeiptr size);
  /// A GL_TEXTURE_2D texture the kernel samples at texture unit `unit` with `sampler`.
  Launch& texture(GLuint unit, GLuint texture, GLuint sampler);
  /// A texture level the kernel writes through image unit `unit`.
  Launch& image(GLuint unit, GLuint texture, GLint level, GLenum access, GLenum format);

  /// Sets the uniforms through the params struct's `set(Uniforms&) const`.
  template <typename P>
  Launch& params(const P& p) {
    Uniforms u(current_program());
    p.set(u);
    return *this;
  }
  /// Worst-case loop iterations one invocation runs, all loops together (nested loops
  /// multiplied). Required before dispatching; throws LimitError if the device's limit is lower
  /// (the op should have split its work: see DeviceImpl::loop_limit).
  Launch& loop_iterations(std::uint64_t n);

  /// Dispatches x * y * z workgroups (several dispatches where an axis exceeds the device's
  /// limit; the kernel's WORKGROUP_ID counts in the whole grid).
  void groups(std::uint64_t x, std::uint64_t y = 1, std::uint64_t z = 1);
  /// Dispatches n invocations of a 1-D kernel (GLOBAL_ID_1D): rows of workgroups as a 2-D grid.
  void invocations(std::uint64_t n);
  /// Dispatches n workgroups of a kernel that numbers them WORKGROUP_ID_1D (rows as above).
  void groups_1d(std::uint64_t n);

 private:
  DeviceImpl& dev_;
  Enter guard_;
  const char* op_;
  const Program* program_ = nullptr;
  std::array<BufferUse, 16> uses_{};  // bindings (no allocation per launch)
  std::size_t nuses_ = 0;
  std::array<BlockUse, 4> blocks_{};
  std::size_t nblocks_ = 0;
  std::array<TextureUse, 4> textures_{};
  std::size_t ntextures_ = 0;
  bool loop_declared_ = false;
  std::uint64_t loop_n_ = 0;  // the declared loop iterations
};

}  // namespace gltensor::detail
