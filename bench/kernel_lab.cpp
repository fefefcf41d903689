// Kernel lab: times kernels in isolation, so that variants can be compared on one device in one
// run. Not part of the test suite (its --check runs in ctest: kernel_lab_check).
// - Mode variants (kernel_lab_variants.cpp): the library's own kernels (matmul, elementwise add)
//   through the launch layer, the candidates being their Variants, each as a ratio to the op's
//   own (planned) choice.
// - The other modes: candidate GLSL formulations not yet in the library (elementwise add, sum,
//   matmul tile shapes, conv stages), bench/lab/*.comp (embedded at build time), each with the
//   #defines that make a variant, compiled by the library's ProgramCache::compile and
//   dispatched raw, outside the library's dispatch path.
// Usage: gltensor_kernel_lab [--check] [FILTER]
//   FILTER   runs the modes whose name contains FILTER: variants, warp (warp:N: N^3 only), add, sum,
//            ceiling (GPUs only: the warp matmul kernel's FMA rate without global loads), splitk,
//            matmul, regmm, bisect (all devices), conv, bufs (GPUs only); asm, hints, offsets,
//            stream, big, addvariants, pages, cudamem, midsize only when named exactly (hints,
//            offsets, cudamem and midsize on GPUs only; cudamem: runtime/cuda_memory.hpp).
//            No FILTER: every mode that a plain filter selects. -PART: those but the ones that
//            FILTER PART runs (--check -variants: ctest's kernel_lab_check, all but the variants
//            mode, which kernel_lab_check_loops runs; addvariants stays).
//   LAB_CANDS (environment): modes variants, warp and splitk run only the candidates whose name
//            contains one of its '|'-separated parts (and the library's own row).
//   LAB_KMAJOR (environment, warp:N on GPUs): 1 K-major B too, 2 K-major B only. LAB_SHAPES (warp
//            on GPUs): comma-separated MxNxK shapes instead of the default list, 't' after one for
//            K-major B (e.g. 256x4096x4096,4096x4096x1024t).
//   --check  every mode (FILTER as above, but asm, hints and offsets included and on any
//            device) at tiny sizes with one dispatch per measurement: compiles every candidate,
//            checks results; exits 1 if a candidate fails to compile, a result is wrong or a
//            bench/lab kernel went unused.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "kernel_lab_variants.hpp"
#include "lab_sources.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/gl.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"
#include "runtime/timer_query.hpp"
#include "tensor/tensor_impl.hpp"

using namespace gltensor;

namespace {

Device* g_dev = nullptr;
bool g_check = false;          // --check: tiny sizes, one dispatch per measurement
int g_failures = 0;            // failed compiles and wrong results
std::set<std::string> g_used;  // bench/lab files compiled

// A bench/lab kernel as compiled: #version (310 es, or 320 es as the library uses where it can),
// the variant's #defines, the file.
std::string lab_source(const char* file, const std::string& defines, bool es320 = false) {
  const auto& sources = lab::lab_sources();
  const auto it = sources.find(file);
  if (it == sources.end()) throw std::runtime_error(std::string("kernel lab: no bench/lab/") + file);
  g_used.insert(file);
  return std::string(es320 ? "#version 320 es\n" : "#version 310 es\n") + defines + std::string(it->second);
}

// The library's compile path; a candidate that does not compile is reported and skipped (0).
GLuint compile(const std::string& name, const std::string& source) {
  try {
    return detail::ProgramCache::compile(name, source);
  } catch (const ShaderError& e) {
    std::printf("%s\n", e.what());
    ++g_failures;
    return 0;
  }
}

// Prints WRONG (and counts a failure) where `ok` is false.
const char* verdict(bool ok) {
  if (ok) return "";
  ++g_failures;
  return "WRONG";
}

// The lab binds programs and buffers behind the library's queue: it forgets what it bound.
void use(GLuint prog) {
  glUseProgram(prog);
  g_dev->impl()->gl().invalidate();
}

void bind(std::initializer_list<GLuint> bufs) {
  GLuint i = 0;
  for (GLuint b : bufs) glBindBufferBase(GL_SHADER_STORAGE_BUFFER, i++, b);
  g_dev->impl()->gl().invalidate();
}

// The launch layer's grid uniforms (glsl/common/common.glsl: u_grid, u_group_base) of a library
// program dispatched raw as gx x gy x gz workgroups from workgroup 0, while in scope; the values
// the library set come back at the end (its Program caches them and would not set them again).
class LibraryGrid {
 public:
  LibraryGrid(GLuint prog, GLuint gx, GLuint gy, GLuint gz) : prog_(prog) {
    grid_ = glGetUniformLocation(prog, "u_grid");
    base_ = glGetUniformLocation(prog, "u_group_base");
    if (grid_ >= 0) {
      glGetUniformuiv(prog, grid_, saved_grid_);
      glProgramUniform3ui(prog, grid_, gx, gy, gz);
    }
    if (base_ >= 0) {
      glGetUniformuiv(prog, base_, saved_base_);
      glProgramUniform3ui(prog, base_, 0, 0, 0);
    }
  }
  ~LibraryGrid() {
    if (grid_ >= 0) glProgramUniform3uiv(prog_, grid_, 1, saved_grid_);
    if (base_ >= 0) glProgramUniform3uiv(prog_, base_, 1, saved_base_);
  }
  LibraryGrid(const LibraryGrid&) = delete;
  LibraryGrid& operator=(const LibraryGrid&) = delete;

 private:
  GLuint prog_;
  GLint grid_ = -1, base_ = -1;
  GLuint saved_grid_[3] = {}, saved_base_[3] = {};
};

// The program the library's last dispatch left bound.
GLuint library_program() {
  GLint prog = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &prog);
  return static_cast<GLuint>(prog);
}

// The matmul kernel the library is forced to use while in scope (Settings::matmul_kernel, i.e.
// GLTENSOR_MATMUL_KERNEL, read once at start).
class ForceMatmulKernel {
 public:
  explicit ForceMatmulKernel(const char* kernel) : saved_(detail::settings().matmul_kernel) {
    detail::settings().matmul_kernel = detail::parse_matmul_kernel(kernel);
  }
  ~ForceMatmulKernel() { detail::settings().matmul_kernel = saved_; }
  ForceMatmulKernel(const ForceMatmulKernel&) = delete;
  ForceMatmulKernel& operator=(const ForceMatmulKernel&) = delete;

 private:
  detail::MatmulKernelSetting saved_;
};

GLuint buffer(std::size_t bytes, const void* data) {
  GLuint b = 0;
  glGenBuffers(1, &b);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, b);
  glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_COPY);
  if (data) {  // via a staging buffer, so that the device buffer is never host-written
    GLuint s = 0;
    glGenBuffers(1, &s);
    glBindBuffer(GL_COPY_READ_BUFFER, s);
    glBufferData(GL_COPY_READ_BUFFER, static_cast<GLsizeiptr>(bytes), data, GL_STREAM_DRAW);
    glBindBuffer(GL_COPY_WRITE_BUFFER, b);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(bytes));
    glDeleteBuffers(1, &s);
  }
  return b;
}

std::vector<float> read(GLuint b, std::size_t count) {
  GLuint s = 0;
  glGenBuffers(1, &s);
  glBindBuffer(GL_COPY_WRITE_BUFFER, s);
  glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(count * 4), nullptr, GL_STREAM_READ);
  glBindBuffer(GL_COPY_READ_BUFFER, b);
  glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(count * 4));
  std::vector<float> out(count);
  void* p = glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(count * 4), GL_MAP_READ_BIT);
  std::memcpy(out.data(), p, count * 4);
  glUnmapBuffer(GL_COPY_WRITE_BUFFER);
  glDeleteBuffers(1, &s);
  return out;
}

// Median over 5 batches of `reps` dispatches (barrier between dispatches), in ms per dispatch.
// --check: one batch of one dispatch (after the warm-up one).
double time_ms(const std::function<void()>& once, int reps, bool barriers = true) {
  const int batches = g_check ? 1 : 5;
  if (g_check) reps = 1;
  once();
  glFinish();
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      once();
      if (barriers) glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    }
    glFinish();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// f32 -> f16 bits (round to nearest even via the library's dtype conversion), and the value back.
std::uint16_t detail_f16(float x, float& back) {
  std::uint16_t h = f32_to_f16(x);
  back = f16_to_f32(h);
  return h;
}

// ---------------------------------------------------------------- elementwise add, 2^26 floats
// bench/lab/quad.comp: `per_thread` quads per invocation (1: run_one, 4: run_four, 0: run_stride).
std::string quad_source(GLuint local, bool qualified, const char* op, GLuint per_thread = 1) {
  const char* run = per_thread == 1 ? "run_one" : per_thread == 4 ? "run_four" : "run_stride";
  return lab_source("quad.comp", "#define LOCAL " + std::to_string(local) + "\n" +
                                     (qualified ? "#define QUALIFIED 1\n" : "") + "#define OP " + op +
                                     "\n#define RUN " + run + "\n");
}

void lab_add(bool small) {
  const std::size_t n = g_check ? (1u << 14) : small ? (1u << 20) : (1u << 26), n4 = n / 4;
  const std::size_t step = g_check ? 1 : 4099;  // elements checked
  auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data()), C = buffer(n * 4, nullptr);
  struct V {
    const char* name;
    const char* op;            // quad.comp's OP
    GLuint local, per_thread;  // vec4s per invocation; 0 = grid-stride with 132*16 groups
    bool qual;
    double bytes = 12;  // per element
    bool barrier = true;
  };
  std::vector<V> vs = {{"add vec4x1 wg256", "op_add", 256, 1, false},
                       {"add vec4x1 wg256 ro/wo", "op_add", 256, 1, true},
                       {"add vec4x1 wg128", "op_add", 128, 1, false},
                       {"add vec4x1 wg512", "op_add", 512, 1, false},
                       {"add vec4x1 wg1024", "op_add", 1024, 1, false},
                       {"add vec4x4 wg256", "op_add", 256, 4, false},
                       {"add vec4x4 wg256 ro/wo", "op_add", 256, 4, true},
                       {"add gridstride wg256", "op_add", 256, 0, true},
                       {"add vec4x1 no barriers", "op_add", 256, 1, true, 12, false},
                       {"copy vec4x1", "op_copy", 256, 1, true, 8},
                       {"fill vec4x1", "op_fill", 256, 1, true, 4},
                       {"read vec4x1 (sum into c[0] if 0)", "op_read", 256, 1, true, 4}};
  for (const V& v : vs) {
    GLuint p = compile(v.name, quad_source(v.local, v.qual, v.op, v.per_thread));
    if (!p) continue;
    use(p);
    glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(n4));
    bind({A, B, C});
    GLuint groups =
        v.per_thread ? static_cast<GLuint>((n4 + v.local * v.per_thread - 1) / (v.local * v.per_thread)) : 132u * 16u;
    GLuint gx = groups, gy = 1;
    while (gx > 65535u) {
      gx = (gx + 1) / 2;
      gy *= 2;
    }
    double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, small ? 200 : 20, v.barrier);
    auto hc = read(C, n);
    int bad = 0;
    const std::string op = v.op;
    for (std::size_t i = 0; i < n; i += step) {
      if (op == "op_add") bad += hc[i] != ha[i] + hb[i];
      if (op == "op_copy") bad += hc[i] != ha[i];
      if (op == "op_fill") bad += hc[i] != static_cast<float>(static_cast<GLuint>(i / 4));
    }
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s %s\n", v.name, n, ms, v.bytes * n / ms * 1e-6, verdict(!bad));
    glDeleteProgram(p);
  }
  // gltensor::add, then its program as left bound (uniforms, bindings) dispatched raw on the
  // library's buffers and on the lab's: the library's add vs the raw kernels above.
  {
    Generator gen(3);
    Tensor ta = randn(*g_dev, {std::int64_t(n)}, gen), tb = randn(*g_dev, {std::int64_t(n)}, gen);
    double ms = time_ms([&] { Tensor c = add(ta, tb); }, small ? 200 : 20);
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s\n", "gltensor::add", n, ms, 12.0 * n / ms * 1e-6);
    Tensor keep = add(ta, tb);
    g_dev->synchronize();
    const GLuint prog = library_program();
    // The launch's 1-D grid: rows of equal length (2 x 32768 for 2^26); and 65535 + 65535 (half empty).
    const GLuint groups = static_cast<GLuint>(n / 4 / 256), gy = (groups + 65534u) / 65535u,
                 gx = (groups + gy - 1) / gy;
    {
      LibraryGrid grid(prog, gx, gy, 1);
      ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, small ? 200 : 20);
    }
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s\n", "add library program raw", n, ms, 12.0 * n / ms * 1e-6);
    if (gy > 1) {
      LibraryGrid grid(prog, 65535u, gy, 1);
      ms = time_ms([&] { glDispatchCompute(65535u, gy, 1); }, small ? 200 : 20);
      std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s\n", "add library program 65535 x 2", n, ms, 12.0 * n / ms * 1e-6);
    }
    bind({C, A, B});
    {
      LibraryGrid grid(prog, gx, gy, 1);
      ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, small ? 200 : 20);
    }
    auto hc = read(C, n);
    int bad = 0;
    for (std::size_t i = 0; i < n; i += step) bad += hc[i] != ha[i] + hb[i];
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s %s\n", "add library program lab bufs", n, ms, 12.0 * n / ms * 1e-6,
                verdict(!bad));
  }
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  glDeleteBuffers(1, &C);
}

// ---------------------------------------------------------------- stream: add at 2^20, 2^24, 2^26
// Wall time per dispatch (batches with barriers, as time_ms) beside the GPU's own time per dispatch
// (GL_TIME_ELAPSED queries around single dispatches: the core entry points on desktop OpenGL 3.3+,
// EXT_disjoint_timer_query's on OpenGL ES): where the two differ, the cost is
// between dispatches (barriers, submission), not in the kernel. Candidates: bench/lab/quad.comp's
// add with 1, 2, 4 or 8 quads per invocation (loads before stores), workgroup sizes, buffers made
// by glBufferStorageEXT (immutable) instead of glBufferData; copy and fill for the device's
// bandwidth; then gltensor::add / mul (the library's path) at the same sizes.
#ifndef GL_TIME_ELAPSED_EXT
#define GL_TIME_ELAPSED_EXT 0x88BF  // GL_TIME_ELAPSED: the same value in desktop OpenGL 3.3
#endif
using BufferStorageFn = void(GL_APIENTRYP)(GLenum, GLsizeiptr, const void*, GLbitfield);

// Median GPU time (ms) of `reps` single dispatches, each in its own time-elapsed query; 0 where the
// device has no timer queries.
double gpu_ms(const std::function<void()>& once, int reps) {
  static const auto get = detail::timer_queries(g_dev->caps()).get_u64;  // the library's own entry points
  if (!get) return 0;
  if (g_check) reps = 1;
  std::vector<GLuint> q(static_cast<std::size_t>(reps));
  glGenQueries(reps, q.data());
  once();
  glFinish();
  for (GLuint id : q) {
    glBeginQuery(GL_TIME_ELAPSED_EXT, id);
    once();
    glEndQuery(GL_TIME_ELAPSED_EXT);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
  }
  glFinish();
  std::vector<double> t;
  for (GLuint id : q) {
    GLuint64 ns = 0;
    get(id, GL_QUERY_RESULT, &ns);
    t.push_back(static_cast<double>(ns) * 1e-6);
  }
  glDeleteQueries(reps, q.data());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void stream_row(const char* name, std::size_t n, double bytes, const std::function<void()>& once, const char* note) {
  const int reps = n <= (1u << 20) ? 200 : n <= (1u << 24) ? 50 : 20;
  const double wall = time_ms(once, reps), gpu = gpu_ms(once, reps);
  std::printf("stream %-30s n=2^%-2d wall %8.4f ms %7.1f GB/s  gpu %8.4f ms %7.1f GB/s %s\n", name,
              static_cast<int>(std::log2(static_cast<double>(n))), wall, bytes * n / wall * 1e-6, gpu,
              gpu > 0 ? bytes * n / gpu * 1e-6 : 0.0, note);
}

void lab_stream() {
  static auto storage = reinterpret_cast<BufferStorageFn>(eglGetProcAddress("glBufferStorageEXT"));
  std::vector<int> logs = g_check ? std::vector<int>{14} : std::vector<int>{20, 24, 26};
  for (int lg : logs) {
    const std::size_t n = std::size_t{1} << lg, n4 = n / 4;
    auto ha = random_floats(n, 1), hb = random_floats(n, 2);
    GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data()), C = buffer(n * 4, nullptr);
    GLuint SA = 0, SB = 0, SC = 0;
    if (storage) {
      GLuint* sb[3] = {&SA, &SB, &SC};
      for (GLuint* b : sb) {
        glGenBuffers(1, b);
        glBindBuffer(GL_COPY_WRITE_BUFFER, *b);
        storage(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(n * 4), nullptr, 0);
      }
      glBindBuffer(GL_COPY_READ_BUFFER, A);
      glBindBuffer(GL_COPY_WRITE_BUFFER, SA);
      glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(n * 4));
      glBindBuffer(GL_COPY_READ_BUFFER, B);
      glBindBuffer(GL_COPY_WRITE_BUFFER, SB);
      glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(n * 4));
    }
    struct V {
      const char* name;
      const char* op;
      GLuint local, qn;  // qn 0: run_one
      bool qual, immutable = false;
      double bytes = 12;
    };
    const std::vector<V> vs = {{"add x1 wg256", "op_add", 256, 0, false},
                               {"add x1 wg256 ro/wo", "op_add", 256, 0, true},
                               {"add x1 wg64 ro/wo", "op_add", 64, 0, true},
                               {"add x1 wg1024 ro/wo", "op_add", 1024, 0, true},
                               {"add x2 wg256 ro/wo", "op_add", 256, 2, true},
                               {"add x4 wg256 ro/wo", "op_add", 256, 4, true},
                               {"add x8 wg128 ro/wo", "op_add", 128, 8, true},
                               {"add x4 wg256", "op_add", 256, 4, false},
                               {"add x1 wg256 immutable", "op_add", 256, 0, true, true},
                               {"add x4 wg256 immutable", "op_add", 256, 4, true, true},
                               {"copy x1 wg256", "op_copy", 256, 0, true, false, 8},
                               {"fill x1 wg256", "op_fill", 256, 0, true, false, 4},
                               {"read a and b x1 wg256", "op_read2", 256, 0, true, false, 8}};
    for (const V& v : vs) {
      if (v.immutable && !storage) continue;
      std::string defs = "#define LOCAL " + std::to_string(v.local) + "\n" + (v.qual ? "#define QUALIFIED 1\n" : "") +
                         "#define OP " + v.op + "\n";
      defs += v.qn ? "#define QN " + std::to_string(v.qn) + "\n#define RUN run_n\n" : "#define RUN run_one\n";
      GLuint p = compile(v.name, lab_source("quad.comp", defs));
      if (!p) continue;
      use(p);
      glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(n4));
      const GLuint c = v.immutable ? SC : C;
      bind({v.immutable ? SA : A, v.immutable ? SB : B, c});
      GLuint gx = static_cast<GLuint>((n4 + v.local * std::max(v.qn, 1u) - 1) / (v.local * std::max(v.qn, 1u))), gy = 1;
      while (gx > 65535u) {
        gx = (gx + 1) / 2;
        gy *= 2;
      }
      auto once = [&] { glDispatchCompute(gx, gy, 1); };
      once();
      glFinish();
      auto hc = read(c, n);
      int bad = 0;
      const std::string op = v.op;
      for (std::size_t i = 0; i < n; i += g_check ? 1 : 4099) {
        if (op == "op_add") bad += hc[i] != ha[i] + hb[i];
        if (op == "op_copy") bad += hc[i] != ha[i];
      }
      stream_row(v.name, n, v.bytes, once, verdict(!bad));
      glDeleteProgram(p);
    }
    for (GLuint b : {A, B, C, SA, SB, SC})
      if (b) glDeleteBuffers(1, &b);
    Generator gen(3);
    Tensor ta = randn(*g_dev, {std::int64_t(n)}, gen), tb = randn(*g_dev, {std::int64_t(n)}, gen);
    Tensor tc = empty_like(ta);
    stream_row(
        "gltensor add_out", n, 12, [&] { add_out(tc, ta, tb); }, "(gpu: as queried around the op)");
    stream_row(
        "gltensor mul_out", n, 12, [&] { mul_out(tc, ta, tb); }, "");
    g_dev->synchronize();
  }
}

// ---------------------------------------------------------------- big: why 2^26 floats run slower
// 2^24-float adds ran at torch's rate, 2^26 at 0.36-0.68 of it (fill too, one buffer). Separates
// (1) drift over time on the same buffers, (2) the size of one dispatch's ranges (the same
// buffers added in 4 or 16 dispatches over glBindBufferRange ranges), (3) the size of the buffers
// (the same bytes as 4 buffers of 2^24 floats each), (4) fill's rate by buffer size, (5) the
// library's add_out over 2^26 against the same add over 4 views of 2^24 (one dispatch each).
void lab_big() {
  const std::size_t n = g_check ? (std::size_t{1} << 14) : (std::size_t{1} << 26), n4 = n / 4;
  auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data()), C = buffer(n * 4, nullptr);
  const std::string defs = "#define LOCAL 256\n#define QUALIFIED 1\n#define OP op_add\n#define RUN run_one\n";
  GLuint p = compile("big add", lab_source("quad.comp", defs));
  GLuint pf = compile(
      "big fill",
      lab_source("quad.comp", "#define LOCAL 256\n#define QUALIFIED 1\n#define OP op_fill\n#define RUN run_one\n"));
  if (!p || !pf) return;
  const GLint n4_loc = glGetUniformLocation(p, "n4");
  auto grid = [](std::size_t quads, GLuint& gx, GLuint& gy) {
    gx = static_cast<GLuint>((quads + 255) / 256), gy = 1;
    while (gx > 65535u) gx = (gx + 1) / 2, gy *= 2;
  };
  // `parts` dispatches, each over its own range of A, B and C (bytes per part: n * 4 / parts).
  auto ranged = [&](int parts) {
    const std::size_t q = n4 / static_cast<std::size_t>(parts), bytes = q * 16;
    GLuint gx = 0, gy = 0;
    grid(q, gx, gy);
    use(p);
    glUniform1ui(n4_loc, static_cast<GLuint>(q));
    return [=] {
      for (int k = 0; k < parts; ++k) {
        const auto off = static_cast<GLintptr>(bytes * static_cast<std::size_t>(k));
        glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 0, A, off, static_cast<GLsizeiptr>(bytes));
        glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, B, off, static_cast<GLsizeiptr>(bytes));
        glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 2, C, off, static_cast<GLsizeiptr>(bytes));
        glDispatchCompute(gx, gy, 1);
      }
    };
  };
  for (int round = 0; round < 2; ++round)
    for (int parts : {1, 4, 16}) {
      auto f = ranged(parts);
      stream_row(("add in " + std::to_string(parts) + " ranged dispatches").c_str(), n, 12, f, "");
      g_dev->impl()->gl().invalidate();
    }
  auto hc = read(C, n);
  int bad = 0;
  for (std::size_t i = 0; i < n; i += g_check ? 1 : 4099) bad += hc[i] != ha[i] + hb[i];
  std::printf("big ranged result %s\n", verdict(!bad));
  {
    auto f = ranged(1);
    for (int t = 0; t < 6; ++t) stream_row(("add drift " + std::to_string(t)).c_str(), n, 12, f, "");
  }
  // The same bytes as 4 buffers per operand.
  {
    const std::size_t q = n4 / 4;
    std::vector<GLuint> bufs;
    for (int k = 0; k < 12; ++k)
      bufs.push_back(buffer(q * 16, k < 4   ? ha.data() + q * 4 * (k % 4)
                                    : k < 8 ? hb.data() + q * 4 * (k % 4)
                                            : nullptr));
    GLuint gx = 0, gy = 0;
    grid(q, gx, gy);
    use(p);
    glUniform1ui(n4_loc, static_cast<GLuint>(q));
    auto f = [&] {
      for (int k = 0; k < 4; ++k) {
        bind({bufs[k], bufs[4 + k], bufs[8 + k]});
        glDispatchCompute(gx, gy, 1);
      }
    };
    stream_row("add as 4 buffers of 2^24", n, 12, f, "");
    glDeleteBuffers(12, bufs.data());
  }
  // fill by buffer size (one dispatch).
  for (int lg : {24, 25, 26, 27}) {
    if (g_check && lg > 14) continue;
    const std::size_t m = std::size_t{1} << lg;
    GLuint F = buffer(m * 4, nullptr);
    use(pf);
    glUniform1ui(glGetUniformLocation(pf, "n4"), static_cast<GLuint>(m / 4));
    bind({A, B, F});
    GLuint gx = 0, gy = 0;
    grid(m / 4, gx, gy);
    stream_row(("fill one buffer of 2^" + std::to_string(lg)).c_str(), m, 4, [&] { glDispatchCompute(gx, gy, 1); }, "");
    glDeleteBuffers(1, &F);
  }
  glDeleteProgram(p);
  glDeleteProgram(pf);
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  glDeleteBuffers(1, &C);
  // The library: add_out over the whole tensors, then over 4 quarter views (4 dispatches).
  Generator gen(3);
  const auto ni = static_cast<std::int64_t>(n);
  Tensor ta = randn(*g_dev, {ni}, gen), tb = randn(*g_dev, {ni}, gen), tc = empty_like(ta);
  for (int round = 0; round < 2; ++round) {
    stream_row(
        "gltensor add_out 2^26", n, 12, [&] { add_out(tc, ta, tb); }, "");
    stream_row(
        "gltensor add_out as 4 views", n, 12,
        [&] {
          for (std::int64_t k = 0; k < 4; ++k) {
            Tensor o = tc.narrow(0, k * ni / 4, ni / 4);
            add_out(o, ta.narrow(0, k * ni / 4, ni / 4), tb.narrow(0, k * ni / 4, ni / 4));
          }
        },
        "");
  }
  g_dev->synchronize();
}

// The same add program (the library's, left bound by gltensor::add) on buffers made in different
// ways, to find why it runs slower on the library's tensors than on the lab's buffers.
void lab_bufs() {
  const std::size_t n = g_check ? (std::size_t{1} << 14) : (std::size_t{1} << 26);
  auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  struct Set {
    const char* name;
    GLuint a, b, c;
  };
  std::vector<Set> sets;
  sets.push_back(
      {"lab buffers, allocated first", buffer(n * 4, ha.data()), buffer(n * 4, hb.data()), buffer(n * 4, nullptr)});
  Generator gen(3);
  Tensor ra = randn(*g_dev, {std::int64_t(n)}, gen), rb = randn(*g_dev, {std::int64_t(n)}, gen);
  Tensor rc = add(ra, rb);
  g_dev->synchronize();
  const GLuint prog = library_program();
  auto buf = [](const Tensor& t) { return t.impl()->storage->buffer(); };
  sets.push_back({"randn tensors, add output", buf(ra), buf(rb), buf(rc)});
  Tensor fa = Tensor::from_host(*g_dev, ha, {std::int64_t(n)}), fb = Tensor::from_host(*g_dev, hb, {std::int64_t(n)});
  Tensor fc = Tensor::empty(*g_dev, {std::int64_t(n)});
  sets.push_back({"from_host tensors, empty output", buf(fa), buf(fb), buf(fc)});
  Tensor ca = ra.clone(), cb = rb.clone(), cc = zeros(*g_dev, {std::int64_t(n)});
  sets.push_back({"clones of randn, zeros output", buf(ca), buf(cb), buf(cc)});
  g_dev->synchronize();
  sets.push_back(
      {"lab buffers, allocated last", buffer(n * 4, ha.data()), buffer(n * 4, hb.data()), buffer(n * 4, nullptr)});
  const GLuint groups = static_cast<GLuint>(n / 4 / 256), gy = (groups + 65534u) / 65535u, gx = (groups + gy - 1) / gy;
  use(prog);
  {
    LibraryGrid grid(prog, gx, gy, 1);
    for (int round = 0; round < 2; ++round)
      for (const Set& st : sets) {
        bind({st.c, st.a, st.b});
        const double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
        std::printf("bufs %-34s %8.4f ms  %7.1f GB/s\n", st.name, ms, 12.0 * n / ms * 1e-6);
      }
  }
  for (int i : {0, 4}) {
    glDeleteBuffers(1, &sets[i].a);
    glDeleteBuffers(1, &sets[i].b);
    glDeleteBuffers(1, &sets[i].c);
  }
}

// ---------------------------------------------------------------- sum of 2^26 floats, stage 1
void lab_sum(bool subgroups, bool small) {
  const std::size_t n = g_check ? (1u << 14) : small ? (1u << 20) : (1u << 26), n4 = n / 4;
  auto hx = random_floats(n, 3);
  double ref = 0;
  for (float v : hx) ref += v;
  GLuint X = buffer(n * 4, hx.data()), P = buffer(132 * 64 * 4, nullptr);
  struct V {
    const char* name;
    bool acc4;  // bench/lab/sum.comp's ACC4
    GLuint groups;
    bool sg;  // SUBGROUP
  };
  std::vector<V> vs = {
      {"sum acc1 tree g132x8", false, 132 * 8, false},     {"sum acc1 tree g132x16", false, 132 * 16, false},
      {"sum acc4 tree g132x8", true, 132 * 8, false},      {"sum acc4 tree g132x16", true, 132 * 16, false},
      {"sum acc4 tree g132x32", true, 132 * 32, false},    {"sum acc1 subgroup g132x16", false, 132 * 16, true},
      {"sum acc4 subgroup g132x16", true, 132 * 16, true}, {"sum acc4 subgroup g132x32", true, 132 * 32, true}};
  for (const V& v : vs) {
    if (v.sg && !subgroups) continue;
    const std::string defines = std::string(v.acc4 ? "#define ACC4 1\n" : "") + (v.sg ? "#define SUBGROUP 1\n" : "");
    GLuint p = compile(v.name, lab_source("sum.comp", defines));
    if (!p) continue;
    use(p);
    glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(n4));
    bind({X, P});
    double ms = time_ms([&] { glDispatchCompute(v.groups, 1, 1); }, 20);
    auto hp = read(P, v.groups);
    double got = 0;
    for (float f : hp) got += f;
    const double err = std::abs(got - ref);
    std::printf("%-28s %8.4f ms  %7.1f GB/s  err %.2e %s\n", v.name, ms, 4.0 * n / ms * 1e-6, err,
                verdict(err <= 1e-5 * n));
    glDeleteProgram(p);
  }
  glDeleteBuffers(1, &X);
  glDeleteBuffers(1, &P);
}

// ---------------------------------------------------------------- the warp kernel's ceilings
// bench/lab/fma_ceiling.comp: the FP32 FMA rate of the warp-tiled matmul kernel's 8 x 8 blocks
// with the operands in registers, then read from shared memory as its K step reads them (no
// global loads): what GL lets its inner loop reach, against which the kernel's rate is judged.
void lab_ceiling() {
  const GLuint groups = g_check ? 2 : 132 * 8, iters = g_check ? 4 : 2048;
  const std::size_t quads = std::size_t{groups} * 256 * 16;
  GLuint C = buffer(quads * 16, nullptr);
  const float a = 0.5f, b = 0.25f, want = 8.0f * iters * a * b;  // exact: powers of two
  struct Form {
    const char* name;
    bool shared;
    int extra;  // EXTRA vec4 values live across the loop (0: none)
  };
  for (const Form& f :
       {Form{"ceiling register operands", false, 0}, Form{"ceiling shared-memory operands", true, 0},
        Form{"ceiling shared, 8 more live vec4", true, 8}, Form{"ceiling shared, 16 more live vec4", true, 16}}) {
    const std::string defines = std::string(f.shared ? "#define SHARED 1\n" : "") +
                                (f.extra ? "#define EXTRA " + std::to_string(f.extra) + "\n" : "");
    GLuint p = compile(f.name, lab_source("fma_ceiling.comp", defines));
    if (!p) continue;
    use(p);
    glUniform1ui(glGetUniformLocation(p, "u_iters"), iters);
    glUniform1f(glGetUniformLocation(p, "u_a"), a);
    glUniform1f(glGetUniformLocation(p, "u_b"), b);
    bind({C});
    const double ms = time_ms([&] { glDispatchCompute(groups, 1, 1); }, 5);
    const auto hc = read(C, quads * 4);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < hc.size(); ++i)  // the first `extra` quads of each invocation's 16 get u_a more
      bad += hc[i] != want + (static_cast<int>(i / 4 % 16) < f.extra ? a : 0.0f);
    const double flop = 2.0 * 512 * iters * 256 * groups;
    std::printf("%-36s %9.3f ms %9.2f GFLOP/s  %zu of %zu wrong %s\n", f.name, ms, flop / ms * 1e-6, bad, hc.size(),
                verdict(bad == 0));
    glDeleteProgram(p);
  }
  glDeleteBuffers(1, &C);
}

// ---------------------------------------------------------------- matmul f32, row-major
// bench/lab/matmul_tile.comp's defines for a BM x BN tile (BM * BN / 64 invocations), K-tile BK.
std::string tile_defines(int bm, int bn, int bk, bool pf, bool f16 = false) {
  return "#define BM " + std::to_string(bm) + "u\n#define BN " + std::to_string(bn) + "u\n#define NTL " +
         std::to_string(bm * bn / 64) + "\n#define NT " + std::to_string(bm * bn / 64) + "u\n#define BK " +
         std::to_string(bk) + "u\n" + (pf ? "#define PREFETCH 1\n" : "") + (f16 ? "#define F16 1\n" : "");
}
// The 64x128 BK8 prefetching tile with all of the library's VEC4 differences (LIB_*; the
// library compiles #version 320 es where it can).
const char* kLibAll = "#define LIB_STRIDES 1\n#define LIB_BATCH 1\n#define LIB_OUT 1\n#define LIB_EPI 1\n";

// Largest error of 64 (`samples`) random entries of C = A B (n x n) against float64.
double matmul_error(const std::vector<float>& c, const std::vector<float>& a, const std::vector<float>& b,
                    std::size_t n, std::mt19937& g, int samples) {
  double worst = 0;
  for (int s = 0; s < samples; ++s) {
    std::size_t i = g() % n, j = g() % n;
    double ref = 0;
    for (std::size_t k = 0; k < n; ++k) ref += double(a[i * n + k]) * b[k * n + j];
    worst = std::max(worst, std::abs(ref - c[i * n + j]));
  }
  return worst;
}

// Whether a matmul error over K = n terms of values in [-1, 1] is a rounding error.
bool matmul_ok(double err, std::size_t n) { return err <= 1e-4 * static_cast<double>(n); }

void lab_matmul(std::size_t n) {
  auto ha = random_floats(n * n, 4), hb = random_floats(n * n, 5);
  GLuint A = buffer(n * n * 4, ha.data()), B = buffer(n * n * 4, hb.data()), C = buffer(n * n * 4, nullptr);
  // f16 copies (values rounded to f16; the f32 reference uses the rounded values)
  std::vector<std::uint16_t> a16(n * n), b16(n * n);
  std::vector<float> ha16(n * n), hb16(n * n);
  for (std::size_t i = 0; i < n * n; ++i) {
    a16[i] = detail_f16(ha[i], ha16[i]);
    b16[i] = detail_f16(hb[i], hb16[i]);
  }
  GLuint A16 = buffer(n * n * 2, a16.data()), B16 = buffer(n * n * 2, b16.data());
  struct V {
    const char* name;
    const char* file;  // bench/lab
    std::string defines;
    GLuint bm, bn;
    bool f16;
    bool es320 = false;
  };
  const auto T = tile_defines;
  const char* tile = "matmul_tile.comp";
  std::vector<V> vs = {
      {"matmul 64 (library)", "matmul64.comp", "", 64, 64, false},
      {"matmul 128x128 BK8 pf", tile, T(128, 128, 8, true, false), 128, 128, false},
      {"matmul 128x128 BK8", tile, T(128, 128, 8, false, false), 128, 128, false},
      {"matmul 128x128 BK16", tile, T(128, 128, 16, false, false), 128, 128, false},
      {"matmul 64x128 BK8 pf", tile, T(64, 128, 8, true, false), 64, 128, false},
      {"matmul 64x128 BK16 pf", tile, T(64, 128, 16, true, false), 64, 128, false},
      {"matmul 64x128 BK8", tile, T(64, 128, 8, false, false), 64, 128, false},
      {"matmul 128x64 BK8 pf", tile, T(128, 64, 8, true, false), 128, 64, false},
      {"matmul 64x64 BK8 pf", tile, T(64, 64, 8, true, false), 64, 64, false},
      {"matmul 64x64 BK16 pf", tile, T(64, 64, 16, true, false), 64, 64, false},
      {"matmul f16 128x128 BK8 pf", tile, T(128, 128, 8, true, true), 128, 128, true},
      {"matmul f16 64x128 BK8 pf", tile, T(64, 128, 8, true, true), 64, 128, true},
      // Bisecting the gap to the library's VEC4 kernel (same tile, same loop):
      {"64x128 +lib strides", tile, "#define LIB_STRIDES 1\n" + T(64, 128, 8, true, false), 64, 128, false},
      {"64x128 +lib batch", tile, "#define LIB_BATCH 1\n" + T(64, 128, 8, true, false), 64, 128, false},
      {"64x128 +lib uvec4 out", tile, "#define LIB_OUT 1\n" + T(64, 128, 8, true, false), 64, 128, false},
      {"64x128 +lib epilogue", tile, "#define LIB_EPI 1\n" + T(64, 128, 8, true, false), 64, 128, false},
      {"64x128 +lib version 320", tile, T(64, 128, 8, true, false), 64, 128, false, true},
      {"64x128 +lib all five", tile, kLibAll + T(64, 128, 8, true, false), 64, 128, false, true}};
  std::mt19937 g(7);
  for (const V& v : vs) {
    if (n % v.bm || n % v.bn) continue;
    GLuint p = compile(v.name, lab_source(v.file, v.defines, v.es320));
    if (!p) continue;
    use(p);
    for (const char* u : {"M", "N", "K"}) glUniform1ui(glGetUniformLocation(p, u), static_cast<GLuint>(n));
    glUniform1ui(glGetUniformLocation(p, "u_qa_s"), static_cast<GLuint>(n / 4));
    glUniform1ui(glGetUniformLocation(p, "u_qb_s"), static_cast<GLuint>(n / 4));
    glUniform1ui(glGetUniformLocation(p, "u_bshape"), 1u);
    glUniform1f(glGetUniformLocation(p, "u_alpha"), 1.0f);
    bind({v.f16 ? A16 : A, v.f16 ? B16 : B, C});
    const GLuint gx = static_cast<GLuint>(n / v.bn), gy = static_cast<GLuint>(n / v.bm);
    double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, n >= 4096 ? 5 : 20);
    auto hc = read(C, n * n);
    const double worst = matmul_error(hc, v.f16 ? ha16 : ha, v.f16 ? hb16 : hb, n, g, 64);
    std::printf("%-28s n=%zu  %8.3f ms  %8.1f GFLOP/s  max err %.2e %s\n", v.name, n, ms, 2.0 * n * n * n / ms * 1e-6,
                worst, verdict(matmul_ok(worst, n)));
    glDeleteProgram(p);
  }
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  // gltensor::matmul itself (5 calls per synchronize), per forced kernel.
  for (const char* kern : {"vec4", "tile64"}) {
    ForceMatmulKernel force(kern);
    Generator gen(1);
    Tensor ta = randn(*g_dev, {std::int64_t(n), std::int64_t(n)}, gen),
           tb = randn(*g_dev, {std::int64_t(n), std::int64_t(n)}, gen);
    double ms = time_ms([&] { Tensor c = matmul(ta, tb); }, n >= 4096 ? 5 : 20);
    std::printf("matmul gltensor::matmul %-6s n=%zu  %8.3f ms  %8.1f GFLOP/s\n", kern, n, ms,
                2.0 * n * n * n / ms * 1e-6);
    // The library's program as left bound by that call (its uniforms and SSBO bindings), timed
    // as raw dispatches like the lab kernels: separates the kernel source from the dispatch path.
    Tensor keep = matmul(ta, tb);
    g_dev->synchronize();
    const GLuint prog = library_program();
    const bool vec4 = std::string(kern) == "vec4";
    const GLuint gx = static_cast<GLuint>(n / (vec4 ? 128 : 64)), gy = static_cast<GLuint>(n / 64);
    {
      LibraryGrid grid(prog, gx, gy, 1);
      ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, n >= 4096 ? 5 : 20);
    }
    std::printf("matmul library program raw %-6s n=%zu  %8.3f ms  %8.1f GFLOP/s (program %u)\n", kern, n, ms,
                2.0 * n * n * n / ms * 1e-6, prog);
    g_dev->impl()->gl().invalidate();
  }
  glDeleteBuffers(1, &C);
  glDeleteBuffers(1, &A16);
  glDeleteBuffers(1, &B16);
}

// Bisects the gap between the lab's 64x128 kernel and the library's VEC4 kernel (same tile and
// loop): every program runs on the library's buffers and on the lab's, so that the source and
// the buffers are told apart. Programs: the library's own (left bound by gltensor::matmul),
// the lab kernel with all LIB_* differences, and every *.comp file in $LAB_SRC_DIR (complete
// sources with the library's uniforms and bindings: C = 0, A = 1, B = 2; e.g. edited copies of
// the library's source printed by GLTENSOR_DUMP_SOURCE=matmul_vec4.comp with GLTENSOR_MATMUL_KERNEL=vec4;
// the lab sets their grid uniforms u_grid and u_group_base).
void lab_matmul_bisect(std::size_t n) {
  auto ha = random_floats(n * n, 4), hb = random_floats(n * n, 5);
  GLuint A = buffer(n * n * 4, ha.data()), B = buffer(n * n * 4, hb.data()), C = buffer(n * n * 4, nullptr);
  Generator gen(1);
  Tensor ta = randn(*g_dev, {std::int64_t(n), std::int64_t(n)}, gen),
         tb = randn(*g_dev, {std::int64_t(n), std::int64_t(n)}, gen);
  Tensor tc;
  {
    ForceMatmulKernel force("vec4");
    tc = matmul(ta, tb);
  }
  g_dev->synchronize();
  const GLuint libprog = library_program();
  const GLuint LA = ta.impl()->storage->buffer(), LB = tb.impl()->storage->buffer(), LC = tc.impl()->storage->buffer();
  struct P {
    std::string name;
    GLuint prog;
    bool lab_bindings;  // A = 0, B = 1, C = 2
  };
  std::vector<P> progs = {{"library program", libprog, false}};
  const std::string all5 = lab_source("matmul_tile.comp", kLibAll + tile_defines(64, 128, 8, true), true);
  progs.push_back({"lab kernel, all LIB_*", compile("lab kernel, all LIB_*", all5), true});
  if (const char* dir = std::getenv("LAB_SRC_DIR")) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".comp") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream ss;
      ss << in.rdbuf();
      progs.push_back({f.filename().string(), compile(f.filename().string(), ss.str()), false});
    }
  }
  const GLuint gx = static_cast<GLuint>(n / 128), gy = static_cast<GLuint>(n / 64);
  std::mt19937 g(7);
  for (const P& p : progs) {
    if (!p.prog) continue;
    use(p.prog);
    auto u = [&](const char* name, GLuint v) {
      const GLint loc = glGetUniformLocation(p.prog, name);
      if (loc >= 0) glUniform1ui(loc, v);
    };
    for (const char* nm : {"M", "N", "K", "u_M", "u_N", "u_K"}) u(nm, static_cast<GLuint>(n));
    for (const char* nm : {"u_qa_s", "u_qb_s"}) u(nm, static_cast<GLuint>(n / 4));
    u("u_bshape", 1u);
    const GLint la = glGetUniformLocation(p.prog, "u_alpha");
    if (la >= 0) glUniform1f(la, 1.0f);
    LibraryGrid grid(p.prog, gx, gy, 1);
    for (bool lab_buffers : {false, true}) {
      const GLuint a = lab_buffers ? A : LA, b = lab_buffers ? B : LB, c = lab_buffers ? C : LC;
      if (p.lab_bindings)
        bind({a, b, c});
      else
        bind({c, a, b});
      const double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, n >= 4096 ? 5 : 20);
      double worst = 0;
      if (lab_buffers) worst = matmul_error(read(C, n * n), ha, hb, n, g, 32);
      std::printf("bisect %-34s %-15s n=%zu  %8.3f ms  %8.1f GFLOP/s  max err %.2e %s\n", p.name.c_str(),
                  lab_buffers ? "lab buffers" : "library buffers", n, ms, 2.0 * n * n * n / ms * 1e-6, worst,
                  verdict(matmul_ok(worst, n)));
    }
  }
  for (const P& p : progs)
    if (p.prog && p.prog != libprog) glDeleteProgram(p.prog);
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  glDeleteBuffers(1, &C);
}

// conv2d 32x64x56x56, 64 3x3 filters, pad 1 (the bench case), stage by stage through the
// library: the whole conv2d, the GEMM it runs (linear over im2col rows), the same GEMM the other
// way round (weights @ columns: M = 64 output channels), and the NHWC -> NCHW copy.
// --check: 1x8x8x8, 8 filters.
void lab_conv() {
  const std::int64_t nb = g_check ? 1 : 32, c = g_check ? 8 : 64, hw = g_check ? 8 : 56, o = c, kc = c * 9;
  const std::int64_t rows = nb * hw * hw;
  Generator gen(2);
  Tensor x = randn(*g_dev, {nb, c, hw, hw}, gen), w = randn(*g_dev, {o, c, 3, 3}, gen), b = randn(*g_dev, {o}, gen);
  Tensor cols = randn(*g_dev, {rows, kc}, gen), colsT = randn(*g_dev, {kc, rows}, gen);
  Tensor wm = w.reshape({o, kc});
  Tensor nhwc = randn(*g_dev, {nb, hw, hw, o}, gen);
  const double flop = 2.0 * static_cast<double>(rows * o * kc);
  auto report = [&](const std::string& name, const std::function<void()>& f) {
    const double ms = time_ms(f, 10);
    std::printf("conv %-44s %8.3f ms  %8.1f GFLOP/s (conv flops)\n", name.c_str(), ms, flop / ms * 1e-6);
  };
  const std::string r = std::to_string(rows), k = std::to_string(kc), oc = std::to_string(o);
  report("conv2d total", [&] { Tensor y = conv2d(x, w, b, Conv2dOptions::pad(1)); });
  report("linear(cols [" + r + "," + k + "], wm [" + oc + "," + k + "])", [&] { Tensor y = linear(cols, wm, b); });
  report("matmul(wm [" + oc + "," + k + "], colsT [" + k + "," + r + "])", [&] { Tensor y = matmul(wm, colsT); });
  report("permute NHWC -> NCHW copy", [&] { Tensor y = nhwc.permute({0, 3, 1, 2}).contiguous(); });
  // The same GEMM with N = 528 and 1056 tiles of 128 (one and two full waves if 4 workgroups of
  // the kernel fit an SM of 132): rates scaled to the bench case's flops by N.
  const std::vector<std::int64_t> tile_counts =
      g_check ? std::vector<std::int64_t>{1} : std::vector<std::int64_t>{528, 1056, 784 * 2};
  for (std::int64_t tiles : tile_counts) {
    Tensor c2 = randn(*g_dev, {kc, tiles * 128}, gen);
    const double ms = time_ms([&] { Tensor y = matmul(wm, c2); }, 10);
    std::printf("conv matmul(wm [%lld,%lld], colsT [%lld,%lld]) %8.3f ms  %8.1f GFLOP/s\n", static_cast<long long>(o),
                static_cast<long long>(kc), static_cast<long long>(kc), static_cast<long long>(tiles * 128), ms,
                2.0 * static_cast<double>(o * kc * tiles * 128) / ms * 1e-6);
  }
  g_dev->synchronize();
}

// The raw add's 2-D grid of 256-invocation workgroups over n floats: rows of at most 32768.
void add_grid(std::size_t n, GLuint& gx, GLuint& gy) {
  const GLuint groups = static_cast<GLuint>(n / 4 / 256);
  gx = std::min(groups, 32768u);
  gy = groups / gx;
}

// Buffer usage hints (NVIDIA's driver places buffers by them: its debug output speaks of moving
// buffers between video and "DMA cached" memory): the raw vec4 add and a write-only fill on
// buffers created with each hint, two rounds in alternating order after a warm-up.
void lab_hints() {
  const std::size_t n = g_check ? (1u << 14) : (1u << 26), n4 = n / 4;
  GLuint padd = compile("hints add", quad_source(256, false, "op_add")),
         pfill = compile("hints fill", quad_source(256, false, "op_fill"));
  if (!padd || !pfill) return;
  struct H {
    const char* name;
    GLenum usage;
  };
  const H hints[] = {{"DYNAMIC_COPY", GL_DYNAMIC_COPY}, {"STATIC_DRAW", GL_STATIC_DRAW},
                     {"DYNAMIC_DRAW", GL_DYNAMIC_DRAW}, {"STREAM_COPY", GL_STREAM_COPY},
                     {"STATIC_COPY", GL_STATIC_COPY},   {"STATIC_READ", GL_STATIC_READ}};
  auto make = [&](GLenum usage) {
    GLuint b = 0;
    glGenBuffers(1, &b);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, b);
    glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(n * 4), nullptr, usage);
    return b;
  };
  GLuint gx = 0, gy = 0;
  add_grid(n, gx, gy);
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 6; ++i) {
      const H& h = hints[round % 2 ? 5 - i : i];
      GLuint A = make(h.usage), B = make(h.usage), C = make(h.usage);
      bind({A, B, C});
      use(pfill);
      glUniform1ui(glGetUniformLocation(pfill, "n4"), static_cast<GLuint>(n4));
      const double fms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
      use(padd);
      glUniform1ui(glGetUniformLocation(padd, "n4"), static_cast<GLuint>(n4));
      const double ams = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
      if (round > 0)
        std::printf("hints %-13s add %7.1f GB/s  fill %7.1f GB/s\n", h.name, 12.0 * n / ams * 1e-6,
                    4.0 * n / fms * 1e-6);
      glDeleteBuffers(1, &A);
      glDeleteBuffers(1, &B);
      glDeleteBuffers(1, &C);
    }
  glDeleteProgram(padd);
  glDeleteProgram(pfill);
}

// Relative placement of add's three streams: (1) ranges of one buffer, B and C starting `delta`
// bytes after the previous range's end; (2) three separate buffers of n * 4 + pad bytes, made
// anew each time (the allocations' placement is the driver's). Two rounds.
void lab_offsets() {
  const std::size_t n = g_check ? (1u << 14) : (1u << 26), n4 = n / 4, bytes = n * 4;
  GLuint padd = compile("offsets add", quad_source(256, false, "op_add"));
  if (!padd) return;
  use(padd);
  glUniform1ui(glGetUniformLocation(padd, "n4"), static_cast<GLuint>(n4));
  GLint align = 0;
  glGetIntegerv(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, &align);
  std::printf("offsets: SSBO offset alignment %d\n", align);
  GLuint gx = 0, gy = 0;
  add_grid(n, gx, gy);
  const std::size_t slack = 40u << 20;
  GLuint big = 0;
  glGenBuffers(1, &big);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, big);
  glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(3 * bytes + 2 * slack), nullptr, GL_DYNAMIC_COPY);
  const std::size_t deltas[] = {
      0,           256,      4096, 65536, 1u << 20, (1u << 20) + 4096, 2u << 20, (2u << 20) + 65536, 3 * 65536 + 256,
      12345 * 256, 32u << 20};
  for (int round = 0; round < 2; ++round) {
    for (std::size_t d : deltas) {
      const std::size_t ob = bytes + d, oc = 2 * (bytes + d);
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 0, big, 0, static_cast<GLsizeiptr>(bytes));
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, big, static_cast<GLintptr>(ob), static_cast<GLsizeiptr>(bytes));
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 2, big, static_cast<GLintptr>(oc), static_cast<GLsizeiptr>(bytes));
      const double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
      std::printf("offsets one buffer, delta %9zu: add %7.1f GB/s\n", d, 12.0 * n / ms * 1e-6);
    }
    for (std::size_t pad : {std::size_t{0}, std::size_t{65536}, std::size_t{(2u << 20) + 65536}}) {
      for (int rep = 0; rep < 2; ++rep) {
        GLuint b[3];
        glGenBuffers(3, b);
        for (GLuint x : b) {
          glBindBuffer(GL_SHADER_STORAGE_BUFFER, x);
          glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(bytes + pad), nullptr, GL_DYNAMIC_COPY);
        }
        bind({b[0], b[1], b[2]});
        const double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
        std::printf("offsets three buffers, pad %8zu, rep %d: add %7.1f GB/s\n", pad, rep, 12.0 * n / ms * 1e-6);
        glDeleteBuffers(3, b);
      }
    }
  }
  glDeleteBuffers(1, &big);
  glDeleteProgram(padd);
  g_dev->impl()->gl().invalidate();
}

// ---------------------------------------------------------------- pages: 2^26-float streams
// add over 2^26 floats (three 256 MiB buffers) streamed at 0.74 of torch where 2^24 ran at 0.98,
// and a fill of 2^27 floats (512 MiB) slower than one of 2^26: the rate seems to fall with the
// bytes a kernel touches, not with its form. bench/lab/pages.comp, in three parts:
// (1) footprint: add over 2^24, 2^25, 2^26 floats of three buffers, the 2^26 add with its
//     operands aliased (512 or 256 MiB touched, the same traffic), reads of a + b and fills by
//     size; (2) order: persistent workgroups (multiples of the H100's 132 SMs) each streaming a
//     contiguous chunk, and a prefetch by one invocation per workgroup of a, b and c PF quads
//     ahead (the pages' translations fetched before the stream reaches them); (3) allocation:
//     glBufferStorageEXT's flags and several sets of buffers alive at once (placement). Then the
//     library's add_out / mul_out. Every form's result is checked (every 4099th element).
using PagesGrid = std::pair<GLuint, GLuint>;
PagesGrid pages_grid(std::size_t groups) {
  GLuint gx = static_cast<GLuint>(groups), gy = 1;
  while (gx > 65535u) gx = (gx + 1) / 2, gy *= 2;
  return {gx, gy};
}

void lab_pages() {
  static auto storage = reinterpret_cast<BufferStorageFn>(eglGetProcAddress("glBufferStorageEXT"));
  const int lg = g_check ? 14 : 26;
  const std::size_t n = std::size_t{1} << lg, n4 = n / 4, step = g_check ? 1 : 4099;
  const auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data()), C = buffer(n * 4, nullptr);
  auto make = [&](const std::string& name, const std::string& defs) {
    return compile("pages " + name, lab_source("pages.comp", defs));
  };
  const std::string one = "#define LOCAL 256\n#define RUN run_one\n";
  const GLuint padd = make("add", one + "#define OP op_add\n"), pfill = make("fill", one + "#define OP op_fill\n"),
               pread = make("read", one + "#define OP op_read2\n");
  if (!padd || !pfill || !pread) return;
  auto setup = [&](GLuint p, std::size_t quads, GLuint chunk = 0) {
    use(p);
    glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(quads));
    const GLint lc = glGetUniformLocation(p, "u_chunk"), lm = glGetUniformLocation(p, "u_magic");
    if (lc >= 0) glUniform1ui(lc, chunk);
    if (lm >= 0) glUniform1f(lm, std::numeric_limits<float>::quiet_NaN());
  };
  auto bind3 = [&](GLuint a, GLuint b, GLuint c, std::size_t quads) {
    const auto bytes = static_cast<GLsizeiptr>(quads * 16);
    glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 0, a, 0, bytes);
    glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, b, 0, bytes);
    glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 2, c, 0, bytes);
    g_dev->impl()->gl().invalidate();
  };
  // One quad per invocation over `quads` (workgroups of 256), `bytes` per float.
  auto row = [&](const std::string& name, std::size_t quads, double bytes) {
    const PagesGrid g = pages_grid((quads + 255) / 256);
    stream_row(
        name.c_str(), quads * 4, bytes, [&] { glDispatchCompute(g.first, g.second, 1); }, "");
  };
  // Overwrites c with the fill kernel's values (c[i] = i), so that a form that skips an element fails.
  auto spoil = [&](GLuint c) {
    setup(pfill, n4);
    bind3(A, B, c, n4);
    const PagesGrid g = pages_grid(n4 / 256);
    glDispatchCompute(g.first, g.second, 1);
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT | GL_SHADER_STORAGE_BARRIER_BIT);
  };
  auto check = [&](GLuint c, const std::string& what) {
    const auto hc = read(c, n);
    std::size_t bad = 0, first = n;
    for (std::size_t i = 0; i < n; i += step)
      if (hc[i] != ha[i] + hb[i]) bad++, first = std::min(first, i);
    if (bad) std::printf("pages %s: %zu wrong, first at %zu\n", what.c_str(), bad, first);
    return verdict(bad == 0);
  };
  const std::string mib = std::to_string(n * 4 >> 20) + " MiB", two = "2^" + std::to_string(lg);
  // (1) footprint
  for (int round = 0; round < 2; ++round) {
    setup(padd, n4);
    for (int l : {lg - 2, lg - 1, lg}) {
      const std::size_t q = std::size_t{1} << (l - 2);
      bind3(A, B, C, q);
      row("add 2^" + std::to_string(l) + " a,b,c (" + std::to_string(3 * (q * 16 >> 20)) + " MiB)", q, 12);
    }
    std::printf("pages add a,b,c result %s\n", check(C, "add a,b,c"));
    bind3(C, B, C, n4);
    row("add " + two + " c=a (2 x " + mib + ")", n4, 12);
    bind3(A, A, C, n4);
    row("add " + two + " b=a (2 x " + mib + ")", n4, 12);
    bind3(C, C, C, n4);
    row("add " + two + " a=b=c (" + mib + ")", n4, 12);
    setup(pread, n4);
    bind3(A, B, C, n4);
    row("read a+b " + two + " (2 x " + mib + ")", n4, 8);
    bind3(A, A, C, n4);
    row("read a+a " + two + " (" + mib + ")", n4, 8);
    bind3(A, B, C, n4 / 2);
    row("read a+b 2^" + std::to_string(lg - 1) + " (" + mib + ")", n4 / 2, 8);
  }
  {  // fills of one buffer by size, up to 4x the operands' (within the SSBO block limit)
    GLuint F = 0;
    const std::size_t fbytes =
        std::min<std::size_t>(n * 16, static_cast<std::size_t>(g_dev->caps().max_ssbo_block_size) & ~std::size_t{15});
    glGenBuffers(1, &F);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, F);
    glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(fbytes), nullptr, GL_DYNAMIC_COPY);
    for (int l = lg - 2; l <= lg + 2; ++l) {
      const std::size_t q = std::size_t{1} << (l - 2);
      if (q * 16 > fbytes) continue;
      setup(pfill, q);
      bind3(F, F, F, q);  // fill reads neither a nor b
      row("fill 2^" + std::to_string(l) + " (" + std::to_string(q * 16 >> 20) + " MiB)", q, 4);
    }
    glDeleteBuffers(1, &F);
  }
  // (2) order: persistent workgroups streaming contiguous chunks; page prefetch
  const std::size_t sms = g_check ? 2 : 132;
  struct Chunked {
    GLuint local, per_sm, u;
  };
  for (const Chunked& k : {Chunked{256, 8, 4}, Chunked{256, 16, 2}, Chunked{256, 32, 1}, Chunked{512, 4, 4},
                           Chunked{1024, 2, 4}, Chunked{1024, 1, 8}}) {
    const std::string name =
        "chunks wg" + std::to_string(k.local) + " x" + std::to_string(k.per_sm) + "/SM u" + std::to_string(k.u);
    const GLuint p = make(name, "#define LOCAL " + std::to_string(k.local) + "\n#define U " + std::to_string(k.u) +
                                    "\n#define OP op_add\n#define RUN run_chunk\n");
    if (!p) continue;
    const std::size_t trip = std::size_t{k.local} * k.u, groups_max = sms * k.per_sm;
    const std::size_t chunk = (n4 + groups_max * trip - 1) / (groups_max * trip) * trip,
                      groups = (n4 + chunk - 1) / chunk;
    spoil(C);
    setup(p, n4, static_cast<GLuint>(chunk));
    bind3(A, B, C, n4);
    auto once = [&] { glDispatchCompute(static_cast<GLuint>(groups), 1, 1); };
    once();
    glFinish();
    const char* ok = check(C, name);
    stream_row((name + " (" + std::to_string(groups) + " groups)").c_str(), n, 12, once, ok);
    glDeleteProgram(p);
  }
  for (int pf : {14, 16, 18, 20}) {
    const std::size_t dist = g_check ? 256 : std::size_t{1} << pf;
    const std::string name = "prefetch " + std::to_string(dist * 16 >> 10) + " KiB ahead";
    const GLuint p = make(
        name, "#define LOCAL 256\n#define OP op_add\n#define PF " + std::to_string(dist) + "\n#define RUN run_pf\n");
    if (!p) continue;
    spoil(C);
    setup(p, n4);
    bind3(A, B, C, n4);
    const PagesGrid g = pages_grid(n4 / 256);
    auto once = [&] { glDispatchCompute(g.first, g.second, 1); };
    once();
    glFinish();
    const char* ok = check(C, name);
    stream_row(name.c_str(), n, 12, once, ok);
    if (pf == 16) {
      bind3(A, B, C, n4 / 4);
      row(name + ", 2^" + std::to_string(lg - 2), n4 / 4, 12);
    }
    glDeleteProgram(p);
  }
  // (3) allocation: three new buffers of each kind (twice), the inputs copied in
  auto copy_in = [&](GLuint dst, GLuint src) {
    glBindBuffer(GL_COPY_READ_BUFFER, src);
    glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(n * 4));
  };
  struct Alloc {
    const char* name;
    bool immutable;
    GLbitfield flags;  // glBufferStorageEXT's; glBufferData's usage otherwise
  };
  const Alloc allocs[] = {{"bufferData DYNAMIC_COPY (the pool's)", false, GL_DYNAMIC_COPY},
                          {"bufferData STREAM_COPY", false, GL_STREAM_COPY},
                          {"storage 0", true, 0},
                          {"storage DYNAMIC_STORAGE", true, 0x0100},
                          {"storage MAP_READ|MAP_WRITE", true, GL_MAP_READ_BIT | GL_MAP_WRITE_BIT}};
  for (int rep = 0; rep < 2; ++rep)
    for (const Alloc& al : allocs) {
      if (al.immutable && !storage) continue;
      GLuint b[3];
      glGenBuffers(3, b);
      for (GLuint x : b) {
        glBindBuffer(GL_COPY_WRITE_BUFFER, x);
        if (al.immutable)
          storage(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(n * 4), nullptr, al.flags);
        else
          glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(n * 4), nullptr, al.flags);
      }
      copy_in(b[0], A);
      copy_in(b[1], B);
      setup(padd, n4);
      bind3(b[0], b[1], b[2], n4);
      const PagesGrid g = pages_grid(n4 / 256);
      auto once = [&] { glDispatchCompute(g.first, g.second, 1); };
      once();
      glFinish();
      const char* ok = check(b[2], al.name);
      stream_row((std::string("alloc ") + al.name).c_str(), n, 12, once, ok);
      glDeleteBuffers(3, b);
    }
  {  // placement: four sets alive at once, each timed twice
    std::vector<GLuint> sets(12);
    for (std::size_t k = 0; k < sets.size(); ++k) sets[k] = buffer(n * 4, nullptr);
    for (int s = 0; s < 4; ++s) {
      copy_in(sets[3 * s], A);
      copy_in(sets[3 * s + 1], B);
    }
    setup(padd, n4);
    for (int round = 0; round < 2; ++round)
      for (int s = 0; s < 4; ++s) {
        bind3(sets[3 * s], sets[3 * s + 1], sets[3 * s + 2], n4);
        row("add on set " + std::to_string(s) + " of 4 alive", n4, 12);
      }
    glDeleteBuffers(static_cast<GLsizei>(sets.size()), sets.data());
  }
  setup(padd, n4);
  bind3(A, B, C, n4);
  row("add a,b,c again (" + std::to_string(3 * (n * 4 >> 20)) + " MiB)", n4, 12);
  for (GLuint p : {padd, pfill, pread}) glDeleteProgram(p);
  for (GLuint b : {A, B, C}) glDeleteBuffers(1, &b);
  Generator gen(3);
  for (int l : {lg - 2, lg}) {
    const auto m = std::int64_t{1} << l;
    Tensor ta = randn(*g_dev, {m}, gen), tb = randn(*g_dev, {m}, gen), tc = empty_like(ta);
    stream_row(
        "gltensor add_out", static_cast<std::size_t>(m), 12, [&] { add_out(tc, ta, tb); }, "");
    stream_row(
        "gltensor mul_out", static_cast<std::size_t>(m), 12, [&] { mul_out(tc, ta, tb); }, "");
    g_dev->synchronize();
  }
}

// ---------------------------------------------------------------- cudamem: GL buffers on CUDA's memory
// The same add and fills on buffers whose memory CUDA allocated and GL imported (the library's
// runtime/cuda_memory.hpp: cuMemCreate, an opaque fd, GL_EXT_memory_object_fd) against GL's own
// buffers in the same process; then the library's add_out / mul_out with its pool's large
// buffers on CUDA's memory and without. Where the device cannot (not NVIDIA's GL, no libcuda),
// the mode says so and returns.
// A GL buffer of `bytes` on memory CUDA allocated (the pool's CudaMemory), 0 where the device cannot.
GLuint cuda_buffer(std::size_t bytes) {
  GLuint b = 0;
  glGenBuffers(1, &b);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, b);
  g_dev->impl()->gl().invalidate();
  if (g_dev->impl()->extension<detail::CudaMemory>().make(*g_dev->impl(), b, bytes)) return b;
  glDeleteBuffers(1, &b);
  return GLuint{0};
}

void lab_cudamem() {
  auto& cm = g_dev->impl()->extension<detail::CudaMemory>();
  const int lg = 26;
  const std::size_t n = std::size_t{1} << lg;
  const auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data()), C = buffer(n * 4, nullptr);
  glFinish();
  // The first buffer includes the set-up (libcuda opened, cuInit, the primary context retained).
  auto t0 = std::chrono::steady_clock::now();
  const GLuint CA = cuda_buffer(n * 4);
  auto t1 = std::chrono::steady_clock::now();
  const GLuint CB = cuda_buffer(n * 4);
  auto t2 = std::chrono::steady_clock::now();
  const GLuint CC = cuda_buffer(n * 4), CF = cuda_buffer(n * 16);
  std::printf("cudamem: first 256 MiB buffer on CUDA's memory %.1f ms (set-up included), the next %.2f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  if (!CA || !CB || !CC || !CF) {
    std::printf("cudamem: this device gives no buffers on CUDA's memory\n");
    for (GLuint b : {A, B, C, CA, CB, CC, CF})
      if (b) detail::delete_buffer(*g_dev->impl(), b);
    return;
  }
  for (auto [dst, src] : {std::pair{CA, A}, std::pair{CB, B}}) {
    glBindBuffer(GL_COPY_READ_BUFFER, src);
    glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(n * 4));
  }
  GLuint F = buffer(n * 16, nullptr);
  const GLuint padd = compile("cudamem add",
                              lab_source("pages.comp", "#define LOCAL 256\n#define RUN run_one\n#define OP op_add\n")),
               pfill =
                   compile("cudamem fill",
                           lab_source("pages.comp", "#define LOCAL 256\n#define RUN run_one\n#define OP op_fill\n"));
  if (!padd || !pfill) return;
  auto dispatch = [&](GLuint p, GLuint a, GLuint b, GLuint c, std::size_t quads) {
    use(p);
    glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(quads));
    const auto bytes = static_cast<GLsizeiptr>(quads * 16);
    glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 0, a, 0, bytes);
    glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, b, 0, bytes);
    glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 2, c, 0, bytes);
    g_dev->impl()->gl().invalidate();
    const PagesGrid g = pages_grid((quads + 255) / 256);
    return [g] { glDispatchCompute(g.first, g.second, 1); };
  };
  for (int round = 0; round < 2; ++round) {
    for (bool cuda : {false, true}) {
      const char* who = cuda ? "CUDA memory" : "GL buffers ";
      for (int l : {lg - 2, lg}) {
        auto f = dispatch(padd, cuda ? CA : A, cuda ? CB : B, cuda ? CC : C, std::size_t{1} << (l - 2));
        f();
        glFinish();
        const auto hc = read(cuda ? CC : C, n);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < (std::size_t{1} << l); i += 4099) bad += hc[i] != ha[i] + hb[i];
        stream_row((std::string("add on ") + who).c_str(), std::size_t{1} << l, 12, f, verdict(bad == 0));
      }
      for (int l : {lg, lg + 1, lg + 2}) {
        const GLuint fb = cuda ? CF : F;  // fill reads neither a nor b
        auto f = dispatch(pfill, fb, fb, fb, std::size_t{1} << (l - 2));
        stream_row((std::string("fill on ") + who).c_str(), std::size_t{1} << l, 4, f, "");
      }
    }
  }
  glDeleteProgram(padd);
  glDeleteProgram(pfill);
  for (GLuint b : {A, B, C, F, CA, CB, CC, CF}) detail::delete_buffer(*g_dev->impl(), b);  // memory objects too
  g_dev->impl()->gl().invalidate();
  // The library's pool with and without its CUDA-backed buffers, the tensors made anew each time
  // (the pool trimmed first), twice in turn.
  Generator gen(3);
  for (int round = 0; round < 2; ++round)
    for (bool on : {false, true}) {
      cm.set_enabled(on);
      g_dev->impl()->pool().trim();
      for (int l : {lg - 6, lg - 2, lg}) {
        const auto m = std::int64_t{1} << l;
        Tensor ta = randn(*g_dev, {m}, gen), tb = randn(*g_dev, {m}, gen), tc = empty_like(ta);
        const std::string note = "(" + std::to_string(cm.buffers()) + " pool buffers on CUDA memory)";
        stream_row(
            on ? "gltensor add_out, pool on CUDA" : "gltensor add_out, pool's own", static_cast<std::size_t>(m), 12,
            [&] { add_out(tc, ta, tb); }, note.c_str());
        stream_row(
            on ? "gltensor mul_out, pool on CUDA" : "gltensor mul_out, pool's own", static_cast<std::size_t>(m), 12,
            [&] { mul_out(tc, ta, tb); }, "");
        // The product against float64's, rounded to f32, every 4099th element.
        const auto ha2 = ta.to_vector(), hb2 = tb.to_vector(), hc2 = tc.to_vector();
        std::size_t bad = 0;
        for (std::size_t i = 0; i < hc2.size(); i += 4099)
          bad += hc2[i] != static_cast<float>(static_cast<double>(ha2[i]) * static_cast<double>(hb2[i]));
        std::printf("cudamem library mul_out 2^%d %s %s\n", l, on ? "on CUDA memory" : "own", verdict(bad == 0));
        g_dev->synchronize();
      }
    }
  cm.set_enabled(true);
}

// ---------------------------------------------------------------- midsize: many 4 MiB buffers
// Whether the footprint matters across buffers too: the raw add over K triples of 2^20-float
// buffers (4 MiB each, the pool's kCudaMemoryMin) in turn, K = 1, 16, 64 (12, 192 and 768
// MiB touched per round: n counts every triple's floats), on GL's own buffers and on CUDA's
// memory; the first triple's result checked.
void lab_midsize() {
  const std::size_t n = g_check ? (std::size_t{1} << 12) : (std::size_t{1} << 20), n4 = n / 4;
  const auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  const GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data());
  const GLuint p =
      compile("midsize add", lab_source("pages.comp", "#define LOCAL 256\n#define RUN run_one\n#define OP op_add\n"));
  if (!p) return;
  use(p);
  glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(n4));
  const PagesGrid g = pages_grid(n4 / 256);
  for (bool cuda : {false, true})
    for (int k : {1, 16, 64}) {
      std::vector<GLuint> bufs;
      for (int i = 0; i < 3 * k; ++i) bufs.push_back(cuda ? cuda_buffer(n * 4) : buffer(n * 4, nullptr));
      if (std::find(bufs.begin(), bufs.end(), 0u) != bufs.end()) {
        std::printf("midsize: this device gives no buffers on CUDA's memory\n");
        for (GLuint b : bufs)
          if (b) detail::delete_buffer(*g_dev->impl(), b);
        break;
      }
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < 2; ++j) {
          glBindBuffer(GL_COPY_READ_BUFFER, j ? B : A);
          glBindBuffer(GL_COPY_WRITE_BUFFER, bufs[static_cast<std::size_t>(3 * i + j)]);
          glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(n * 4));
        }
      glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
      auto once = [&] {
        for (int i = 0; i < k; ++i) {
          for (GLuint j = 0; j < 3; ++j)
            glBindBufferBase(GL_SHADER_STORAGE_BUFFER, j, bufs[static_cast<std::size_t>(3 * i) + j]);
          glDispatchCompute(g.first, g.second, 1);
        }
      };
      use(p);
      once();
      glFinish();
      g_dev->impl()->gl().invalidate();
      const auto hc = read(bufs[2], n);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; i += g_check ? 1 : 4099) bad += hc[i] != ha[i] + hb[i];
      std::size_t fds = 0;  // the process's open file descriptors (GL may keep an imported one)
      for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++fds;
      const std::string name = std::string("midsize ") + std::to_string(k) + " x 3 x 4 MiB on " +
                               (cuda ? "CUDA memory" : "GL buffers") + " (" + std::to_string(fds) + " fds)";
      stream_row(name.c_str(), n * static_cast<std::size_t>(k), 12, once, verdict(bad == 0));
      for (GLuint b : bufs) detail::delete_buffer(*g_dev->impl(), b);
      g_dev->impl()->gl().invalidate();
    }
  glDeleteProgram(p);
  for (GLuint b : {A, B}) glDeleteBuffers(1, &b);
}

// Program binaries of the library's kernels for the bench shapes (matmul 4096 quad-load, conv2d,
// attention, softmax, add), written to $LAB_OUT/NAME.bin (default .), for reading what the
// driver made of them (NVIDIA's binaries carry its assembly as text). --check: tiny shapes, and
// files only where $LAB_OUT is set.
void lab_asm() {
  Generator gen(3);
  const char* dir = std::getenv("LAB_OUT");
  auto dump = [&](const char* name, const std::function<void()>& op) {
    op();
    g_dev->synchronize();
    const GLuint prog = library_program();
    GLint len = 0;
    glGetProgramiv(prog, GL_PROGRAM_BINARY_LENGTH, &len);
    std::vector<char> bin(static_cast<std::size_t>(std::max(len, 0)));
    GLenum fmt = 0;
    GLsizei got = 0;
    if (len > 0) glGetProgramBinary(prog, len, &got, &fmt, bin.data());
    if (g_check && !dir) {
      std::printf("asm %-10s program %u: %d bytes\n", name, prog, static_cast<int>(got));
      return;
    }
    const std::filesystem::path path = std::filesystem::path(dir ? dir : ".") / (std::string(name) + ".bin");
    std::ofstream(path, std::ios::binary).write(bin.data(), got);
    std::printf("asm %-10s program %u: %d bytes -> %s\n", name, prog, static_cast<int>(got), path.c_str());
  };
  const bool tiny = g_check;
  Tensor a = randn(*g_dev, {tiny ? 128 : 4096, tiny ? 128 : 4096}, gen),
         b = randn(*g_dev, {tiny ? 128 : 4096, tiny ? 128 : 4096}, gen);
  dump("matmul", [&] { Tensor c = matmul(a, b); });
  Tensor x = randn(*g_dev, {tiny ? 1 : 32, tiny ? 8 : 64, tiny ? 8 : 56, tiny ? 8 : 56}, gen),
         w = randn(*g_dev, {tiny ? 8 : 64, tiny ? 8 : 64, 3, 3}, gen);
  dump("conv2d", [&] { Tensor y = conv2d(x, w, Tensor(), Conv2dOptions::pad(1)); });
  Tensor q = randn(*g_dev, {tiny ? 1 : 8, tiny ? 2 : 16, tiny ? 16 : 1024, tiny ? 8 : 64}, gen);
  dump("attention", [&] { Tensor o = scaled_dot_product_attention(q, q, q, Tensor(), true); });
  Tensor r = randn(*g_dev, {tiny ? 16 : 16384, tiny ? 64 : 4096}, gen);
  dump("softmax", [&] { Tensor o = softmax(r, -1); });
  Tensor e = randn(*g_dev, {tiny ? 1 << 12 : 1 << 26}, gen);
  dump("add", [&] { Tensor o = add(e, e); });
}

// ---------------------------------------------------------------- matmul on CPU rasterizers
// bench/lab/matmul_reg.comp (register blocking straight from the SSBOs, no shared memory) on the
// Fashion-MNIST CNN's products (issue 15), with their operand layouts (transposed where the
// backward passes transposed views), against gltensor::matmul on the same layouts.
// Fastest of 3 runs after a warm-up (the products here take up to seconds on llvmpipe).
double best_ms(const std::function<void()>& once) {
  once();
  glFinish();
  double best = 1e30;
  for (int r = 0; r < (g_check ? 1 : 3); ++r) {
    auto t0 = std::chrono::steady_clock::now();
    once();
    glFinish();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void lab_matmul_reg(const std::string& only) {
  struct Shape3 {
    const char* name;
    std::int64_t M, N, K;
    bool at, bt;  // A stored [K, M] / B stored [N, K] (read transposed)
  };
  const std::vector<Shape3> shapes =
      g_check ? std::vector<Shape3>{{"odd", 37, 29, 41, false, false}, {"odd T", 37, 29, 41, true, true}}
              : std::vector<Shape3>{
                    {"conv2 fwd", 64, 25088, 288, false, false}, {"conv2 dW", 64, 288, 25088, true, true},
                    {"conv2 dX", 25088, 288, 64, false, false},  {"conv1 dW", 32, 9, 100352, true, true},
                    {"fc1 fwd", 128, 128, 3136, false, true},    {"fc1 dX", 128, 3136, 128, false, false},
                    {"fc1 dW", 3136, 128, 128, true, false},     {"small-M 3x3x65536", 3, 65536, 3, false, false}};
  struct Cand {
    int ra, cb, uk, lx;
  };
  // GLTENSOR_LAB_REG="RA CB UK LX" times that candidate alone.
  std::vector<Cand> cands = {{4, 1, 4, 64}, {8, 1, 4, 64}, {4, 2, 4, 64}, {8, 2, 4, 64}, {16, 1, 4, 64}};
  if (const char* one = std::getenv("GLTENSOR_LAB_REG")) {
    Cand c{};
    if (std::sscanf(one, "%d %d %d %d", &c.ra, &c.cb, &c.uk, &c.lx) == 4) cands = {c};
  }
  std::mt19937 g(11);
  for (const Shape3& s : shapes) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
    const auto M = static_cast<std::size_t>(s.M), N = static_cast<std::size_t>(s.N), K = static_cast<std::size_t>(s.K);
    auto ha = random_floats(M * K, 21), hb = random_floats(K * N, 22);  // as stored
    auto aval = [&](std::size_t m, std::size_t k) { return s.at ? ha[k * M + m] : ha[m * K + k]; };
    auto bval = [&](std::size_t k, std::size_t n) { return s.bt ? hb[n * K + k] : hb[k * N + n]; };
    GLuint A = buffer(M * K * 4, ha.data()), B = buffer(K * N * 4, hb.data()), C = buffer(M * N * 4, nullptr);
    const GLuint a_sm = s.at ? 1 : s.K, a_sk = s.at ? s.M : 1, b_sk = s.bt ? 1 : s.N, b_sn = s.bt ? s.K : 1;
    const double flop = 2.0 * s.M * s.N * s.K;
    for (const Cand& c : cands)
      for (int quad = 0; quad < 2; ++quad) {
        const bool bq = quad && !s.bt && N % 4 == 0, aq = quad && s.at && M % 4 == 0 && c.ra % 4 == 0;
        if (quad && !bq && !aq) continue;
        std::string defs = "#define LX " + std::to_string(c.lx) + "u\n#define RA " + std::to_string(c.ra) +
                           "\n#define CB " + std::to_string(c.cb) + "\n#define UK " + std::to_string(c.uk) + "u\n" +
                           (bq ? "#define B_QUAD 1\n" : "") + (aq ? "#define A_QUAD 1\n" : "");
        char name[96];
        std::snprintf(name, sizeof name, "reg %dx%d uk%d lx%d%s%s", c.ra, 4 * c.cb, c.uk, c.lx, bq ? " bq" : "",
                      aq ? " aq" : "");
        GLuint p = compile(name, lab_source("matmul_reg.comp", defs));
        if (!p) continue;
        use(p);
        const GLuint vals[] = {GLuint(M), GLuint(N), GLuint(K), a_sm, a_sk, b_sk, b_sn};
        const char* names[] = {"M", "N", "K", "a_sm", "a_sk", "b_sk", "b_sn"};
        for (int i = 0; i < 7; ++i) glUniform1ui(glGetUniformLocation(p, names[i]), vals[i]);
        bind({A, B, C});
        const std::size_t blocks = (M + c.ra - 1) / c.ra * ((N + 4 * c.cb - 1) / (4 * c.cb));
        const GLuint groups = static_cast<GLuint>((blocks + c.lx - 1) / c.lx);
        const double ms = best_ms([&] { glDispatchCompute(groups, 1, 1); });
        auto hc = read(C, M * N);
        double worst = 0;
        for (int t = 0; t < 32; ++t) {
          std::size_t i = g() % M, j = g() % N;
          double ref = 0;
          for (std::size_t k = 0; k < K; ++k) ref += double(aval(i, k)) * bval(k, j);
          worst = std::max(worst, std::abs(ref - hc[i * N + j]));
        }
        std::printf("%-18s %-26s %9.3f ms %7.2f GFLOP/s err %.1e %s\n", s.name, name, ms, flop / ms * 1e-6, worst,
                    verdict(matmul_ok(worst, K)));
        glDeleteProgram(p);
      }
    glDeleteBuffers(1, &A);
    glDeleteBuffers(1, &B);
    glDeleteBuffers(1, &C);
    // The library on the same layouts (its plan's kernel; split-K and its sum included).
    Generator gen(3);
    Tensor ta = s.at ? randn(*g_dev, {s.K, s.M}, gen).t() : randn(*g_dev, {s.M, s.K}, gen);
    Tensor tb = s.bt ? randn(*g_dev, {s.N, s.K}, gen).t() : randn(*g_dev, {s.K, s.N}, gen);
    const double ms = best_ms([&] { Tensor c = matmul(ta, tb); });
    std::printf("%-18s %-26s %9.3f ms %7.2f GFLOP/s\n", s.name, "gltensor::matmul", ms, flop / ms * 1e-6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--check") {
      g_check = true;
    } else if (arg.rfind("--", 0) == 0 || !filter.empty()) {
      std::fprintf(stderr, "usage: %s [--check] [FILTER]\n", argv[0]);
      return 2;
    } else {
      filter = arg;
    }
  }
  Device d = Device::open();
  g_dev = &d;
  detail::Enter guard(*d.impl(), "kernel_lab");
  const bool sw = d.impl()->adapter().software;
  const bool gpu = !sw || g_check;  // modes for GPUs run everywhere at --check's sizes
  std::printf("device: %s%s\n", d.caps().renderer.c_str(), g_check ? " (--check)" : "");
  // -PART: every mode that no FILTER runs, less those that FILTER PART runs (the modes named exactly
  // all stay: PART names none of them unless it is their whole name).
  const bool except = filter.size() > 1 && filter[0] == '-';
  const std::string part = except ? filter.substr(1) : filter;
  auto want = [&](const char* name) {
    const bool has = std::string(name).find(part) != std::string::npos;
    return filter.empty() || (except ? !has : has);
  };
  auto named = [&](const char* name) {
    return filter == name || (g_check && (filter.empty() || (except && part != name)));
  };
  if (want("variants")) g_failures += lab::lab_variants(d, g_check);
  if (want("warp") || filter.rfind("warp:", 0) == 0)
    g_failures += lab::lab_warp(d, g_check, filter.rfind("warp:", 0) == 0 ? std::stoll(filter.substr(5)) : 0);
  if (want("splitk")) g_failures += lab::lab_splitk(d, g_check);
  if (want("add")) lab_add(sw);
  if (want("sum")) lab_sum(d.caps().subgroup, sw);
  if (want("ceiling") && gpu) lab_ceiling();
  if (want("conv") && gpu) lab_conv();
  if (want("bufs") && gpu) lab_bufs();
  if (want("regmm") || filter.rfind("regmm:", 0) == 0)
    lab_matmul_reg(filter.rfind("regmm:", 0) == 0 ? filter.substr(6) : std::string());
  if (want("bisect")) lab_matmul_bisect(g_check ? 128 : sw ? 256 : 4096);
  if (named("asm")) lab_asm();
  if (named("hints") && gpu) lab_hints();
  if (named("offsets") && gpu) lab_offsets();
  if (named("stream")) lab_stream();
  if (named("big")) lab_big();
  if (named("addvariants")) g_failures += lab::lab_add_variants(d, g_check);
  if (named("pages")) lab_pages();
  if (filter == "midsize" && gpu) lab_midsize();
  if (filter == "cudamem" && gpu) try {
      lab_cudamem();
    } catch (const std::exception& e) {
      std::printf("%s\n", e.what());
      ++g_failures;
    }
  if (want("matmul")) {
    if (g_check) {
      lab_matmul(128);
    } else if (sw) {
      lab_matmul(256);
    } else {
      lab_matmul(1024);
      lab_matmul(4096);
    }
  }
  if (!g_check) return 0;
  if (filter.empty() || except)  // (an exception that leaves out a mode using bench/lab files fails here)
    for (const auto& [file, text] : lab::lab_sources())
      if (!g_used.count(file)) {
        std::printf("check: bench/lab/%s is used by no mode\n", file.c_str());
        ++g_failures;
      }
  std::printf("check: %d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
