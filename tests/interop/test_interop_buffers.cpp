// interop buffers: an application's buffer wrapped as a tensor (read, written in place, its
// other bytes untouched, checked against its size and alignment), a tensor's buffer handed to
// the application (read by its own shader and by a copy), and the acquire/release hand-off.
#include <cstring>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;

namespace {

class Buffers : public ::testing::TestWithParam<bool> {  // desktop OpenGL?
 protected:
  void SetUp() override {
    app_ = std::make_unique<AppContext>(GetParam());
    dev_ = Device::adopt_current();
  }
  void TearDown() override {
    dev_ = Device();
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
    app_.reset();
  }
  GLuint make_buffer(const void* data, std::size_t bytes) {
    GLuint b = 0;
    glGenBuffers(1, &b);
    glBindBuffer(GL_COPY_WRITE_BUFFER, b);
    glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(bytes), data, GL_DYNAMIC_DRAW);
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    return b;
  }
  std::vector<std::uint8_t> read_buffer(GLuint b, std::size_t bytes) {
    std::vector<std::uint8_t> out(bytes);
    glBindBuffer(GL_COPY_READ_BUFFER, b);
    const void* p = glMapBufferRange(GL_COPY_READ_BUFFER, 0, static_cast<GLsizeiptr>(bytes), GL_MAP_READ_BIT);
    EXPECT_NE(p, nullptr);
    if (p) std::memcpy(out.data(), p, bytes);
    glUnmapBuffer(GL_COPY_READ_BUFFER);
    glBindBuffer(GL_COPY_READ_BUFFER, 0);
    return out;
  }
  std::unique_ptr<AppContext> app_;
  Device dev_;
};

TEST_P(Buffers, WrappedBufferIsReadAndWrittenInPlace) {
  GLT_RNG(rng);
  // 7 floats of sentinel, 2 x 3 tensor at byte 28, 5 floats of sentinel.
  std::vector<float> host(15, 1234.5f);
  auto vals = glt_test::uniform(rng, 6);
  for (int i = 0; i < 6; ++i) host[static_cast<std::size_t>(7 + i)] = vals[static_cast<std::size_t>(i)];
  host.resize(18, 1234.5f);
  const GLuint b = make_buffer(host.data(), host.size() * 4);
  Tensor t = interop::wrap_buffer(dev_, b, 28, {2, 3}, DType::f32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_vector(), vals) << "read through the wrap";
  Tensor y = t * 2.0 + 1.0;
  t.copy_(y);  // written in place
  GLsync f = interop::release(dev_);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(glClientWaitSync(f, GL_SYNC_FLUSH_COMMANDS_BIT, 5000000000ull) != GL_WAIT_FAILED, true);
  glDeleteSync(f);
  auto bytes = read_buffer(b, host.size() * 4);
  std::vector<float> got(host.size());
  std::memcpy(got.data(), bytes.data(), bytes.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool inside = i >= 7 && i < 13;
    const float want = inside ? vals[i - 7] * 2.0f + 1.0f : 1234.5f;
    EXPECT_EQ(got[i], want) << "float " << i << (inside ? " (the tensor)" : " (outside the tensor)");
  }
  EXPECT_EQ(interop::buffer_of(t).buffer, b);
  EXPECT_EQ(interop::buffer_of(t).offset, 28u);
  EXPECT_EQ(interop::buffer_of(t).size, 24u);
  t = Tensor();
  y = Tensor();
  dev_.synchronize();
  EXPECT_TRUE(glIsBuffer(b)) << "gltensor deleted the application's buffer";
  glDeleteBuffers(1, &b);
}

TEST_P(Buffers, SubWordDtypesKeepNeighbouringBytes) {
  // f16 at byte 2 (3 elements) and u8 at byte 9 (5 elements) inside one 16-byte buffer.
  std::vector<std::uint8_t> host(16, 0xAB);
  const GLuint b = make_buffer(host.data(), host.size());
  Tensor h = interop::wrap_buffer(dev_, b, 2, {3}, DType::f16);
  h.copy_(Tensor::from_host(dev_, std::vector<float>{1.5f, -2.0f, 0.25f}, {3}));
  Tensor u = interop::wrap_buffer(dev_, b, 9, {5}, DType::u8);
  u.copy_(Tensor::from_host(dev_, std::vector<std::int32_t>{1, 2, 3, 4, 5}, {5}, DType::u8));
  EXPECT_EQ(h.to_vector(), (std::vector<float>{1.5f, -2.0f, 0.25f}));
  EXPECT_EQ(u.to_int_vector(), (std::vector<std::int32_t>{1, 2, 3, 4, 5}));
  interop::release(dev_, interop::kAllBarrierBits, false);
  auto got = read_buffer(b, 16);
  std::vector<std::uint8_t> want(16, 0xAB);
  const std::uint16_t halves[3] = {f32_to_f16(1.5f), f32_to_f16(-2.0f), f32_to_f16(0.25f)};
  std::memcpy(want.data() + 2, halves, 6);
  for (int i = 0; i < 5; ++i) want[static_cast<std::size_t>(9 + i)] = static_cast<std::uint8_t>(i + 1);
  EXPECT_EQ(got, want);
  glDeleteBuffers(1, &b);
}

TEST_P(Buffers, WrapChecksSizeAlignmentAndName) {
  std::vector<float> host(8, 0.0f);
  const GLuint b = make_buffer(host.data(), 32);
  EXPECT_THROW(interop::wrap_buffer(dev_, 0, 0, {1}, DType::f32), ValueError);
  EXPECT_THROW(interop::wrap_buffer(dev_, b + 1000, 0, {1}, DType::f32), ValueError);
  EXPECT_THROW(interop::wrap_buffer(dev_, b, 2, {1}, DType::f32), ValueError);  // not element-aligned
  EXPECT_THROW(interop::wrap_buffer(dev_, b, 0, {9}, DType::f32), ShapeError);  // 36 > 32 bytes
  try {
    interop::wrap_buffer(dev_, b, 4, {2, 4}, DType::f32);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[2, 4]"), std::string::npos) << m;
    EXPECT_NE(m.find("32 bytes"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(interop::wrap_buffer(dev_, b, 0, {8}, DType::f32));
  EXPECT_NO_THROW(interop::wrap_buffer(dev_, b, 31, {1}, DType::u8));
  EXPECT_NO_THROW(interop::wrap_buffer(dev_, b, 0, {0}, DType::f32));
  // Past the device's SSBO limit (kernels bind the whole buffer).
  const auto limit = static_cast<std::size_t>(dev_.caps().max_ssbo_block_size);
  const GLuint big = make_buffer(nullptr, limit + 64);
  const std::size_t edge = limit / 16 * 16;  // aligned (the H100's limit is 2^31 - 1 bytes)
  EXPECT_THROW(interop::wrap_buffer(dev_, big, edge, {4}, DType::f32), LimitError);
  EXPECT_NO_THROW(interop::wrap_buffer(dev_, big, edge - 16, {4}, DType::f32));
  glDeleteBuffers(1, &big);
  glDeleteBuffers(1, &b);
}

TEST_P(Buffers, ExportedBufferIsReadByTheApplication) {
  GLT_RNG(rng);
  auto vals = glt_test::uniform(rng, 37);
  Tensor t = Tensor::from_host(dev_, vals, {37}) * 3.0;
  // A view at an offset: its range starts inside the storage.
  Tensor v = t.narrow(0, 5, 32);
  const interop::BufferRange r = interop::buffer_of(v);
  EXPECT_EQ(r.offset, 20u);
  EXPECT_EQ(r.size, 128u);
  EXPECT_THROW(interop::buffer_of(t.view({37, 1}).expand({37, 2})), ValueError);
  interop::release(v, GL_BUFFER_UPDATE_BARRIER_BIT);
  // The application copies the range into its own buffer and maps it.
  const GLuint dst = make_buffer(nullptr, r.size);
  glBindBuffer(GL_COPY_READ_BUFFER, r.buffer);
  glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
  glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(r.offset), 0,
                      static_cast<GLsizeiptr>(r.size));
  glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  auto bytes = read_buffer(dst, r.size);
  std::vector<float> got(32);
  std::memcpy(got.data(), bytes.data(), 128);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], vals[static_cast<std::size_t>(5 + i)] * 3.0f);
  glDeleteBuffers(1, &dst);
}

TEST_P(Buffers, ApplicationShaderWritesAreSeenAfterAcquire) {
  // The application's compute shader writes a buffer gltensor wrapped (incoherent SSBO stores);
  // acquire() issues the barrier that makes them visible to gltensor's kernels.
  const char* src = GetParam() ? "#version 430 core\n" : "#version 310 es\n";
  const std::string code = std::string(src) +
                           "layout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B { float d[]; };\n"
                           "void main() { d[gl_GlobalInvocationID.x] = float(gl_GlobalInvocationID.x) * 0.5; }\n";
  GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
  const char* c = code.c_str();
  glShaderSource(sh, 1, &c, nullptr);
  glCompileShader(sh);
  GLuint prog = glCreateProgram();
  glAttachShader(prog, sh);
  glLinkProgram(prog);
  glDeleteShader(sh);
  const GLuint b = make_buffer(nullptr, 256 * 4);
  Tensor t = interop::wrap_buffer(dev_, b, 0, {256}, DType::f32);
  for (int frame = 0; frame < 3; ++frame) {
    glUseProgram(prog);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, b);
    glDispatchCompute(4, 1, 1);
    interop::acquire(dev_);
    auto got = sum(t).item();
    EXPECT_EQ(got, 0.5f * 255.0f * 256.0f / 2.0f) << "frame " << frame;
    mul_(t, 0.0);  // gltensor writes it; the application's next dispatch overwrites again
    interop::release(dev_, GL_SHADER_STORAGE_BARRIER_BIT, false);
  }
  glDeleteProgram(prog);
  glDeleteBuffers(1, &b);
}

INSTANTIATE_TEST_SUITE_P(Contexts, Buffers, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "gl" : "gles"); });

}  // namespace
