// Test helpers that play a graphics application: its own EGL context (OpenGL ES or desktop
// OpenGL), every binding of its GL state set to its own objects, and a snapshot of that state
// (every binding of OpenGL ES 3.1: program, VAO, FBOs, renderbuffer, program pipeline, generic
// and indexed uniform / shader storage / atomic counter / transform feedback buffers with their
// ranges, copy / pixel / indirect buffers, every texture unit and target, samplers, image
// units, active texture, viewport, scissor, pixel store; OpenGL ES 3.2 and desktop targets
// where the context has them) to compare before and after gltensor's calls.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/egl_platform.hpp"
#include "runtime/gl.hpp"

#ifndef GL_TEXTURE_1D
#define GL_TEXTURE_1D 0x0DE0
#define GL_TEXTURE_BINDING_1D 0x8068
#define GL_TEXTURE_1D_ARRAY 0x8C18
#define GL_TEXTURE_BINDING_1D_ARRAY 0x8C1C
#define GL_TEXTURE_RECTANGLE 0x84F5
#define GL_TEXTURE_BINDING_RECTANGLE 0x84F6
#endif

namespace glt_app {

/// What the helpers need to know of a context.
struct ContextKind {
  bool desktop = false;
  bool es32 = false;  // OpenGL ES 3.2 (or desktop): texture buffers, cube map arrays, ...
};

/// An application's context: EGL, surfaceless, OpenGL ES 3.2 or desktop OpenGL core.
struct AppContext : ContextKind {
  gltensor::detail::EglContext egl;

  explicit AppContext(bool desktop_gl) {
    desktop = desktop_gl;
    auto cands = gltensor::detail::enumerate_egl_candidates();
    std::string why;
    if (cands.empty() ||
        !gltensor::detail::create_egl_context(cands[0], false, desktop ? EGL_OPENGL_API : EGL_OPENGL_ES_API, egl, why))
      throw std::runtime_error("no application context: " + why);
    make_current();
    GLint major = 0, minor = 0;
    glGetIntegerv(GL_MAJOR_VERSION, &major);
    glGetIntegerv(GL_MINOR_VERSION, &minor);
    es32 = desktop || major > 3 || minor >= 2;
  }
  ~AppContext() { gltensor::detail::destroy_egl_context(egl); }
  AppContext(const AppContext&) = delete;
  AppContext& operator=(const AppContext&) = delete;
  void make_current() const { ASSERT_TRUE(gltensor::detail::make_current(egl)); }
  bool current() const { return eglGetCurrentContext() == egl.context; }
};

using Snapshot = std::map<std::string, std::int64_t>;

inline GLint get_int(GLenum e) {
  GLint v = 0;
  glGetIntegerv(e, &v);
  return v;
}

struct TextureTarget {
  GLenum target, binding;
  const char* name;
  int level;  // 0: OpenGL ES 3.1, 1: ES 3.2 or desktop, 2: desktop only
};
inline const std::vector<TextureTarget>& texture_targets() {
  static const std::vector<TextureTarget> t = {
      {GL_TEXTURE_2D, GL_TEXTURE_BINDING_2D, "2d", 0},
      {GL_TEXTURE_3D, GL_TEXTURE_BINDING_3D, "3d", 0},
      {GL_TEXTURE_2D_ARRAY, GL_TEXTURE_BINDING_2D_ARRAY, "2d_array", 0},
      {GL_TEXTURE_CUBE_MAP, GL_TEXTURE_BINDING_CUBE_MAP, "cube", 0},
      {GL_TEXTURE_2D_MULTISAMPLE, GL_TEXTURE_BINDING_2D_MULTISAMPLE, "2d_ms", 0},
      {GL_TEXTURE_2D_MULTISAMPLE_ARRAY, GL_TEXTURE_BINDING_2D_MULTISAMPLE_ARRAY, "2d_ms_array", 1},
      {GL_TEXTURE_CUBE_MAP_ARRAY, GL_TEXTURE_BINDING_CUBE_MAP_ARRAY, "cube_array", 1},
      {GL_TEXTURE_BUFFER, GL_TEXTURE_BINDING_BUFFER, "buffer", 1},
      {GL_TEXTURE_1D, GL_TEXTURE_BINDING_1D, "1d", 2},
      {GL_TEXTURE_1D_ARRAY, GL_TEXTURE_BINDING_1D_ARRAY, "1d_array", 2},
      {GL_TEXTURE_RECTANGLE, GL_TEXTURE_BINDING_RECTANGLE, "rect", 2},
  };
  return t;
}
inline bool has_target(const ContextKind& app, const TextureTarget& t) {
  return t.level == 0 || (t.level == 1 && app.es32) || (t.level == 2 && app.desktop);
}

struct IndexedTarget {
  GLenum target, binding, start, size, max;
  const char* name;
};
inline const std::vector<IndexedTarget>& indexed_targets() {
  static const std::vector<IndexedTarget> t = {
      {GL_UNIFORM_BUFFER, GL_UNIFORM_BUFFER_BINDING, GL_UNIFORM_BUFFER_START, GL_UNIFORM_BUFFER_SIZE,
       GL_MAX_UNIFORM_BUFFER_BINDINGS, "ubo"},
      {GL_SHADER_STORAGE_BUFFER, GL_SHADER_STORAGE_BUFFER_BINDING, GL_SHADER_STORAGE_BUFFER_START,
       GL_SHADER_STORAGE_BUFFER_SIZE, GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS, "ssbo"},
      {GL_ATOMIC_COUNTER_BUFFER, GL_ATOMIC_COUNTER_BUFFER_BINDING, GL_ATOMIC_COUNTER_BUFFER_START,
       GL_ATOMIC_COUNTER_BUFFER_SIZE, GL_MAX_ATOMIC_COUNTER_BUFFER_BINDINGS, "atomic"},
      {GL_TRANSFORM_FEEDBACK_BUFFER, GL_TRANSFORM_FEEDBACK_BUFFER_BINDING, GL_TRANSFORM_FEEDBACK_BUFFER_START,
       GL_TRANSFORM_FEEDBACK_BUFFER_SIZE, GL_MAX_TRANSFORM_FEEDBACK_SEPARATE_ATTRIBS, "xfb"},
  };
  return t;
}

/// Every binding listed at the top of this file, by name.
inline Snapshot snapshot(const ContextKind& app) {
  Snapshot s;
  const auto one = [&](const std::string& name, GLenum e) { s[name] = get_int(e); };
  one("program", GL_CURRENT_PROGRAM);
  one("vao", GL_VERTEX_ARRAY_BINDING);
  one("draw_fbo", GL_DRAW_FRAMEBUFFER_BINDING);
  one("read_fbo", GL_READ_FRAMEBUFFER_BINDING);
  one("renderbuffer", GL_RENDERBUFFER_BINDING);
  one("pipeline", GL_PROGRAM_PIPELINE_BINDING);
  one("xfb_object", GL_TRANSFORM_FEEDBACK_BINDING);
  one("active_texture", GL_ACTIVE_TEXTURE);
  const std::pair<const char*, GLenum> generic[] = {
      {"array_buffer", GL_ARRAY_BUFFER_BINDING},
      {"element_buffer", GL_ELEMENT_ARRAY_BUFFER_BINDING},
      {"copy_read", GL_COPY_READ_BUFFER_BINDING},
      {"copy_write", GL_COPY_WRITE_BUFFER_BINDING},
      {"pixel_pack", GL_PIXEL_PACK_BUFFER_BINDING},
      {"pixel_unpack", GL_PIXEL_UNPACK_BUFFER_BINDING},
      {"uniform_buffer", GL_UNIFORM_BUFFER_BINDING},
      {"ssbo_generic", GL_SHADER_STORAGE_BUFFER_BINDING},
      {"atomic_generic", GL_ATOMIC_COUNTER_BUFFER_BINDING},
      {"dispatch_indirect", GL_DISPATCH_INDIRECT_BUFFER_BINDING},
      {"draw_indirect", GL_DRAW_INDIRECT_BUFFER_BINDING},
      {"xfb_generic", GL_TRANSFORM_FEEDBACK_BUFFER_BINDING},
  };
  for (const auto& [n, e] : generic) one(n, e);
  if (app.es32) one("texture_buffer", GL_TEXTURE_BUFFER_BINDING);
  for (const IndexedTarget& t : indexed_targets()) {
    const GLint n = get_int(t.max);
    for (GLint i = 0; i < n; ++i) {
      GLint b = 0;
      GLint64 start = 0, size = 0;
      glGetIntegeri_v(t.binding, static_cast<GLuint>(i), &b);
      glGetInteger64i_v(t.start, static_cast<GLuint>(i), &start);
      glGetInteger64i_v(t.size, static_cast<GLuint>(i), &size);
      const std::string k = std::string(t.name) + "[" + std::to_string(i) + "]";
      s[k + ".buffer"] = b;
      s[k + ".start"] = start;
      s[k + ".size"] = size;
    }
  }
  const GLint active = get_int(GL_ACTIVE_TEXTURE);
  const GLint units = get_int(GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS);
  for (GLint u = 0; u < units; ++u) {
    glActiveTexture(GL_TEXTURE0 + static_cast<GLenum>(u));
    const std::string k = "unit[" + std::to_string(u) + "].";
    for (const TextureTarget& t : texture_targets())
      if (has_target(app, t)) s[k + t.name] = get_int(t.binding);
    s[k + "sampler"] = get_int(GL_SAMPLER_BINDING);
  }
  glActiveTexture(static_cast<GLenum>(active));
  const GLint images = get_int(GL_MAX_IMAGE_UNITS);
  const std::pair<const char*, GLenum> image_fields[] = {
      {"name", GL_IMAGE_BINDING_NAME},   {"level", GL_IMAGE_BINDING_LEVEL},   {"layered", GL_IMAGE_BINDING_LAYERED},
      {"layer", GL_IMAGE_BINDING_LAYER}, {"access", GL_IMAGE_BINDING_ACCESS}, {"format", GL_IMAGE_BINDING_FORMAT}};
  for (GLint i = 0; i < images; ++i)
    for (const auto& [n, e] : image_fields) {
      GLint v = 0;
      glGetIntegeri_v(e, static_cast<GLuint>(i), &v);
      s["image[" + std::to_string(i) + "]." + n] = v;
    }
  GLint vp[4], sc[4];
  glGetIntegerv(GL_VIEWPORT, vp);
  glGetIntegerv(GL_SCISSOR_BOX, sc);
  for (int i = 0; i < 4; ++i) {
    s["viewport[" + std::to_string(i) + "]"] = vp[i];
    s["scissor[" + std::to_string(i) + "]"] = sc[i];
  }
  const std::pair<const char*, GLenum> pixel[] = {
      {"unpack_alignment", GL_UNPACK_ALIGNMENT},       {"unpack_row_length", GL_UNPACK_ROW_LENGTH},
      {"unpack_skip_rows", GL_UNPACK_SKIP_ROWS},       {"unpack_skip_pixels", GL_UNPACK_SKIP_PIXELS},
      {"unpack_image_height", GL_UNPACK_IMAGE_HEIGHT}, {"pack_alignment", GL_PACK_ALIGNMENT},
      {"pack_row_length", GL_PACK_ROW_LENGTH}};
  for (const auto& [n, e] : pixel) one(n, e);
  s["scissor_test"] = glIsEnabled(GL_SCISSOR_TEST);
  s["blend"] = glIsEnabled(GL_BLEND);
  return s;
}

/// "name: before -> after" for every binding that differs (empty when none).
inline std::string diff(const Snapshot& before, const Snapshot& after) {
  std::string out;
  int n = 0;
  for (const auto& [k, v] : before) {
    auto it = after.find(k);
    const std::int64_t w = it == after.end() ? -1 : it->second;
    if (v != w && n++ < 20) out += "\n  " + k + ": " + std::to_string(v) + " -> " + std::to_string(w);
  }
  if (n > 20) out += "\n  ... " + std::to_string(n - 20) + " more";
  return out;
}

/// The application's objects, bound everywhere (non-zero, distinct where it matters).
struct AppState {
  std::vector<GLuint> buffers, textures, samplers, fbos;
  GLuint program = 0, vao = 0, renderbuffer = 0, pipeline = 0;
  GLuint image_textures[2] = {0, 0};
  GLuint interop_buffer = 0, interop_texture = 0;  // for gltensor: 1024 bytes; RGBA8 8 x 8

  explicit AppState(const ContextKind& app) {
    glGenBuffers(1, &interop_buffer);
    glBindBuffer(GL_COPY_WRITE_BUFFER, interop_buffer);
    glBufferData(GL_COPY_WRITE_BUFFER, 1024, nullptr, GL_DYNAMIC_DRAW);
    glGenTextures(1, &interop_texture);
    glBindTexture(GL_TEXTURE_2D, interop_texture);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, 8, 8);
    const char* src_es =
        "#version 310 es\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\n"
        "void main() { d[0] = 7u; }\n";
    const char* src_gl =
        "#version 430 core\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\n"
        "void main() { d[0] = 7u; }\n";
    GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
    const char* src = app.desktop ? src_gl : src_es;
    glShaderSource(sh, 1, &src, nullptr);
    glCompileShader(sh);
    program = glCreateProgram();
    glAttachShader(program, sh);
    glLinkProgram(program);
    glDeleteShader(sh);
    buffers.resize(28);
    glGenBuffers(static_cast<GLsizei>(buffers.size()), buffers.data());
    for (GLuint b : buffers) {
      glBindBuffer(GL_COPY_WRITE_BUFFER, b);
      glBufferData(GL_COPY_WRITE_BUFFER, 4096, nullptr, GL_DYNAMIC_DRAW);
    }
    glGenVertexArrays(1, &vao);
    glBindVertexArray(vao);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, buffers[0]);
    const GLenum generic[] = {GL_ARRAY_BUFFER,          GL_COPY_READ_BUFFER,      GL_COPY_WRITE_BUFFER,
                              GL_PIXEL_PACK_BUFFER,     GL_PIXEL_UNPACK_BUFFER,   GL_UNIFORM_BUFFER,
                              GL_SHADER_STORAGE_BUFFER, GL_ATOMIC_COUNTER_BUFFER, GL_DISPATCH_INDIRECT_BUFFER,
                              GL_DRAW_INDIRECT_BUFFER};
    int next = 1;
    for (GLenum t : generic) glBindBuffer(t, buffers[next++]);
    if (app.es32) glBindBuffer(GL_TEXTURE_BUFFER, buffers[next]);
    ++next;
    for (const IndexedTarget& t : indexed_targets()) {
      GLint align = 4;
      if (t.target == GL_UNIFORM_BUFFER) align = get_int(GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT);
      if (t.target == GL_SHADER_STORAGE_BUFFER) align = get_int(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT);
      const GLint n = get_int(t.max);
      for (GLint i = 0; i < n; ++i) {
        const GLuint b = buffers[static_cast<std::size_t>(next + i % 3)];
        if (i % 3 == 2)
          glBindBufferBase(t.target, static_cast<GLuint>(i), b);  // whole buffer
        else
          glBindBufferRange(t.target, static_cast<GLuint>(i), b, align * (i % 2), 64 + 16 * (i % 4));
      }
      next += 3;
    }
    glBindBuffer(GL_TRANSFORM_FEEDBACK_BUFFER, buffers[next]);  // after the indexed binds
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffers[7]);
    glBindBuffer(GL_UNIFORM_BUFFER, buffers[6]);
    glBindBuffer(GL_ATOMIC_COUNTER_BUFFER, buffers[8]);
    // Textures: two per target, alternating over units; samplers: three, alternating.
    std::map<GLenum, std::vector<GLuint>> by_target;
    for (const TextureTarget& t : texture_targets()) {
      if (!has_target(app, t)) continue;
      auto& v = by_target[t.target];
      v.resize(2);
      glGenTextures(2, v.data());
      textures.insert(textures.end(), v.begin(), v.end());
    }
    samplers.resize(3);
    glGenSamplers(3, samplers.data());
    const GLint units = get_int(GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS);
    for (GLint u = 0; u < units; ++u) {
      glActiveTexture(GL_TEXTURE0 + static_cast<GLenum>(u));
      for (const TextureTarget& t : texture_targets())
        if (has_target(app, t)) glBindTexture(t.target, by_target[t.target][static_cast<std::size_t>(u % 2)]);
      glBindSampler(static_cast<GLuint>(u), samplers[static_cast<std::size_t>(u % 3)]);
    }
    glActiveTexture(GL_TEXTURE3);
    // Image units: immutable RGBA8 and R32F textures.
    glGenTextures(2, image_textures);
    const GLenum formats[2] = {GL_RGBA8, GL_R32F};
    for (int i = 0; i < 2; ++i) {
      glBindTexture(GL_TEXTURE_2D, image_textures[i]);
      glTexStorage2D(GL_TEXTURE_2D, 2, formats[i], 8, 8);
    }
    glBindTexture(GL_TEXTURE_2D, by_target[GL_TEXTURE_2D][1]);  // unit 3's binding as before
    const GLint images = get_int(GL_MAX_IMAGE_UNITS);
    for (GLint i = 0; i < images; ++i)
      glBindImageTexture(static_cast<GLuint>(i), image_textures[i % 2], i % 2, GL_FALSE, 0,
                         i % 3 == 0 ? GL_READ_ONLY : GL_READ_WRITE, formats[i % 2]);
    fbos.resize(2);
    glGenFramebuffers(2, fbos.data());
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, fbos[0]);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, fbos[1]);
    glGenRenderbuffers(1, &renderbuffer);
    glBindRenderbuffer(GL_RENDERBUFFER, renderbuffer);
    glGenProgramPipelines(1, &pipeline);
    glBindProgramPipeline(pipeline);
    glUseProgram(program);
    glViewport(3, 5, 70, 90);
    glScissor(1, 2, 30, 40);
    glEnable(GL_SCISSOR_TEST);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 7);
    glPixelStorei(GL_PACK_ALIGNMENT, 2);
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)) << "setting up the application's state";
  }
  ~AppState() {
    glDeleteBuffers(1, &interop_buffer);
    glDeleteTextures(1, &interop_texture);
    glUseProgram(0);
    glDeleteProgram(program);
    glDeleteBuffers(static_cast<GLsizei>(buffers.size()), buffers.data());
    glDeleteTextures(static_cast<GLsizei>(textures.size()), textures.data());
    glDeleteTextures(2, image_textures);
    glDeleteSamplers(static_cast<GLsizei>(samplers.size()), samplers.data());
    glDeleteFramebuffers(static_cast<GLsizei>(fbos.size()), fbos.data());
    glDeleteRenderbuffers(1, &renderbuffer);
    glDeleteProgramPipelines(1, &pipeline);
    glDeleteVertexArrays(1, &vao);
  }
  AppState(const AppState&) = delete;
  AppState& operator=(const AppState&) = delete;
};

}  // namespace glt_app
