// Transfer lab (issue 21: the three-Gemm model end to end in 50 us): where the latency of a
// small upload and read-back goes on a device, measured with raw GL behind the library (its
// context, its compile path). A tiny kernel (y = x + 1 over 1024 words) and, in us per iteration
// (mean of 2000 after 50 warm-up iterations):
//   sync        kernel, fence, wait (the floor)
//   copy-read   kernel, barrier, glCopyBufferSubData into a persistently mapped buffer, fence,
//               wait, memcpy (gltensor's read-back)
//   direct-read the kernel writes the persistently mapped buffer itself, a barrier with
//               GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT, fence, wait, memcpy
//   copy-up     memcpy into a mapped ring, glCopyBufferSubData into a device buffer, barrier,
//               kernel, fence, wait (gltensor's upload)
//   direct-up   memcpy into the mapped ring, the kernel reads the ring itself, fence, wait
//   both        direct-up and direct-read together
// Then (issue 21, small35: the read-back of 0.08-0.9 MB outputs) per output size, a kernel that
// writes `words` words (grid-stride, 132 workgroups) and in us per iteration:
//   k+wait      kernel, fence, wait (client_wait: spin, then blocking)
//   k+copy      kernel, barrier, copy into the persistently mapped read buffer, fence, wait
//   k+copy+cpy  ... and memcpy into a warm host vector (gltensor's read-back)
//   k+copy+new  ... and memcpy into a fresh std::vector each time (Tensor::to_vector)
//   k+copy+par  ... the memcpy split over the library's helper threads (parallel_copy, primed
//               before the wait)
//   memcpy par  host only: parallel_copy between two warm heap vectors
//   k+copy spin ... the wait by polls only (no blocking wait)
//   k+copy blk  ... the wait by one blocking glClientWaitSync
//   k+8 pieces  the copy in 8 pieces with a fence each, each memcpy'd once its fence signaled
//               (read_to_host's ReadPieces)
//   k+direct    the kernel writes the mapped buffer (host memory over PCIe), barrier, wait, memcpy
//   memcpy map  host only: memcpy from the mapping into a warm vector (is the mapping cached?)
//   memcpy heap host only: memcpy between two warm heap vectors
// Usage: gltensor_transfer_lab [KB ...]   (read sizes; default 80 256 614 904; needs buffer storage:
// desktop GL 4.4+ or GL_EXT_buffer_storage)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/gl.hpp"
#include "runtime/host_copy.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/queue.hpp"
#include "tensor/tensor_impl.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

constexpr GLbitfield kPersistent = 0x0040, kCoherent = 0x0080, kClientStorage = 0x0200, kClientBarrier = 0x00004000;
constexpr int kWords = 1024;
using StorageFn = void(GL_APIENTRYP)(GLenum, GLsizeiptr, const void*, GLbitfield);

double us_per(int n, const std::function<void()>& f) {
  for (int i = 0; i < 50; ++i) f();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
}

void wait() {
  GLsync s = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  detail::client_wait(s);
  glDeleteSync(s);
}

}  // namespace

int reads(StorageFn storage, bool desktop, const std::vector<std::size_t>& sizes_kb);

int main(int argc, char** argv) {
  Device dev = Device::open();
  detail::DeviceImpl& d = *dev.impl();
  std::printf("device: %s (%s)\n", dev.caps().renderer.c_str(), dev.caps().version.c_str());
  StorageFn storage =
      reinterpret_cast<StorageFn>(eglGetProcAddress(dev.caps().desktop ? "glBufferStorage" : "glBufferStorageEXT"));
  if (!storage || (!dev.caps().desktop && !dev.caps().has_extension("GL_EXT_buffer_storage"))) {
    std::printf("no buffer storage on this context\n");
    return 0;
  }
  const std::string src =
      std::string(dev.caps().desktop ? "#version 430\n" : "#version 310 es\n") +
      "layout(local_size_x = 256) in;\n"
      "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
      "layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n"
      "void main() { for (uint i = gl_LocalInvocationID.x; i < 1024u; i += 256u) y[i] = x[i] + 1u; }\n";
  const GLuint prog = detail::ProgramCache::compile("transfer_lab", src);
  GLuint dev_in = 0, dev_out = 0, ring = 0, rd = 0;
  glGenBuffers(1, &dev_in);
  glGenBuffers(1, &dev_out);
  glGenBuffers(1, &ring);
  glGenBuffers(1, &rd);
  std::vector<std::uint32_t> host(kWords, 7), back(kWords);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, dev_in);
  glBufferData(GL_SHADER_STORAGE_BUFFER, kWords * 4, host.data(), GL_DYNAMIC_COPY);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, dev_out);
  glBufferData(GL_SHADER_STORAGE_BUFFER, kWords * 4, nullptr, GL_DYNAMIC_COPY);
  const GLbitfield wflags = GL_MAP_WRITE_BIT | kPersistent | kCoherent;
  const GLbitfield rflags = GL_MAP_READ_BIT | kPersistent | kCoherent;
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, ring);
  storage(GL_SHADER_STORAGE_BUFFER, kWords * 4, nullptr, wflags | kClientStorage);
  auto* ring_ptr = static_cast<std::uint32_t*>(glMapBufferRange(GL_SHADER_STORAGE_BUFFER, 0, kWords * 4, wflags));
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, rd);
  storage(GL_SHADER_STORAGE_BUFFER, kWords * 4, nullptr, rflags | kClientStorage);
  auto* rd_ptr = static_cast<const std::uint32_t*>(glMapBufferRange(GL_SHADER_STORAGE_BUFFER, 0, kWords * 4, rflags));
  if (!ring_ptr || !rd_ptr) {
    std::printf("mapping failed\n");
    return 1;
  }
  glUseProgram(prog);
  const auto run = [&](GLuint in, GLuint out) {
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, in);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, out);
    glDispatchCompute(1, 1, 1);
  };
  int bad = 0;
  std::uint32_t tick = 0;
  const auto check = [&](const std::uint32_t* p, std::uint32_t want) {
    if (p[0] != want || p[kWords - 1] != want) ++bad;
  };
  const int n = 2000;
  const auto put = [&] {  // the next host data into the mapped ring
    ++tick;
    for (auto& v : host) v = tick;
    std::memcpy(ring_ptr, host.data(), kWords * 4);
  };
  const auto copy = [](GLuint src, GLuint dst) {
    glBindBuffer(GL_COPY_READ_BUFFER, src);
    glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, kWords * 4);
  };
  std::printf("sync:        %8.2f us\n", us_per(n, [&] {
                run(dev_in, dev_out);
                wait();
              }));
  std::printf("copy-read:   %8.2f us\n", us_per(n, [&] {
                run(dev_in, dev_out);
                glMemoryBarrier(GL_ALL_BARRIER_BITS);
                copy(dev_out, rd);
                wait();
                std::memcpy(back.data(), rd_ptr, kWords * 4);
                check(back.data(), 8);
              }));
  std::printf("direct-read: %8.2f us\n", us_per(n, [&] {
                run(dev_in, rd);
                glMemoryBarrier(kClientBarrier);
                wait();
                std::memcpy(back.data(), rd_ptr, kWords * 4);
                check(back.data(), 8);
              }));
  std::printf("copy-up:     %8.2f us\n", us_per(n, [&] {
                put();
                copy(ring, dev_in);
                glMemoryBarrier(GL_ALL_BARRIER_BITS);
                run(dev_in, dev_out);
                wait();
              }));
  std::printf("direct-up:   %8.2f us\n", us_per(n, [&] {
                put();
                run(ring, dev_out);
                wait();
              }));
  std::printf("both:        %8.2f us\n", us_per(n, [&] {
                put();
                run(ring, rd);
                glMemoryBarrier(kClientBarrier);
                wait();
                std::memcpy(back.data(), rd_ptr, kWords * 4);
                check(back.data(), tick + 1);
              }));
  std::printf("copy-both:   %8.2f us\n", us_per(n, [&] {
                put();
                copy(ring, dev_in);
                glMemoryBarrier(GL_ALL_BARRIER_BITS);
                run(dev_in, dev_out);
                glMemoryBarrier(GL_ALL_BARRIER_BITS);
                copy(dev_out, rd);
                wait();
                std::memcpy(back.data(), rd_ptr, kWords * 4);
                check(back.data(), tick + 1);
              }));
  // Where the upload's copy goes (issue 21, e2e3): without the barrier after it (the library
  // issues none: a copy needs no glMemoryBarrier before a shader reads its destination); submitted
  // at once (glFlush) while the host does a model run's host work (`busy`, 4 us here) before the
  // dispatch, against the same host work without the early submission; glBufferSubData into the
  // device buffer; a persistently mapped write-only buffer without GL_CLIENT_STORAGE_BIT (the
  // driver may place it in device memory, written by the host through the BAR) read by the kernel.
  const auto busy = [] {
    const auto until = Clock::now() + std::chrono::microseconds(4);
    while (Clock::now() < until) {
    }
  };
  std::printf("copy-up-nb:  %8.2f us\n", us_per(n, [&] {
                put();
                copy(ring, dev_in);
                run(dev_in, dev_out);
                wait();
              }));
  std::printf("up+4us:      %8.2f us\n", us_per(n, [&] {
                put();
                copy(ring, dev_in);
                busy();
                run(dev_in, dev_out);
                wait();
              }));
  std::printf("up,flush+4us:%8.2f us\n", us_per(n, [&] {
                put();
                copy(ring, dev_in);
                glFlush();
                busy();
                run(dev_in, dev_out);
                wait();
              }));
  std::printf("subdata-up:  %8.2f us\n", us_per(n, [&] {
                ++tick;
                for (auto& v : host) v = tick;
                glBindBuffer(GL_COPY_WRITE_BUFFER, dev_in);
                glBufferSubData(GL_COPY_WRITE_BUFFER, 0, kWords * 4, host.data());
                run(dev_in, dev_out);
                wait();
              }));
  GLuint wc = 0;
  glGenBuffers(1, &wc);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, wc);
  storage(GL_SHADER_STORAGE_BUFFER, kWords * 4, nullptr, wflags);
  auto* wc_ptr = static_cast<std::uint32_t*>(glMapBufferRange(GL_SHADER_STORAGE_BUFFER, 0, kWords * 4, wflags));
  if (wc_ptr) {
    std::printf("wc-up:       %8.2f us\n", us_per(n, [&] {
                  ++tick;
                  for (auto& v : host) v = tick;
                  std::memcpy(wc_ptr, host.data(), kWords * 4);
                  run(wc, dev_out);
                  wait();
                }));
    std::printf("wc-both:     %8.2f us\n", us_per(n, [&] {
                  ++tick;
                  for (auto& v : host) v = tick;
                  std::memcpy(wc_ptr, host.data(), kWords * 4);
                  run(wc, dev_out);
                  glMemoryBarrier(GL_ALL_BARRIER_BITS);
                  copy(dev_out, rd);
                  wait();
                  std::memcpy(back.data(), rd_ptr, kWords * 4);
                  check(back.data(), tick + 1);
                }));
  }
  glDeleteBuffers(1, &wc);
  std::printf("wrong results: %d\n", bad);
  glUseProgram(0);
  GLuint bufs[] = {dev_in, dev_out, ring, rd};
  glDeleteBuffers(4, bufs);
  glDeleteProgram(prog);
  d.gl().invalidate();
  std::vector<std::size_t> kb;
  for (int i = 1; i < argc; ++i) {
    const long v = std::atol(argv[i]);
    if (v < 1) {
      std::printf("read sizes are KB >= 1, got '%s'\n", argv[i]);
      return 2;
    }
    kb.push_back(static_cast<std::size_t>(v));
  }
  if (kb.empty()) kb = {80, 256, 614, 904};
  const int bad_reads = reads(storage, dev.caps().desktop, kb);
  d.gl().invalidate();
  return bad || bad_reads ? 1 : 0;
}

int reads(StorageFn storage, bool desktop, const std::vector<std::size_t>& sizes_kb) {
  int bad_all = 0;
  const std::string src =
      std::string(desktop ? "#version 430\n" : "#version 310 es\n") +
      "layout(local_size_x = 256) in;\n"
      "layout(std430, binding = 0) writeonly buffer Y { uint y[]; };\n"
      "uniform uint u_n;\n"
      "uniform uint u_v;\n"
      "void main() { for (uint i = gl_GlobalInvocationID.x; i < u_n; i += 256u * gl_NumWorkGroups.x) "
      "y[i] = i + u_v; }\n";
  const GLuint prog = detail::ProgramCache::compile("transfer_lab_reads", src);
  glUseProgram(prog);
  const GLint un = glGetUniformLocation(prog, "u_n"), uv = glGetUniformLocation(prog, "u_v");
  const GLbitfield rflags = GL_MAP_READ_BIT | kPersistent | kCoherent;
  for (const std::size_t kbytes : sizes_kb) {
    const std::size_t words = kbytes * 1024 / 4, bytes = words * 4;
    GLuint out = 0, rd = 0;
    glGenBuffers(1, &out);
    glGenBuffers(1, &rd);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, out);
    glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_COPY);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, rd);
    storage(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(bytes), nullptr, rflags | kClientStorage);
    const auto* rd_ptr = static_cast<const std::uint32_t*>(
        glMapBufferRange(GL_SHADER_STORAGE_BUFFER, 0, static_cast<GLsizeiptr>(bytes), rflags));
    if (!rd_ptr) {
      std::printf("mapping of %zu KB failed\n", kbytes);
      return 1;
    }
    std::vector<std::uint32_t> back(words), heap(words, 3);
    std::uint32_t v = 0;
    int bad = 0;
    const auto kernel = [&](GLuint dst) {
      glUniform1ui(un, static_cast<GLuint>(words));
      glUniform1ui(uv, ++v);
      glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, dst);
      glDispatchCompute(132, 1, 1);
    };
    const auto copy = [&] {
      glMemoryBarrier(GL_ALL_BARRIER_BITS);
      glBindBuffer(GL_COPY_READ_BUFFER, out);
      glBindBuffer(GL_COPY_WRITE_BUFFER, rd);
      glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(bytes));
    };
    const auto check = [&](const std::uint32_t* p) {
      if (p[0] != v || p[words - 1] != words - 1 + v) ++bad;
    };
    const int n = 300;
    std::printf("reads of %zu KB (us per iteration, %d iterations):\n", kbytes, n);
    std::printf("  k+wait      %8.2f\n", us_per(n, [&] {
                  kernel(out);
                  wait();
                }));
    std::printf("  k+copy      %8.2f\n", us_per(n, [&] {
                  kernel(out);
                  copy();
                  wait();
                }));
    std::printf("  k+copy+cpy  %8.2f\n", us_per(n, [&] {
                  kernel(out);
                  copy();
                  wait();
                  std::memcpy(back.data(), rd_ptr, bytes);
                  check(back.data());
                }));
    std::printf("  k+copy+new  %8.2f\n", us_per(n, [&] {
                  kernel(out);
                  copy();
                  wait();
                  std::vector<std::uint32_t> fresh(words);
                  std::memcpy(fresh.data(), rd_ptr, bytes);
                  check(fresh.data());
                }));
    std::printf("  k+copy+par  %8.2f\n", us_per(n, [&] {  // read_to_host's helpers (host_copy.hpp)
                  kernel(out);
                  copy();
                  detail::prime_copy_helpers();
                  wait();
                  detail::parallel_copy(back.data(), rd_ptr, bytes);
                  check(back.data());
                }));
    std::printf("  memcpy par  %8.2f\n", us_per(n, [&] { detail::parallel_copy(back.data(), heap.data(), bytes); }));
    std::printf("  k+copy spin %8.2f\n", us_per(n, [&] {
                  kernel(out);
                  copy();
                  GLsync s = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
                  GLenum r = glClientWaitSync(s, GL_SYNC_FLUSH_COMMANDS_BIT, 0);
                  while (r == GL_TIMEOUT_EXPIRED) r = glClientWaitSync(s, 0, 0);
                  glDeleteSync(s);
                  std::memcpy(back.data(), rd_ptr, bytes);
                  check(back.data());
                }));
    std::printf("  k+copy blk  %8.2f\n", us_per(n, [&] {
                  kernel(out);
                  copy();
                  GLsync s = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
                  glClientWaitSync(s, GL_SYNC_FLUSH_COMMANDS_BIT, 1000000000ull);
                  glDeleteSync(s);
                  std::memcpy(back.data(), rd_ptr, bytes);
                  check(back.data());
                }));
    std::printf("  k+8 pieces  %8.2f\n", us_per(n, [&] {  // read_to_host's ReadPieces
                  kernel(out);
                  glMemoryBarrier(GL_ALL_BARRIER_BITS);
                  glBindBuffer(GL_COPY_READ_BUFFER, out);
                  glBindBuffer(GL_COPY_WRITE_BUFFER, rd);
                  const std::size_t piece = (bytes / 8 + 255) / 256 * 256;
                  GLsync f[8] = {};
                  std::size_t ends[8] = {};
                  int nf = 0;
                  for (std::size_t at = 0; at < bytes;) {
                    const std::size_t k = std::min(piece, bytes - at);
                    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(at),
                                        static_cast<GLintptr>(at), static_cast<GLsizeiptr>(k));
                    at += k;
                    f[nf] = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
                    ends[nf++] = at;
                  }
                  glFlush();
                  std::size_t at = 0;
                  for (int i = 0; i < nf; ++i) {
                    detail::client_wait(f[i]);
                    glDeleteSync(f[i]);
                    std::memcpy(reinterpret_cast<unsigned char*>(back.data()) + at,
                                reinterpret_cast<const unsigned char*>(rd_ptr) + at, ends[i] - at);
                    at = ends[i];
                  }
                  check(back.data());
                }));
    std::printf("  k+direct    %8.2f\n", us_per(n, [&] {
                  kernel(rd);
                  glMemoryBarrier(kClientBarrier);
                  wait();
                  std::memcpy(back.data(), rd_ptr, bytes);
                  check(back.data());
                }));
    std::printf("  memcpy map  %8.2f\n", us_per(n, [&] { std::memcpy(back.data(), rd_ptr, bytes); }));
    std::printf("  memcpy heap %8.2f\n", us_per(n, [&] { std::memcpy(back.data(), heap.data(), bytes); }));
    std::printf("  wrong results: %d\n", bad);
    bad_all += bad;
    glDeleteBuffers(1, &out);
    glDeleteBuffers(1, &rd);
  }
  glUseProgram(0);
  glDeleteProgram(prog);
  return bad_all;
}
