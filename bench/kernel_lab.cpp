// Kernel lab: times candidate GLSL formulations of the hot kernels (elementwise add, sum,
// matmul) in isolation, outside the library's dispatch path, so that variants can be compared
// on one device in one run before one of them goes into glsl/. Not part of the test suite.
// Usage: gltensor_kernel_lab [FILTER]   (runs the experiments whose name contains FILTER)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "device_impl.hpp"
#include "gl.hpp"
#include "gltensor/gltensor.hpp"

using namespace gltensor;

namespace {

Device* g_dev = nullptr;

GLuint compile(const std::string& src) {
  const std::string full = "#version 310 es\n" + src;
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
  const std::string one =
      "void main(){ uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x "
      "* gl_WorkGroupSize.x; if (i < n4) c[i] = a[i] + b[i]; }";
  const std::string four =
      "void main(){ uint base = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * gl_WorkGroupSize.x * 4u + "
      "gl_LocalInvocationID.x; for (uint k = 0u; k < 4u; ++k) { uint i = base + k * gl_WorkGroupSize.x; if (i < n4) "
      "c[i] = a[i] + b[i]; } }";
  const std::string grid =
      "void main(){ uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x; for (uint i = gl_GlobalInvocationID.x; i < "
      "n4; i += stride) c[i] = a[i] + b[i]; }";
  const std::string copy =
      "void main(){ uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * "
      "gl_WorkGroupSize.x; if (i < n4) c[i] = a[i]; }";
  const std::string fill =
      "void main(){ uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * "
      "gl_WorkGroupSize.x; if (i < n4) c[i] = vec4(float(i)); }";
  const std::string readonly =
      "void main(){ uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * "
      "gl_WorkGroupSize.x; if (i < n4) { vec4 v = a[i]; if (v.x == 12345.0) c[0] = v; } }";
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
  glDeleteBuffers(1, &A);
  glDeleteBuffers(1, &B);
  glDeleteBuffers(1, &C);
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
layout(std430, binding = 2) writeonly restrict buffer C_ { vec4 C[]; };
uniform uint M, N, K;
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
void main() {
  uint lid = gl_LocalInvocationID.x, tx = lid % TX, ty = lid / TX;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint K4 = K / 4u, N4 = N / 4u, nb4 = n0 / 4u;
  vec4 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
  vec4 ra[LA], rb[LB];
  uint nk = K / BK;
#ifdef PREFETCH
  for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA((m0 + e / KV) * K4 + e % KV); }
  for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB((e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
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
      for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA((m0 + e / KV) * K4 + k1 / 4u + e % KV); }
      for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB((k1 + e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
    }
#else
    const uint cur = 0u;
    uint k0 = t * BK;
    for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA((m0 + e / KV) * K4 + k0 / 4u + e % KV); }
    for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB((k0 + e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
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
  for (uint i = 0u; i < 8u; ++i) {
    uint m = m0 + (i < 4u ? 4u * ty + i : BM / 2u + 4u * ty + i - 4u);
    C[m * N4 + nb4 + tx] = acc[2u * i];
    C[m * N4 + nb4 + TX + tx] = acc[2u * i + 1u];
  }
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
                       {"matmul f16 64x128 BK8 pf", T(64, 128, 8, true, true), 64, 128, true}};
  std::mt19937 g(7);
  for (const V& v : vs) {
    if (n % v.bm || n % v.bn) continue;
    GLuint p = compile(v.src);
    if (!p) continue;
    glUseProgram(p);
    for (const char* u : {"M", "N", "K"}) glUniform1ui(glGetUniformLocation(p, u), static_cast<GLuint>(n));
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
    unsetenv("GLTENSOR_MATMUL_KERNEL");
  }
  glDeleteBuffers(1, &C);
  glDeleteBuffers(1, &A16);
  glDeleteBuffers(1, &B16);
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
