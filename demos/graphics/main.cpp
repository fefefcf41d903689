// Graphics demo: a GLFW window whose own OpenGL context renders an animated scene into a texture
// every frame; gltensor, adopted into that context, runs a tensor pipeline on the frame (blur,
// edge detection and a glow, conv2d filters: demos/graphics/filter.hpp) entirely on the GPU
// (from_texture -> conv2d -> conv2d -> elementwise -> to_texture), and the window draws the
// result straight from the texture gltensor wrote, with the frame rate and the pipeline's GPU
// time per frame (a timer query) in an overlay and the title.
//
//   graphics_demo [--api gles|gl] [--size WxH] [--frames N] [--screenshot FILE.png] [--input FILE.png]
//
// --api gles (default): OpenGL ES 3.1+ through EGL; gl: desktop OpenGL 4.3 core through GLX.
// --frames N: stop after N frames (the animation advances 1/60 s per frame, so runs are
// reproducible); --screenshot writes the window's last frame, --input the scene it was computed
// from (both upright PNGs); ctest runs it under Xvfb and compares the two with the CPU reference
// (graphics_demo_check).
#define GLFW_INCLUDE_NONE
#include <GLES3/gl32.h>
#include <GLFW/glfw3.h>
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "filter.hpp"
#include "gltensor/gltensor.hpp"
#include "gltensor/interop.hpp"

using namespace gltensor;

namespace {

struct Args {
  bool desktop = false;
  int width = 640, height = 480, frames = 0;
  std::string screenshot, input;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(s + " needs a value");
      return argv[++i];
    };
    if (s == "--api") {
      const std::string v = value();
      if (v != "gl" && v != "gles") throw std::runtime_error("--api gles|gl");
      a.desktop = v == "gl";
    } else if (s == "--size") {
      if (std::sscanf(value().c_str(), "%dx%d", &a.width, &a.height) != 2 || a.width < 16 || a.height < 16)
        throw std::runtime_error("--size WxH (at least 16x16)");
    } else if (s == "--frames") {
      a.frames = std::atoi(value().c_str());
    } else if (s == "--screenshot") {
      a.screenshot = value();
    } else if (s == "--input") {
      a.input = value();
    } else {
      throw std::runtime_error(
          "usage: graphics_demo [--api gles|gl] [--size WxH] [--frames N] [--screenshot FILE.png] [--input FILE.png]");
    }
  }
  return a;
}

GLuint shader(GLenum type, const std::string& src) {
  GLuint s = glCreateShader(type);
  const char* c = src.c_str();
  glShaderSource(s, 1, &c, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048];
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    throw std::runtime_error(std::string("shader: ") + log);
  }
  return s;
}

GLuint program(const std::string& version, const char* vs, const char* fs) {
  GLuint p = glCreateProgram();
  const std::string head = version + "precision highp float;\nprecision highp int;\n";
  GLuint v = shader(GL_VERTEX_SHADER, head + vs), f = shader(GL_FRAGMENT_SHADER, head + fs);
  glAttachShader(p, v);
  glAttachShader(p, f);
  glLinkProgram(p);
  glDeleteShader(v);
  glDeleteShader(f);
  GLint ok = 0;
  glGetProgramiv(p, GL_LINK_STATUS, &ok);
  if (!ok) throw std::runtime_error("program link failed");
  return p;
}

// A triangle covering the viewport (no vertex buffer).
const char* kFullscreenVs = R"(
void main() {
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
)";

// The animated scene: rotating rings and bars over a gradient (t in seconds).
const char* kSceneFs = R"(
uniform float u_t;
uniform vec2 u_size;
out vec4 o_color;
void main() {
  vec2 uv = (gl_FragCoord.xy - 0.5 * u_size) / u_size.y;
  float a = atan(uv.y, uv.x) + u_t * 0.7, r = length(uv);
  float rings = step(0.5, fract(r * 8.0 - u_t * 0.5));
  float spokes = step(0.5, fract(a * 6.0 / 6.2831853));
  vec2 c = vec2(cos(u_t), sin(u_t * 1.3)) * 0.25;
  float disc = 1.0 - step(0.12, length(uv - c));
  vec3 bg = mix(vec3(0.08, 0.1, 0.25), vec3(0.35, 0.12, 0.3), gl_FragCoord.y / u_size.y);
  vec3 col = mix(bg, vec3(0.95, 0.75, 0.2), rings * spokes * step(r, 0.45));
  col = mix(col, vec3(0.2, 0.85, 0.9), disc);
  o_color = vec4(col, 1.0);
}
)";

// The result texture, texel for pixel.
const char* kBlitFs = R"(
uniform highp sampler2D u_tex;
out vec4 o_color;
void main() { o_color = texelFetch(u_tex, ivec2(gl_FragCoord.xy), 0); }
)";

// Overlay: stb_easy_font's quads in window pixels (y down).
const char* kTextVs = R"(
layout(location = 0) in vec2 a_pos;
uniform vec2 u_size;
void main() { gl_Position = vec4(a_pos.x / u_size.x * 2.0 - 1.0, 1.0 - a_pos.y / u_size.y * 2.0, 0.0, 1.0); }
)";
const char* kTextFs = R"(
uniform vec4 u_color;
out vec4 o_color;
void main() { o_color = u_color; }
)";

class Overlay {
 public:
  explicit Overlay(const std::string& version) {
    prog_ = program(version, kTextVs, kTextFs);
    glGenVertexArrays(1, &vao_);
    glGenBuffers(1, &vbo_);
  }
  ~Overlay() {
    glDeleteProgram(prog_);
    glDeleteVertexArrays(1, &vao_);
    glDeleteBuffers(1, &vbo_);
  }
  // Text at the top left over a dark band of rows [0, kOverlayRows).
  void draw(const std::string& text, int w, int h) {
    std::vector<float> tri;
    const auto quad = [&](float x0, float y0, float x1, float y1) {
      const float q[] = {x0, y0, x1, y0, x1, y1, x0, y0, x1, y1, x0, y1};
      tri.insert(tri.end(), q, q + 12);
    };
    quad(0, 0, static_cast<float>(w), static_cast<float>(graphics_demo::kOverlayRows));
    const std::size_t band = tri.size() / 2;
    static char buf[60000];
    const int quads = stb_easy_font_print(4, 3, const_cast<char*>(text.c_str()), nullptr, buf, sizeof buf);
    const float* v = reinterpret_cast<const float*>(buf);  // 4 vertices of x, y, z, rgba8 per quad
    for (int i = 0; i < quads; ++i, v += 16) quad(v[0], v[1], v[8], v[9]);
    glUseProgram(prog_);
    glUniform2f(glGetUniformLocation(prog_, "u_size"), static_cast<float>(w), static_cast<float>(h));
    glBindVertexArray(vao_);
    glBindBuffer(GL_ARRAY_BUFFER, vbo_);
    glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(tri.size() * 4), tri.data(), GL_STREAM_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
    glUniform4f(glGetUniformLocation(prog_, "u_color"), 0.0f, 0.0f, 0.0f, 0.75f);
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glDrawArrays(GL_TRIANGLES, 0, static_cast<GLsizei>(band));
    glDisable(GL_BLEND);
    glUniform4f(glGetUniformLocation(prog_, "u_color"), 1.0f, 1.0f, 0.6f, 1.0f);
    glDrawArrays(GL_TRIANGLES, static_cast<GLint>(band), static_cast<GLsizei>(tri.size() / 2 - band));
    glBindVertexArray(0);
  }

 private:
  GLuint prog_ = 0, vao_ = 0, vbo_ = 0;
};

// GPU time of the tensor pipeline by timer queries (GL_TIME_ELAPSED), read a few frames later
// so that reading never waits.
class GpuTimer {
 public:
  explicit GpuTimer(bool desktop) {
    const bool ext = desktop || glfwExtensionSupported("GL_EXT_disjoint_timer_query");
    get_ = reinterpret_cast<Get>(glfwGetProcAddress(desktop ? "glGetQueryObjectui64v" : "glGetQueryObjectui64vEXT"));
    ok_ = ext && get_;
    if (ok_) glGenQueries(kRing, q_);
  }
  ~GpuTimer() {
    if (ok_) glDeleteQueries(kRing, q_);
  }
  void begin(long frame) {
    if (ok_) glBeginQuery(kTimeElapsed, q_[frame % kRing]);
  }
  void end() {
    if (ok_) glEndQuery(kTimeElapsed);
  }
  // Milliseconds of frame `frame - kRing + 1` when available, else -1.
  double poll(long frame) {
    if (!ok_ || frame < kRing - 1) return -1;
    const GLuint q = q_[(frame + 1) % kRing];
    GLuint available = 0;
    glGetQueryObjectuiv(q, GL_QUERY_RESULT_AVAILABLE, &available);
    if (!available) return -1;
    std::uint64_t ns = 0;
    get_(q, GL_QUERY_RESULT, &ns);
    return static_cast<double>(ns) * 1e-6;
  }
  bool ok() const { return ok_; }

 private:
  using Get = void (*)(GLuint, GLenum, std::uint64_t*);
  static constexpr GLenum kTimeElapsed = 0x88BF;  // GL_TIME_ELAPSED(_EXT)
  static constexpr int kRing = 4;
  GLuint q_[kRing] = {};
  Get get_ = nullptr;
  bool ok_ = false;
};

// An RGBA8 texture (or the window with tex = 0) as an upright PNG.
void write_png(const std::string& path, GLuint tex, int w, int h) {
  GLuint fbo = 0;
  if (tex) {
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
  } else {
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  }
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 4), up(px.size());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  if (fbo) glDeleteFramebuffers(1, &fbo);
  const std::size_t row = static_cast<std::size_t>(w) * 4;
  for (int y = 0; y < h; ++y) std::memcpy(&up[static_cast<std::size_t>(y) * row], &px[(h - 1 - y) * row], row);
  for (std::size_t i = 3; i < up.size(); i += 4) up[i] = 255;
  if (!stbi_write_png(path.c_str(), w, h, 4, up.data(), static_cast<int>(row)))
    throw std::runtime_error("cannot write " + path);
}

int run(const Args& a) {
  if (!glfwInit()) throw std::runtime_error("glfwInit failed (no display? run under xvfb-run)");
  if (a.desktop) {
    glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_API);
    glfwWindowHint(GLFW_CONTEXT_CREATION_API, GLFW_NATIVE_CONTEXT_API);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  } else {
    glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
    glfwWindowHint(GLFW_CONTEXT_CREATION_API, GLFW_EGL_CONTEXT_API);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 1);
  }
  glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  GLFWwindow* win = glfwCreateWindow(a.width, a.height, "gltensor graphics demo", nullptr, nullptr);
  if (!win) throw std::runtime_error(a.desktop ? "no OpenGL 4.3 core window (GLX)" : "no OpenGL ES 3.1 window (EGL)");
  glfwMakeContextCurrent(win);
  glfwSwapInterval(a.frames > 0 ? 0 : 1);
  int W = 0, H = 0;
  glfwGetFramebufferSize(win, &W, &H);
  const std::string version = a.desktop ? "#version 430 core\n" : "#version 310 es\n";
  {
    // The application's objects: scene and result textures, the scene's framebuffer, programs.
    GLuint tex[2], fbo = 0, vao = 0;
    glGenTextures(2, tex);
    for (GLuint t : tex) {
      glBindTexture(GL_TEXTURE_2D, t);
      glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, W, H);
    }
    glGenFramebuffers(1, &fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex[0], 0);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glGenVertexArrays(1, &vao);
    const GLuint scene = program(version, kFullscreenVs, kSceneFs), blit = program(version, kFullscreenVs, kBlitFs);
    Overlay overlay(version);
    GpuTimer timer(a.desktop);

    // gltensor in the window's context.
    Device dev = Device::adopt_current();
    const auto depthwise = [&](const std::array<float, 9>& k) {
      std::vector<float> v;
      for (int c = 0; c < 3; ++c) v.insert(v.end(), k.begin(), k.end());
      return Tensor::from_host(dev, v, {3, 1, 3, 3});
    };
    const Tensor gauss = depthwise(graphics_demo::kGauss), laplace = depthwise(graphics_demo::kLaplace);
    Conv2dOptions dw = Conv2dOptions::pad(1);
    dw.groups = 3;
    const interop::Texture scene_tex{tex[0], GL_RGBA8, W, H, 0}, result_tex{tex[1], GL_RGBA8, W, H, 0};
    interop::TextureTransfer rgb;
    rgb.channels = 3;
    std::printf("gltensor graphics demo: %dx%d, %s, %s\n", W, H, dev.caps().version.c_str(),
                dev.caps().renderer.c_str());

    auto t_window = std::chrono::steady_clock::now();
    int window_frames = 0;
    double fps = 0, gpu_ms = -1, gpu_sum = 0;
    int gpu_n = 0;
    for (long frame = 0; !glfwWindowShouldClose(win) && (a.frames == 0 || frame < a.frames); ++frame) {
      // 1. The application renders its scene into tex[0].
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glViewport(0, 0, W, H);
      glUseProgram(scene);
      glUniform1f(glGetUniformLocation(scene, "u_t"), static_cast<float>(frame) / 60.0f);
      glUniform2f(glGetUniformLocation(scene, "u_size"), static_cast<float>(W), static_cast<float>(H));
      glBindVertexArray(vao);
      glDrawArrays(GL_TRIANGLES, 0, 3);
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      // 2. gltensor filters it into tex[1] (one state save/restore for the frame's calls).
      timer.begin(frame);
      {
        interop::StateScope scope(dev);
        interop::acquire(dev);  // the draw above wrote tex[0] (no shader stores: cheap)
        Tensor x = interop::from_texture(dev, scene_tex, rgb);
        Tensor b = conv2d(x, gauss, Tensor(), dw);
        Tensor e = conv2d(b, laplace, Tensor(), dw);
        Tensor y = clamp(b * graphics_demo::kBlurWeight + abs(e) * graphics_demo::kEdgeWeight, 0.0, 1.0);
        interop::to_texture(y, result_tex, rgb);
        interop::release(dev, GL_TEXTURE_FETCH_BARRIER_BIT, /*fence=*/false);
      }
      timer.end();
      // 3. The application draws the result texture and the overlay.
      glViewport(0, 0, W, H);
      glUseProgram(blit);
      glActiveTexture(GL_TEXTURE0);
      glBindTexture(GL_TEXTURE_2D, tex[1]);
      glUniform1i(glGetUniformLocation(blit, "u_tex"), 0);
      glBindVertexArray(vao);
      glDrawArrays(GL_TRIANGLES, 0, 3);
      if (const double ms = timer.poll(frame); ms >= 0) {
        gpu_ms = ms;
        gpu_sum += ms;
        ++gpu_n;
      }
      char text[160];
      std::snprintf(text, sizeof text, "%.1f fps   tensor pipeline %s ms GPU   frame %ld", fps,
                    gpu_ms >= 0 ? std::to_string(gpu_ms).substr(0, 5).c_str() : "n/a", frame);
      overlay.draw(text, W, H);
      if (a.frames > 0 && frame == a.frames - 1) {
        if (!a.screenshot.empty()) write_png(a.screenshot, 0, W, H);
        if (!a.input.empty()) write_png(a.input, tex[0], W, H);
      }
      glfwSwapBuffers(win);
      glfwPollEvents();
      ++window_frames;
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_window).count();
      if (dt >= 1.0) {
        fps = window_frames / dt;
        window_frames = 0;
        t_window = std::chrono::steady_clock::now();
        char title[160];
        std::snprintf(title, sizeof title, "gltensor graphics demo: %.1f fps, pipeline %.2f ms GPU", fps, gpu_ms);
        glfwSetWindowTitle(win, title);
        std::printf("%s\n", title + 24);
        std::fflush(stdout);
      }
    }
    if (gpu_n > 0)
      std::printf("mean GPU time of the tensor pipeline: %.3f ms over %d frames\n", gpu_sum / gpu_n, gpu_n);
    if (!timer.ok()) std::printf("no timer queries on this context: GPU time not measured\n");
    dev = Device();
    glDeleteProgram(scene);
    glDeleteProgram(blit);
    glDeleteVertexArrays(1, &vao);
    glDeleteFramebuffers(1, &fbo);
    glDeleteTextures(2, tex);
  }
  glfwDestroyWindow(win);
  glfwTerminate();
  if (!a.screenshot.empty()) std::printf("wrote %s\n", a.screenshot.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
