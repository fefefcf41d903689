// The kernel-launch layer (launch.hpp).
#include "runtime/launch.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "runtime/error_flags.hpp"
#include "runtime/profiler.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

namespace {
GLuint checked_u32(const Program& p, const char* name, std::int64_t v) {
  if (v < 0 || v > static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max()))
    throw LimitError(std::string("gltensor::") + p.kernel + ": uniform " + name + " = " + std::to_string(v) +
                     " does not fit 32 bits (tensors are limited to 32-bit element indices)");
  return static_cast<GLuint>(v);
}
GLint checked_i32(const Program& p, const char* name, std::int64_t v) {
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    throw LimitError(std::string("gltensor::") + p.kernel + ": uniform " + name + " = " + std::to_string(v) +
                     " does not fit a 32-bit int");
  return static_cast<GLint>(v);
}
}  // namespace

void Uniforms::u32(const char* name, std::int64_t v) {
  const GLuint x = checked_u32(p_, name, v);
  p_.set_uints(name, &x, 1);
}
void Uniforms::i32(const char* name, std::int64_t v) {
  const GLint x = checked_i32(p_, name, v);
  p_.set_ints(name, &x, 1);
}
void Uniforms::f32(const char* name, double v) {
  const float x = static_cast<float>(v);
  p_.set_floats(name, &x, 1);
}
void Uniforms::f32s(const char* name, std::span<const float> v) {
  if (!v.empty()) p_.set_floats(name, v.data(), static_cast<GLsizei>(v.size()));
}
void Uniforms::u32s(const char* name, std::span<const std::uint32_t> v) {
  if (!v.empty()) p_.set_uints(name, v.data(), static_cast<GLsizei>(v.size()));
}
void Uniforms::u32s(const char* name, std::initializer_list<std::int64_t> v) {
  std::vector<GLuint> x;
  for (auto e : v) x.push_back(checked_u32(p_, name, e));
  u32s(name, x);
}
void Uniforms::i32s(const char* name, std::span<const std::int32_t> v) {
  if (!v.empty()) p_.set_ints(name, v.data(), static_cast<GLsizei>(v.size()));
}
void Uniforms::uvec2(const char* name, std::uint32_t x, std::uint32_t y) {
  const GLuint v[2] = {x, y};
  p_.set_uvec(name, v, 2);
}

Launch::Launch(DeviceImpl& dev, const char* op) : dev_(dev), guard_(dev, op), op_(op) {}

Launch& Launch::program(const char* file, Defines defines, Local local) {
  const std::string& key = defines.finish_key(file, local.x, local.y, local.z);
  program_ = &dev_.programs().get_keyed(
      key, file,
      [&] {
#ifndef NDEBUG
        defines.check(file, ProgramCache::full_source(dev_.caps(), file, "", local.x, local.y, local.z));
#endif
        return defines.header();
      },
      local.x, local.y, local.z);
  return *this;
}

Launch& Launch::program(const char* file, const std::string& header, Local local) {
  program_ = &dev_.programs().get(file, header, local.x, local.y, local.z);
  return *this;
}

const Program& Launch::current_program() const {
  if (!program_) throw DeviceError(std::string("gltensor internal error: ") + op_ + ": launch without a program");
  return *program_;
}

Launch& Launch::bind(Storage& s, bool write) {
  if (nuses_ == uses_.size())
    throw DeviceError(std::string("gltensor internal error: ") + op_ + ": more than 16 operands in one launch");
  uses_[nuses_++] = {&s, write};
  return *this;
}

Launch& Launch::block(GLuint binding, Storage& s, GLintptr offset, GLsizeiptr size) {
  if (nblocks_ == blocks_.size())
    throw DeviceError(std::string("gltensor internal error: ") + op_ + ": more than 4 uniform blocks in one launch");
  blocks_[nblocks_++] = {binding, &s, offset, size};
  return *this;
}

Launch& Launch::texture(GLuint unit, GLuint texture, GLuint sampler) {
  if (ntextures_ == textures_.size())
    throw DeviceError(std::string("gltensor internal error: ") + op_ + ": more than 4 textures in one launch");
  textures_[ntextures_++] = {unit, texture, false, sampler, 0, 0, 0};
  return *this;
}

Launch& Launch::image(GLuint unit, GLuint texture, GLint level, GLenum access, GLenum format) {
  if (ntextures_ == textures_.size())
    throw DeviceError(std::string("gltensor internal error: ") + op_ + ": more than 4 textures in one launch");
  textures_[ntextures_++] = {unit, texture, true, 0, level, access, format};
  return *this;
}

Launch& Launch::loop_iterations(std::uint64_t n) {
  const std::uint64_t limit = dev_.loop_limit();
  if (limit != 0 && n > limit)
    throw LimitError(std::string("gltensor::") + op_ + ": kernel " + current_program().kernel + " would run " +
                     std::to_string(n) + " loop iterations in one invocation, more than the device allows (" +
                     std::to_string(limit) + "; internal error: the op should split its work)");
  loop_declared_ = true;
  loop_n_ = n;
  return *this;
}

void Launch::groups(std::uint64_t x, std::uint64_t y, std::uint64_t z) {
  const Program& p = current_program();
  if (!loop_declared_)
    throw DeviceError(std::string("gltensor internal error: ") + op_ + ": kernel " + p.kernel +
                      " launched without loop_iterations()");
  if (x == 0 || y == 0 || z == 0) return;
  const std::uint64_t total = std::numeric_limits<std::uint32_t>::max();
  if (x > total || y > total || z > total)
    throw LimitError(std::string("gltensor::") + op_ + ": a grid of " + std::to_string(x) + " x " + std::to_string(y) +
                     " x " + std::to_string(z) + " workgroups is too large");
  const GLuint grid[3] = {static_cast<GLuint>(x), static_cast<GLuint>(y), static_cast<GLuint>(z)};
  p.set_uvec("u_grid", grid, 3);
  const std::uint64_t mx = dev_.max_groups(0), my = dev_.max_groups(1), mz = dev_.max_groups(2);
  Profiler* prof = dev_.profiler();
  // GLTENSOR_CHECK_LOOPS: the loop-check buffer at its binding (the bindings between the operands
  // and it hold it too, read: the queue sees no write, so it adds no barrier), the declared count,
  // and a slot per dispatch.
  ErrorFlags* loops = dev_.check_loops() ? &dev_.extension<ErrorFlags>() : nullptr;
  std::size_t nuses = nuses_;
  if (loops) {
    const std::uint32_t binding = ErrorFlags::loop_binding(dev_.caps());
    if (nuses_ > binding)
      throw DeviceError(std::string("gltensor internal error: ") + op_ + ": kernel " + p.kernel + " has " +
                        std::to_string(nuses_) + " operands, no binding left for GLTENSOR_CHECK_LOOPS");
    Storage& s = loops->storage(dev_);
    while (nuses <= binding) uses_[nuses++] = {&s, false};
    const GLuint declared = static_cast<GLuint>(std::min<std::uint64_t>(loop_n_, 0xffffffffu));
    p.set_uints("u_loop_declared", &declared, 1);
  }
  for (std::uint64_t z0 = 0; z0 < z; z0 += mz)
    for (std::uint64_t y0 = 0; y0 < y; y0 += my)
      for (std::uint64_t x0 = 0; x0 < x; x0 += mx) {
        const GLuint base[3] = {static_cast<GLuint>(x0), static_cast<GLuint>(y0), static_cast<GLuint>(z0)};
        p.set_uvec("u_group_base", base, 3);
        if (loops) {
          const GLuint slot = loops->loop_slot(dev_, op_, p.kernel, loop_n_);
          p.set_uints("u_loop_slot", &slot, 1);
        }
        if (prof) prof->begin(dev_, op_, p.kernel);
        dev_.queue().dispatch(
            p, static_cast<std::uint32_t>(std::min(mx, x - x0)), static_cast<std::uint32_t>(std::min(my, y - y0)),
            static_cast<std::uint32_t>(std::min(mz, z - z0)), std::span<const BufferUse>(uses_.data(), nuses),
            std::span<const BlockUse>(blocks_.data(), nblocks_),
            std::span<const TextureUse>(textures_.data(), ntextures_));
        if (prof) prof->end(dev_);
      }
}

void Launch::invocations(std::uint64_t n) {
  const std::uint64_t lx = current_program().local_size[0];
  groups_1d((n + lx - 1) / lx);
}

void Launch::groups_1d(std::uint64_t n) {
  // Rows of equal length: fewer than `rows` workgroups past the end (65535 + 1 would be 2 x
  // 32768); workgroups past n exit on the kernel's bounds check.
  const std::uint64_t max_x = dev_.max_groups(0);
  const std::uint64_t rows = std::max<std::uint64_t>(1, (n + max_x - 1) / max_x);
  groups(n == 0 ? 0 : (n + rows - 1) / rows, rows, 1);
}

}  // namespace gltensor::detail
