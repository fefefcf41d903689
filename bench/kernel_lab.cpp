// Kernel lab: times candidate GLSL formulations of the hot kernels (elementwise add, sum,
// matmul) in isolation, outside the library's dispatch path, so that variants can be compared
// on one device in one run before one of them goes into glsl/. Not part of the test suite.
// Usage: gltensor_kernel_lab [FILTER]   (runs the experiments whose name contains FILTER)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/device_impl.hpp"
#include "runtime/gl.hpp"
#include "gltensor/gltensor.hpp"
#include "tensor/tensor_impl.hpp"

using namespace gltensor;

namespace {

Device* g_dev = nullptr;

GLuint compile(const std::string& src) {
  // A variant may start with its own #version line (the library compiles 320 es where it can).
  const std::string full = src.rfind("#version", 0) == 0 ? src : "#version 310 es\n" + src;
  GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
  const char* p = full.c_str();
  glShaderSource(sh, 1, &p, nullptr);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[4096];
    glGetShaderInfoLog(sh, sizeof log, nullptr, log);
    std::printf("compile error: %s\n", log);
    glDeleteShader(sh);
    return 0;
  }
  GLuint prog = glCreateProgram();
  glAttachShader(prog, sh);
  glLinkProgram(prog);
  glDeleteShader(sh);
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[4096];
    glGetProgramInfoLog(prog, sizeof log, nullptr, log);
    std::printf("link error: %s\n", log);
    return 0;
  }
  return prog;
}

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
double time_ms(const std::function<void()>& once, int reps, bool barriers = true) {
  once();
  glFinish();
  std::vector<double> t;
  for (int b = 0; b < 5; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      once();
      if (barriers) glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    }
    glFinish();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  std::sort(t.begin(), t.end());
  return t[2];
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

void bind(std::initializer_list<GLuint> bufs) {
  GLuint i = 0;
  for (GLuint b : bufs) glBindBufferBase(GL_SHADER_STORAGE_BUFFER, i++, b);
}

// ---------------------------------------------------------------- elementwise add, 2^26 floats
const char* kAddHeader = R"(
layout(std430, binding = 0) QUAL_IN buffer A_ { vec4 a[]; };
layout(std430, binding = 1) QUAL_IN buffer B_ { vec4 b[]; };
layout(std430, binding = 2) QUAL_OUT buffer C_ { vec4 c[]; };
uniform uint n4;
)";

// Kernel body with one invocation per quad i < n4 of a 2-D grid: main() runs `statement`.
std::string quad_body(const char* statement) {
  return std::string(
             "void main(){ uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * "
             "gl_WorkGroupSize.x; if (i < n4) ") +
         statement + " }";
}
// A whole program: 256-invocation workgroups, unqualified buffers a, b (in) and c (out).
std::string quad_program(const char* statement) {
  return "layout(local_size_x = 256) in;\n#define QUAL_IN\n#define QUAL_OUT\n" + std::string(kAddHeader) +
         quad_body(statement);
}

void lab_add(bool small) {
  const std::size_t n = small ? (1u << 20) : (1u << 26), n4 = n / 4;
  auto ha = random_floats(n, 1), hb = random_floats(n, 2);
  GLuint A = buffer(n * 4, ha.data()), B = buffer(n * 4, hb.data()), C = buffer(n * 4, nullptr);
  struct V {
    const char* name;
    std::string body;
    GLuint local, per_thread;  // vec4s per invocation; 0 = grid-stride with 132*16 groups
    bool qual;
    double bytes = 12;  // per element
    bool barrier = true;
  };
  const std::string one = quad_body("c[i] = a[i] + b[i];");
  const std::string four =
      "void main(){ uint base = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * gl_WorkGroupSize.x * 4u + "
      "gl_LocalInvocationID.x; for (uint k = 0u; k < 4u; ++k) { uint i = base + k * gl_WorkGroupSize.x; if (i < n4) "
      "c[i] = a[i] + b[i]; } }";
  const std::string grid =
      "void main(){ uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x; for (uint i = gl_GlobalInvocationID.x; i < "
      "n4; i += stride) c[i] = a[i] + b[i]; }";
  const std::string copy = quad_body("c[i] = a[i];");
  const std::string fill = quad_body("c[i] = vec4(float(i));");
  const std::string readonly = quad_body("{ vec4 v = a[i]; if (v.x == 12345.0) c[0] = v; }");
  std::vector<V> vs = {{"add vec4x1 wg256", one, 256, 1, false},
                       {"add vec4x1 wg256 ro/wo", one, 256, 1, true},
                       {"add vec4x1 wg128", one, 128, 1, false},
                       {"add vec4x1 wg512", one, 512, 1, false},
                       {"add vec4x1 wg1024", one, 1024, 1, false},
                       {"add vec4x4 wg256", four, 256, 4, false},
                       {"add vec4x4 wg256 ro/wo", four, 256, 4, true},
                       {"add gridstride wg256", grid, 256, 0, true},
                       {"add vec4x1 no barriers", one, 256, 1, true, 12, false},
                       {"copy vec4x1", copy, 256, 1, true, 8},
                       {"fill vec4x1", fill, 256, 1, true, 4},
                       {"read vec4x1 (sum into c[0] if 0)", readonly, 256, 1, true, 4}};
  for (const V& v : vs) {
    std::string src = "layout(local_size_x = " + std::to_string(v.local) + ") in;\n" +
                      (v.qual ? "#define QUAL_IN readonly restrict\n#define QUAL_OUT writeonly restrict\n"
                              : "#define QUAL_IN\n#define QUAL_OUT\n") +
                      kAddHeader + v.body;
    GLuint p = compile(src);
    if (!p) continue;
    glUseProgram(p);
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
    if (v.bytes == 12)
      for (std::size_t i = 0; i < n; i += 4099) bad += hc[i] != ha[i] + hb[i];
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s %s\n", v.name, n, ms, v.bytes * n / ms * 1e-6, bad ? "WRONG" : "");
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
    GLint prog = 0;
    glGetIntegerv(GL_CURRENT_PROGRAM, &prog);
    // dispatch_1d's grid: rows of equal length (2 x 32768 for 2^26); and 65535 + 65535 (half empty).
    const GLuint groups = static_cast<GLuint>(n / 4 / 256), gy = (groups + 65534u) / 65535u,
                 gx = (groups + gy - 1) / gy;
    ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, small ? 200 : 20);
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s\n", "add library program raw", n, ms, 12.0 * n / ms * 1e-6);
    if (gy > 1) {
      ms = time_ms([&] { glDispatchCompute(65535u, gy, 1); }, small ? 200 : 20);
      std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s\n", "add library program 65535 x 2", n, ms, 12.0 * n / ms * 1e-6);
    }
    bind({C, A, B});
    ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, small ? 200 : 20);
    auto hc = read(C, n);
    int bad = 0;
    for (std::size_t i = 0; i < n; i += 4099) bad += hc[i] != ha[i] + hb[i];
    std::printf("%-28s n=%zu  %8.4f ms  %7.1f GB/s %s\n", "add library program lab bufs", n, ms, 12.0 * n / ms * 1e-6,
                bad ? "WRONG" : "");
    g_dev->impl()->gl.invalidate();
  }
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  glDeleteBuffers(1, &C);
}

// The same add program (the library's, left bound by gltensor::add) on buffers made in different
// ways, to find why it runs slower on the library's tensors than on the lab's buffers.
void lab_bufs() {
  const std::size_t n = std::size_t{1} << 26;
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
  GLint prog = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &prog);
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
  glUseProgram(static_cast<GLuint>(prog));
  for (int round = 0; round < 2; ++round)
    for (const Set& st : sets) {
      bind({st.c, st.a, st.b});
      const double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
      std::printf("bufs %-34s %8.4f ms  %7.1f GB/s\n", st.name, ms, 12.0 * n / ms * 1e-6);
    }
  g_dev->impl()->gl.invalidate();
  for (int i : {0, 4}) {
    glDeleteBuffers(1, &sets[i].a);
    glDeleteBuffers(1, &sets[i].b);
    glDeleteBuffers(1, &sets[i].c);
  }
}

// ---------------------------------------------------------------- sum of 2^26 floats, stage 1
const char* kSumHeader = R"(
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly restrict buffer X_ { vec4 x[]; };
layout(std430, binding = 1) writeonly restrict buffer P_ { float part[]; };
uniform uint n4;
shared float s[256];
)";

void lab_sum(bool subgroups, bool small) {
  const std::size_t n = small ? (1u << 20) : (1u << 26), n4 = n / 4;
  auto hx = random_floats(n, 3);
  double ref = 0;
  for (float v : hx) ref += v;
  GLuint X = buffer(n * 4, hx.data()), P = buffer(132 * 64 * 4, nullptr);
  const std::string acc1 =
      "vec4 acc = vec4(0.0); uint stride = gl_NumWorkGroups.x * 256u;"
      "for (uint i = gl_GlobalInvocationID.x; i < n4; i += stride) acc += x[i];"
      "float v = (acc.x + acc.y) + (acc.z + acc.w);";
  const std::string acc4 =
      "vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0); uint stride = gl_NumWorkGroups.x * 256u;"
      "uint i = gl_GlobalInvocationID.x;"
      "for (; i + 3u * stride < n4; i += 4u * stride) { a0 += x[i]; a1 += x[i + stride]; a2 += x[i + 2u * stride]; a3 "
      "+= x[i + 3u * stride]; }"
      "for (; i < n4; i += stride) a0 += x[i];"
      "vec4 acc = (a0 + a1) + (a2 + a3); float v = (acc.x + acc.y) + (acc.z + acc.w);";
  const std::string tree =
      "uint t = gl_LocalInvocationID.x; s[t] = v; barrier();"
      "for (uint h = 128u; h > 0u; h >>= 1u) { if (t < h) s[t] += s[t + h]; memoryBarrierShared(); barrier(); }"
      "if (t == 0u) part[gl_WorkGroupID.x] = s[0];";
  const std::string sg =
      "v = subgroupAdd(v); if (subgroupElect()) s[gl_SubgroupID] = v; memoryBarrierShared(); barrier();"
      "if (gl_LocalInvocationID.x == 0u) { float t = 0.0; for (uint k = 0u; k < gl_NumSubgroups; ++k) t += s[k]; "
      "part[gl_WorkGroupID.x] = t; }";
  struct V {
    const char* name;
    std::string body;
    GLuint groups;
    bool sg;
  };
  std::vector<V> vs = {{"sum acc1 tree g132x8", acc1 + tree, 132 * 8, false},
                       {"sum acc1 tree g132x16", acc1 + tree, 132 * 16, false},
                       {"sum acc4 tree g132x8", acc4 + tree, 132 * 8, false},
                       {"sum acc4 tree g132x16", acc4 + tree, 132 * 16, false},
                       {"sum acc4 tree g132x32", acc4 + tree, 132 * 32, false},
                       {"sum acc1 subgroup g132x16", acc1 + sg, 132 * 16, true},
                       {"sum acc4 subgroup g132x16", acc4 + sg, 132 * 16, true},
                       {"sum acc4 subgroup g132x32", acc4 + sg, 132 * 32, true}};
  for (const V& v : vs) {
    if (v.sg && !subgroups) continue;
    std::string src = std::string(v.sg ? "#extension GL_KHR_shader_subgroup_arithmetic : require\n" : "") + kSumHeader +
                      "void main() {" + v.body + "}";
    GLuint p = compile(src);
    if (!p) continue;
    glUseProgram(p);
    glUniform1ui(glGetUniformLocation(p, "n4"), static_cast<GLuint>(n4));
    bind({X, P});
    double ms = time_ms([&] { glDispatchCompute(v.groups, 1, 1); }, 20);
    auto hp = read(P, v.groups);
    double got = 0;
    for (float f : hp) got += f;
    std::printf("%-28s %8.4f ms  %7.1f GB/s  err %.2e\n", v.name, ms, 4.0 * n / ms * 1e-6, std::abs(got - ref));
    glDeleteProgram(p);
  }
  glDeleteBuffers(1, &X);
  glDeleteBuffers(1, &P);
}

// ---------------------------------------------------------------- matmul f32, row-major
// C[M,N] = A[M,K] B[K,N]; (BM/8)*(BN/8) invocations, each computing an 8x8 block (rows 4ty..
// and BM/2+4ty.., columns 4tx.. and BN/2+4tx..) of a BM x BN tile. A is stored transposed in
// shared memory so both operands are read as vec4s; global loads are vec4s (uvec2 = 4 halves
// with F16); PREFETCH: next K-tile loaded into registers during the current one's products,
// shared memory double-buffered (one barrier per K-tile).
const char* kMatmulT = R"(
#define TX (BN / 8u)
#define TY (BM / 8u)
layout(local_size_x = NTL) in;
#ifdef F16
layout(std430, binding = 0) readonly restrict buffer A_ { uvec2 A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { uvec2 B[]; };
vec4 ld(uvec2 u) { return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); }
#define LDA(i) ld(A[i])
#define LDB(i) ld(B[i])
#else
layout(std430, binding = 0) readonly restrict buffer A_ { vec4 A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { vec4 B[]; };
#define LDA(i) A[i]
#define LDB(i) B[i]
#endif
#ifdef LIB_OUT
layout(std430, binding = 2) buffer C_ { uvec4 C[]; };
#define STORE_C(i, v) C[i] = floatBitsToUint(v)
#else
layout(std430, binding = 2) writeonly restrict buffer C_ { vec4 C[]; };
#define STORE_C(i, v) C[i] = v
#endif
uniform uint M, N, K;
// LIB_*: the library's VEC4 kernel's differences, one at a time (bisecting the lab/library gap).
uniform uint u_qa_s, u_qb_s, u_a_off, u_b_off, u_zbase, u_bshape[1], u_bstride_a[1], u_bstride_b[1];
uniform float u_alpha;
#define KV (BK / 4u)
#define LA (BM * KV / NT)
#define LB (BK * (BN / 4u) / NT)
#ifdef PREFETCH
#define NBUF 2
#else
#define NBUF 1
#endif
shared vec4 As[NBUF][BK][BM / 4u];
shared vec4 Bs[NBUF][BK][BN / 4u];
float act(float x) { return x; }
void epilogue_quad(uint m, uint n, vec4 q, uint c_off) {
  vec4 v = u_alpha * q;
  v = vec4(act(v.x), act(v.y), act(v.z), act(v.w));
  uint e = c_off + m * N + n;
  STORE_C(e >> 2u, v);
}
void main() {
  uint lid = gl_LocalInvocationID.x, tx = lid % TX, ty = lid / TX;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint nb4 = n0 / 4u;
  uint z = 0u, qa0 = 0u, qb0 = 0u;
#ifdef LIB_STRIDES
  uint K4 = u_qa_s, N4 = u_qb_s;
  qa0 = u_a_off / 4u;
  qb0 = u_b_off / 4u;
#else
  uint K4 = K / 4u, N4 = N / 4u;
#endif
#ifdef LIB_BATCH
  z = u_zbase + gl_WorkGroupID.z;
  uint zz = z, a_b = 0u, b_b = 0u;
  for (int d = 0; d >= 0; --d) {
    uint i = zz % u_bshape[d];
    zz /= u_bshape[d];
    a_b += i * u_bstride_a[d];
    b_b += i * u_bstride_b[d];
  }
  qa0 += a_b / 4u;
  qb0 += b_b / 4u;
#endif
  vec4 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
  vec4 ra[LA], rb[LB];
  uint nk = K / BK;
#ifdef PREFETCH
  for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA(qa0 + (m0 + e / KV) * K4 + e % KV); }
  for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB(qb0 + (e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
  for (uint l = 0u; l < LA; ++l) {
    uint e = lid + NT * l, r = e / KV, q = e % KV;
    for (uint j = 0u; j < 4u; ++j) As[0][4u * q + j][r / 4u][r % 4u] = ra[l][j];
  }
  for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; Bs[0][e / (BN / 4u)][e % (BN / 4u)] = rb[l]; }
  memoryBarrierShared();
  barrier();
#endif
  for (uint t = 0u; t < nk; ++t) {
#ifdef PREFETCH
    uint cur = t & 1u;
    if (t + 1u < nk) {
      uint k1 = (t + 1u) * BK;
      for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA(qa0 + (m0 + e / KV) * K4 + k1 / 4u + e % KV); }
      for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB(qb0 + (k1 + e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
    }
#else
    const uint cur = 0u;
    uint k0 = t * BK;
    for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA(qa0 + (m0 + e / KV) * K4 + k0 / 4u + e % KV); }
    for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB(qb0 + (k0 + e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
    for (uint l = 0u; l < LA; ++l) {
      uint e = lid + NT * l, r = e / KV, q = e % KV;
      for (uint j = 0u; j < 4u; ++j) As[0][4u * q + j][r / 4u][r % 4u] = ra[l][j];
    }
    for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; Bs[0][e / (BN / 4u)][e % (BN / 4u)] = rb[l]; }
    memoryBarrierShared();
    barrier();
#endif
    for (uint k = 0u; k < BK; ++k) {
      vec4 a0 = As[cur][k][ty], a1 = As[cur][k][TY + ty];
      vec4 b0 = Bs[cur][k][tx], b1 = Bs[cur][k][TX + tx];
      for (int i = 0; i < 4; ++i) {
        acc[2 * i] += a0[i] * b0;
        acc[2 * i + 1] += a0[i] * b1;
        acc[8 + 2 * i] += a1[i] * b0;
        acc[8 + 2 * i + 1] += a1[i] * b1;
      }
    }
#ifdef PREFETCH
    if (t + 1u < nk) {
      uint nxt = cur ^ 1u;
      for (uint l = 0u; l < LA; ++l) {
        uint e = lid + NT * l, r = e / KV, q = e % KV;
        for (uint j = 0u; j < 4u; ++j) As[nxt][4u * q + j][r / 4u][r % 4u] = ra[l][j];
      }
      for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; Bs[nxt][e / (BN / 4u)][e % (BN / 4u)] = rb[l]; }
    }
#endif
    memoryBarrierShared();
    barrier();
  }
#ifdef LIB_EPI
  uint c_off = z * M * N;
  uint ma = m0 + 4u * ty, mb = m0 + BM / 2u + 4u * ty, na = n0 + 4u * tx, nb = n0 + BN / 2u + 4u * tx;
#define EPI_ROWS(I)                                         \
  epilogue_quad(ma + uint(I), na, acc[2 * I], c_off);      \
  epilogue_quad(ma + uint(I), nb, acc[2 * I + 1], c_off);  \
  epilogue_quad(mb + uint(I), na, acc[8 + 2 * I], c_off);  \
  epilogue_quad(mb + uint(I), nb, acc[9 + 2 * I], c_off);
  EPI_ROWS(0)
  EPI_ROWS(1)
  EPI_ROWS(2)
  EPI_ROWS(3)
#else
  uint N4c = N / 4u;
  for (uint i = 0u; i < 8u; ++i) {
    uint m = m0 + (i < 4u ? 4u * ty + i : BM / 2u + 4u * ty + i - 4u);
    STORE_C(m * N4c + nb4 + tx, acc[2u * i]);
    STORE_C(m * N4c + nb4 + TX + tx, acc[2u * i + 1u]);
  }
#endif
}
)";

// The library's 64x64 kernel as of 2026-11-22 (scalar loads, 4x4 per invocation), contiguous.
const char* kMatmul64 = R"(
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly restrict buffer A_ { float A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { float B[]; };
layout(std430, binding = 2) writeonly restrict buffer C_ { float C[]; };
uniform uint M, N, K;
shared float As[16][65];
shared float Bs[16][65];
void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
  uint m0 = gl_WorkGroupID.y * 64u, n0 = gl_WorkGroupID.x * 64u;
  float acc[4][4];
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < K; k0 += 16u) {
    for (uint e = tid; e < 1024u; e += 256u) {
      uint mm = e / 16u, kk = e % 16u;
      As[kk][mm] = A[(m0 + mm) * K + k0 + kk];
      uint kb = e / 64u, nb = e % 64u;
      Bs[kb][nb] = B[(k0 + kb) * N + n0 + nb];
    }
    memoryBarrierShared(); barrier();
    for (uint kk = 0u; kk < 16u; ++kk) {
      float a[4], b[4];
      for (uint i = 0u; i < 4u; ++i) a[i] = As[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) b[j] = Bs[kk][tx + 16u * j];
      for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    memoryBarrierShared(); barrier();
  }
  for (uint i = 0u; i < 4u; ++i) for (uint j = 0u; j < 4u; ++j)
    C[(m0 + ty + 16u * i) * N + n0 + tx + 16u * j] = acc[i][j];
}
)";

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
    std::string src;
    GLuint bm, bn;
    bool f16;
  };
  auto T = [](int bm, int bn, int bk, bool pf, bool f16 = false) {
    return "#define BM " + std::to_string(bm) + "u\n#define BN " + std::to_string(bn) + "u\n#define NTL " +
           std::to_string(bm * bn / 64) + "\n#define NT " + std::to_string(bm * bn / 64) + "u\n#define BK " +
           std::to_string(bk) + "u\n" + (pf ? "#define PREFETCH 1\n" : "") + (f16 ? "#define F16 1\n" : "") + kMatmulT;
  };
  std::vector<V> vs = {{"matmul 64 (library)", kMatmul64, 64, 64, false},
                       {"matmul 128x128 BK8 pf", T(128, 128, 8, true), 128, 128, false},
                       {"matmul 128x128 BK8", T(128, 128, 8, false), 128, 128, false},
                       {"matmul 128x128 BK16", T(128, 128, 16, false), 128, 128, false},
                       {"matmul 64x128 BK8 pf", T(64, 128, 8, true), 64, 128, false},
                       {"matmul 64x128 BK16 pf", T(64, 128, 16, true), 64, 128, false},
                       {"matmul 64x128 BK8", T(64, 128, 8, false), 64, 128, false},
                       {"matmul 128x64 BK8 pf", T(128, 64, 8, true), 128, 64, false},
                       {"matmul 64x64 BK8 pf", T(64, 64, 8, true), 64, 64, false},
                       {"matmul 64x64 BK16 pf", T(64, 64, 16, true), 64, 64, false},
                       {"matmul f16 128x128 BK8 pf", T(128, 128, 8, true, true), 128, 128, true},
                       {"matmul f16 64x128 BK8 pf", T(64, 128, 8, true, true), 64, 128, true},
                       // Bisecting the gap to the library's VEC4 kernel (same tile, same loop):
                       {"64x128 +lib strides", "#define LIB_STRIDES 1\n" + T(64, 128, 8, true), 64, 128, false},
                       {"64x128 +lib batch", "#define LIB_BATCH 1\n" + T(64, 128, 8, true), 64, 128, false},
                       {"64x128 +lib uvec4 out", "#define LIB_OUT 1\n" + T(64, 128, 8, true), 64, 128, false},
                       {"64x128 +lib epilogue", "#define LIB_EPI 1\n" + T(64, 128, 8, true), 64, 128, false},
                       {"64x128 +lib version 320", "#version 320 es\n" + T(64, 128, 8, true), 64, 128, false},
                       {"64x128 +lib all five",
                        "#version 320 es\n#define LIB_STRIDES 1\n#define LIB_BATCH 1\n#define LIB_OUT 1\n#define "
                        "LIB_EPI 1\n" +
                            T(64, 128, 8, true),
                        64, 128, false}};
  std::mt19937 g(7);
  for (const V& v : vs) {
    if (n % v.bm || n % v.bn) continue;
    GLuint p = compile(v.src);
    if (!p) continue;
    glUseProgram(p);
    for (const char* u : {"M", "N", "K"}) glUniform1ui(glGetUniformLocation(p, u), static_cast<GLuint>(n));
    glUniform1ui(glGetUniformLocation(p, "u_qa_s"), static_cast<GLuint>(n / 4));
    glUniform1ui(glGetUniformLocation(p, "u_qb_s"), static_cast<GLuint>(n / 4));
    glUniform1ui(glGetUniformLocation(p, "u_bshape"), 1u);
    glUniform1f(glGetUniformLocation(p, "u_alpha"), 1.0f);
    bind({v.f16 ? A16 : A, v.f16 ? B16 : B, C});
    const GLuint gx = static_cast<GLuint>(n / v.bn), gy = static_cast<GLuint>(n / v.bm);
    double ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, n >= 4096 ? 5 : 20);
    auto hc = read(C, n * n);
    double worst = 0;
    for (int s = 0; s < 64; ++s) {
      std::size_t i = g() % n, j = g() % n;
      double ref = 0;
      const auto& ra = v.f16 ? ha16 : ha;
      const auto& rb = v.f16 ? hb16 : hb;
      for (std::size_t k = 0; k < n; ++k) ref += double(ra[i * n + k]) * rb[k * n + j];
      worst = std::max(worst, std::abs(ref - hc[i * n + j]));
    }
    std::printf("%-28s n=%zu  %8.3f ms  %8.1f GFLOP/s  max err %.2e\n", v.name, n, ms, 2.0 * n * n * n / ms * 1e-6,
                worst);
    glDeleteProgram(p);
  }
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  // gltensor::matmul itself (5 calls per synchronize), per forced kernel.
  for (const char* kern : {"vec4", "tile64"}) {
    setenv("GLTENSOR_MATMUL_KERNEL", kern, 1);
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
    GLint prog = 0;
    glGetIntegerv(GL_CURRENT_PROGRAM, &prog);
    const bool vec4 = std::string(kern) == "vec4";
    const GLuint gx = static_cast<GLuint>(n / (vec4 ? 128 : 64)), gy = static_cast<GLuint>(n / 64);
    ms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, n >= 4096 ? 5 : 20);
    std::printf("matmul library program raw %-6s n=%zu  %8.3f ms  %8.1f GFLOP/s (program %d)\n", kern, n, ms,
                2.0 * n * n * n / ms * 1e-6, prog);
    g_dev->impl()->gl.invalidate();
    unsetenv("GLTENSOR_MATMUL_KERNEL");
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
// the library's source printed by GLTENSOR_DUMP_SOURCE=matmul.comp).
void lab_matmul_bisect(std::size_t n) {
  auto ha = random_floats(n * n, 4), hb = random_floats(n * n, 5);
  GLuint A = buffer(n * n * 4, ha.data()), B = buffer(n * n * 4, hb.data()), C = buffer(n * n * 4, nullptr);
  setenv("GLTENSOR_MATMUL_KERNEL", "vec4", 1);
  Generator gen(1);
  Tensor ta = randn(*g_dev, {std::int64_t(n), std::int64_t(n)}, gen),
         tb = randn(*g_dev, {std::int64_t(n), std::int64_t(n)}, gen);
  Tensor tc = matmul(ta, tb);
  unsetenv("GLTENSOR_MATMUL_KERNEL");
  g_dev->synchronize();
  GLint libprog = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &libprog);
  const GLuint LA = ta.impl()->storage->buffer(), LB = tb.impl()->storage->buffer(), LC = tc.impl()->storage->buffer();
  struct P {
    std::string name;
    GLuint prog;
    bool lab_bindings;  // A = 0, B = 1, C = 2
  };
  std::vector<P> progs = {{"library program", static_cast<GLuint>(libprog), false}};
  const std::string all5 =
      "#version 320 es\n#define LIB_STRIDES 1\n#define LIB_BATCH 1\n#define LIB_OUT 1\n#define LIB_EPI 1\n#define BM "
      "64u\n#define BN 128u\n#define NTL 128\n#define NT 128u\n#define BK 8u\n#define PREFETCH 1\n" +
      std::string(kMatmulT);
  progs.push_back({"lab kernel, all LIB_*", compile(all5), true});
  if (const char* dir = std::getenv("LAB_SRC_DIR")) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".comp") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream ss;
      ss << in.rdbuf();
      progs.push_back({f.filename().string(), compile(ss.str()), false});
    }
  }
  std::mt19937 g(7);
  for (const P& p : progs) {
    if (!p.prog) continue;
    glUseProgram(p.prog);
    auto u = [&](const char* name, GLuint v) {
      const GLint loc = glGetUniformLocation(p.prog, name);
      if (loc >= 0) glUniform1ui(loc, v);
    };
    for (const char* nm : {"M", "N", "K", "u_M", "u_N", "u_K"}) u(nm, static_cast<GLuint>(n));
    for (const char* nm : {"u_qa_s", "u_qb_s"}) u(nm, static_cast<GLuint>(n / 4));
    u("u_bshape", 1u);
    const GLint la = glGetUniformLocation(p.prog, "u_alpha");
    if (la >= 0) glUniform1f(la, 1.0f);
    for (bool lab_buffers : {false, true}) {
      const GLuint a = lab_buffers ? A : LA, b = lab_buffers ? B : LB, c = lab_buffers ? C : LC;
      if (p.lab_bindings)
        bind({a, b, c});
      else
        bind({c, a, b});
      const double ms = time_ms(
          [&] { glDispatchCompute(static_cast<GLuint>(n / 128), static_cast<GLuint>(n / 64), 1); }, n >= 4096 ? 5 : 20);
      double worst = 0;
      if (lab_buffers) {
        auto hc = read(C, n * n);
        for (int k = 0; k < 32; ++k) {
          std::size_t i = g() % n, j = g() % n;
          double ref = 0;
          for (std::size_t q = 0; q < n; ++q) ref += double(ha[i * n + q]) * hb[q * n + j];
          worst = std::max(worst, std::abs(ref - hc[i * n + j]));
        }
      }
      std::printf("bisect %-34s %-15s n=%zu  %8.3f ms  %8.1f GFLOP/s  max err %.2e\n", p.name.c_str(),
                  lab_buffers ? "lab buffers" : "library buffers", n, ms, 2.0 * n * n * n / ms * 1e-6, worst);
    }
    if (p.prog != static_cast<GLuint>(libprog)) glDeleteProgram(p.prog);
  }
  g_dev->impl()->gl.invalidate();
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  glDeleteBuffers(1, &C);
}

// conv2d 32x64x56x56, 64 3x3 filters, pad 1 (the bench case), stage by stage through the
// library: the whole conv2d, the GEMM it runs (linear over im2col rows), the same GEMM the other
// way round (weights @ columns: M = 64 output channels), and the NHWC -> NCHW copy.
void lab_conv() {
  Generator gen(2);
  Tensor x = randn(*g_dev, {32, 64, 56, 56}, gen), w = randn(*g_dev, {64, 64, 3, 3}, gen), b = randn(*g_dev, {64}, gen);
  Tensor cols = randn(*g_dev, {32 * 56 * 56, 576}, gen), colsT = randn(*g_dev, {576, 32 * 56 * 56}, gen);
  Tensor wm = w.reshape({64, 576});
  Tensor nhwc = randn(*g_dev, {32, 56, 56, 64}, gen);
  const double flop = 2.0 * 32 * 56 * 56 * 64 * 576;
  auto report = [&](const char* name, const std::function<void()>& f) {
    const double ms = time_ms(f, 10);
    std::printf("conv %-44s %8.3f ms  %8.1f GFLOP/s (conv flops)\n", name, ms, flop / ms * 1e-6);
  };
  report("conv2d total", [&] { Tensor y = conv2d(x, w, b, Conv2dOptions::pad(1)); });
  report("linear(cols [100352,576], wm [64,576])", [&] { Tensor y = linear(cols, wm, b); });
  report("matmul(wm [64,576], colsT [576,100352])", [&] { Tensor y = matmul(wm, colsT); });
  report("permute NHWC -> NCHW copy", [&] { Tensor y = nhwc.permute({0, 3, 1, 2}).contiguous(); });
  // The same GEMM with N = 528 and 1056 tiles of 128 (one and two full waves if 4 workgroups of
  // the kernel fit an SM of 132): rates scaled to the bench case's flops by N.
  for (std::int64_t tiles : {528, 1056, 784 * 2}) {
    Tensor c2 = randn(*g_dev, {576, tiles * 128}, gen);
    const double ms = time_ms([&] { Tensor y = matmul(wm, c2); }, 10);
    std::printf("conv matmul(wm [64,576], colsT [576,%lld]) %8.3f ms  %8.1f GFLOP/s\n",
                static_cast<long long>(tiles * 128), ms, 2.0 * 64 * 576 * tiles * 128 / ms * 1e-6);
  }
  g_dev->synchronize();
}

// Buffer usage hints (NVIDIA's driver places buffers by them: its debug output speaks of moving
// buffers between video and "DMA cached" memory): the raw vec4 add and a write-only fill on
// buffers created with each hint, two rounds in alternating order after a warm-up.
void lab_hints() {
  const std::size_t n = 1u << 26, n4 = n / 4;
  const std::string one = quad_program("c[i] = a[i] + b[i];");
  const std::string fill = quad_program("c[i] = vec4(float(i));");
  GLuint padd = compile(one), pfill = compile(fill);
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
  const GLuint gx = 32768, gy = static_cast<GLuint>(n4 / 256 / 32768);
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 6; ++i) {
      const H& h = hints[round % 2 ? 5 - i : i];
      GLuint A = make(h.usage), B = make(h.usage), C = make(h.usage);
      bind({A, B, C});
      glUseProgram(pfill);
      glUniform1ui(glGetUniformLocation(pfill, "n4"), static_cast<GLuint>(n4));
      const double fms = time_ms([&] { glDispatchCompute(gx, gy, 1); }, 20);
      glUseProgram(padd);
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
  g_dev->impl()->gl.invalidate();
}

// Relative placement of add's three streams: (1) ranges of one buffer, B and C starting `delta`
// bytes after the previous range's end; (2) three separate buffers of n * 4 + pad bytes, made
// anew each time (the allocations' placement is the driver's). Two rounds.
void lab_offsets() {
  const std::size_t n = 1u << 26, n4 = n / 4, bytes = n * 4;
  const std::string one = quad_program("c[i] = a[i] + b[i];");
  GLuint padd = compile(one);
  glUseProgram(padd);
  glUniform1ui(glGetUniformLocation(padd, "n4"), static_cast<GLuint>(n4));
  GLint align = 0;
  glGetIntegerv(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, &align);
  std::printf("offsets: SSBO offset alignment %d\n", align);
  const GLuint gx = 32768, gy = static_cast<GLuint>(n4 / 256 / 32768);
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
  g_dev->impl()->gl.invalidate();
}

// Program binaries of the library's kernels for the bench shapes (matmul 4096 quad-load, conv2d,
// attention, softmax, add), written to $LAB_OUT/NAME.bin (default .), for reading what the
// driver made of them (NVIDIA's binaries carry its assembly as text).
void lab_asm() {
  Generator gen(3);
  const char* dir = std::getenv("LAB_OUT");
  auto dump = [&](const char* name, const std::function<void()>& op) {
    op();
    g_dev->synchronize();
    GLint prog = 0, len = 0;
    glGetIntegerv(GL_CURRENT_PROGRAM, &prog);
    glGetProgramiv(static_cast<GLuint>(prog), GL_PROGRAM_BINARY_LENGTH, &len);
    std::vector<char> bin(static_cast<std::size_t>(std::max(len, 0)));
    GLenum fmt = 0;
    GLsizei got = 0;
    if (len > 0) glGetProgramBinary(static_cast<GLuint>(prog), len, &got, &fmt, bin.data());
    const std::filesystem::path path = std::filesystem::path(dir ? dir : ".") / (std::string(name) + ".bin");
    std::ofstream(path, std::ios::binary).write(bin.data(), got);
    std::printf("asm %-10s program %d: %d bytes -> %s\n", name, prog, static_cast<int>(got), path.c_str());
  };
  Tensor a = randn(*g_dev, {4096, 4096}, gen), b = randn(*g_dev, {4096, 4096}, gen);
  dump("matmul", [&] { Tensor c = matmul(a, b); });
  Tensor x = randn(*g_dev, {32, 64, 56, 56}, gen), w = randn(*g_dev, {64, 64, 3, 3}, gen);
  dump("conv2d", [&] { Tensor y = conv2d(x, w, Tensor(), Conv2dOptions::pad(1)); });
  Tensor q = randn(*g_dev, {8, 16, 1024, 64}, gen);
  dump("attention", [&] { Tensor o = scaled_dot_product_attention(q, q, q, Tensor(), true); });
  Tensor r = randn(*g_dev, {16384, 4096}, gen);
  dump("softmax", [&] { Tensor o = softmax(r, -1); });
  Tensor e = randn(*g_dev, {1 << 26}, gen);
  dump("add", [&] { Tensor o = add(e, e); });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  Device d = Device::open();
  g_dev = &d;
  detail::Enter guard(*d.impl(), "kernel_lab");
  const bool sw = d.impl()->adapter.software;
  std::printf("device: %s\n", d.caps().renderer.c_str());
  auto want = [&](const char* name) { return filter.empty() || std::string(name).find(filter) != std::string::npos; };
  if (want("add")) lab_add(sw);
  if (want("sum")) lab_sum(d.caps().subgroup, sw);
  if (want("conv") && !sw) lab_conv();
  if (want("bufs") && !sw) lab_bufs();
  if (want("bisect")) lab_matmul_bisect(sw ? 256 : 4096);
  if (filter == "asm") lab_asm();
  if (filter == "hints" && !sw) lab_hints();
  if (filter == "offsets" && !sw) lab_offsets();
  if (want("matmul")) {
    if (sw) {
      lab_matmul(256);
    } else {
      lab_matmul(1024);
      lab_matmul(4096);
    }
  }
  return 0;
}
