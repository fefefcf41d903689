// Dispatch recording, hazard barriers, fence-based batches, split grids.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/device_impl.hpp"

namespace gltensor::detail {

std::uint32_t DeviceImpl::max_groups(int axis) const {
  std::uint32_t m = static_cast<std::uint32_t>(std::max(1, caps.max_workgroup_count[axis]));
  if (dispatch_limit != 0) m = std::min(m, dispatch_limit);
  return m;
}
std::uint32_t DeviceImpl::max_groups_x() const { return max_groups(0); }

bool DeviceImpl::subgroup_features(std::uint32_t need) const {
  need |= GL_SUBGROUP_FEATURE_BASIC_BIT_KHR;
  if (!caps.subgroup || (caps.subgroup_features & need) != need || !(caps.subgroup_stages & GL_COMPUTE_SHADER_BIT))
    return false;
  const char* e = std::getenv("GLTENSOR_SUBGROUPS");
  return !(e && *e == '0');
}
bool DeviceImpl::subgroup_arithmetic() const { return subgroup_features(GL_SUBGROUP_FEATURE_ARITHMETIC_BIT_KHR); }

void DeviceImpl::dispatch(const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                          std::span<const BufferUse> uses) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  // GLTENSOR_FULL_BARRIERS=1: a barrier before every dispatch (diagnoses hazard tracking).
  static const bool full_barriers = [] {
    const char* e = std::getenv("GLTENSOR_FULL_BARRIERS");
    return e && *e == '1';
  }();
  bool need_barrier = full_barriers && dispatches > 0;
  for (const auto& u : uses) {
    const GLuint b = u.storage->buffer();
    if (written_since_barrier.count(b) || (u.write && read_since_barrier.count(b))) need_barrier = true;
  }
  if (need_barrier) {
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    ++barriers;
    written_since_barrier.clear();
    read_since_barrier.clear();
  }
  if (bound_program != p.id) {
    glUseProgram(p.id);
    bound_program = p.id;
  }
  for (std::size_t i = 0; i < uses.size(); ++i) {
    const GLuint b = uses[i].storage->buffer();
    if (i < bound_ssbo.size() && bound_ssbo[i] == b) continue;
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, static_cast<GLuint>(i), b);
    if (i < bound_ssbo.size()) bound_ssbo[i] = b;
  }
  glDispatchCompute(gx, gy, gz);
  ++dispatches;
  for (const auto& u : uses) {
    const GLuint b = u.storage->buffer();
    u.storage->use_batch = batch;
    if (u.write) {
      written_since_barrier.insert(b);
      u.storage->write_batch = batch;
    } else {
      read_since_barrier.insert(b);
    }
  }
#ifndef NDEBUG
  check_gl("dispatch");
#endif
  if (++batch_dispatches >= auto_flush) flush();
}

void DeviceImpl::dispatch_1d(const Program& p, std::uint64_t invocations, std::span<const BufferUse> uses) {
  if (invocations == 0) return;
  // One dispatch: a row of workgroups, or rows of max_groups_x() workgroups (GLOBAL_ID_1D in
  // the shader flattens them; invocations past the end exit on their bounds check). Only grids
  // of more than 65535 x 65535 workgroups (or the test limit squared) are split into several dispatches.
  const std::uint64_t lx = p.local_size[0];
  const std::uint64_t groups = (invocations + lx - 1) / lx;
  // Rows of equal length: fewer than `rows` workgroups past the end (65535 + 1 would be 2 x 32768).
  const std::uint64_t max_x = max_groups_x();
  const std::uint64_t rows = (groups + max_x - 1) / max_x;
  const std::uint64_t gx = (groups + rows - 1) / rows;
  const std::uint64_t max_rows = max_groups(1);
  for (std::uint64_t y0 = 0; y0 < rows; y0 += max_rows) {
    p.set_uint("u_base", static_cast<GLuint>(y0 * gx * lx));
    dispatch(p, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(std::min(max_rows, rows - y0)), 1, uses);
  }
}

void DeviceImpl::barrier_for_host(GLuint buffer) {
  if (written_since_barrier.count(buffer) || read_since_barrier.count(buffer)) {
    glMemoryBarrier(GL_ALL_BARRIER_BITS);
    ++barriers;
    written_since_barrier.clear();
    read_since_barrier.clear();
  }
}

void DeviceImpl::flush() {
  if (batch_dispatches == 0) return;
  // Make this batch's shader writes visible to whatever follows: later dispatches, copies and
  // mapped reads of the host.
  glMemoryBarrier(GL_ALL_BARRIER_BITS);
  ++barriers;
  written_since_barrier.clear();
  read_since_barrier.clear();
  GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  glFlush();
  fences.emplace_back(batch, fence);
  ++batch;
  batch_dispatches = 0;
}

void DeviceImpl::wait_batch(std::uint64_t batch_id) {
  if (batch_id <= completed_batch) return;
  if (batch_id >= batch) flush();
  while (!fences.empty() && fences.front().first <= batch_id) {
    auto [id, fence] = fences.front();
    for (;;) {
      const GLenum r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 1000000000ull);
      if (r == GL_ALREADY_SIGNALED || r == GL_CONDITION_SATISFIED) break;
      if (r == GL_WAIT_FAILED) {
        check_gl("wait");
        throw DeviceError("gltensor::wait: glClientWaitSync failed (context lost?)");
      }
    }
    glDeleteSync(fence);
    fences.pop_front();
    completed_batch = id;
  }
}

void DeviceImpl::synchronize_fences_only() {
  flush();
  if (!fences.empty()) wait_batch(fences.back().first);
}

void DeviceImpl::poll_fences() {
  while (!fences.empty()) {
    GLint status = 0;
    glGetSynciv(fences.front().second, GL_SYNC_STATUS, 1, nullptr, &status);
    if (status != GL_SIGNALED) break;
    glDeleteSync(fences.front().second);
    completed_batch = fences.front().first;
    fences.pop_front();
  }
}

void DeviceImpl::synchronize() {
  flush();
  if (!fences.empty()) wait_batch(fences.back().first);
  check_index_errors();
}

Storage& DeviceImpl::index_flag_storage() {
  if (!index_flag) {
    index_flag = std::make_unique<Storage>();  // no dev: freed with the device, not the pool
    glGenBuffers(1, &index_flag->block.buffer);
    index_flag->block.capacity = 4;
    const GLuint zero = 0;
    glBindBuffer(GL_COPY_WRITE_BUFFER, index_flag->block.buffer);
    glBufferData(GL_COPY_WRITE_BUFFER, 4, &zero, GL_DYNAMIC_COPY);
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  }
  return *index_flag;
}

void DeviceImpl::check_index_errors() {
  if (index_checks.empty() || !index_flag) return;
  std::string failed;
  bool pending = false;
  for (const auto& [b, op] : index_checks) {
    if (b <= completed_batch)
      failed = failed.empty() ? op : failed;
    else
      pending = true;
  }
  if (failed.empty()) return;
  const GLuint buf = index_flag->buffer();
  barrier_for_host(buf);
  glBindBuffer(GL_COPY_READ_BUFFER, buf);
  GLuint v = 0;
  if (const void* p = glMapBufferRange(GL_COPY_READ_BUFFER, 0, 4, GL_MAP_READ_BIT)) {
    std::memcpy(&v, p, 4);
    glUnmapBuffer(GL_COPY_READ_BUFFER);
  }
  glBindBuffer(GL_COPY_READ_BUFFER, 0);
  if (!pending) index_checks.clear();
  if (v != 0) {
    if (pending) synchronize_fences_only();
    const GLuint zero = 0;
    glBindBuffer(GL_COPY_WRITE_BUFFER, buf);
    glBufferSubData(GL_COPY_WRITE_BUFFER, 0, 4, &zero);
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    index_checks.clear();
    throw IndexError("gltensor::" + failed +
                     ": an index was out of range for the indexed dim (detected on the GPU; "
                     "the affected elements were left unwritten)");
  }
}

}  // namespace gltensor::detail
