// Graphics demo: a GLFW window whose own OpenGL context renders an animated scene into a texture
// every frame; gltensor, adopted into that context, runs a tensor pipeline on the frame (blur,
// edge detection and a glow, conv2d filters: demos/graphics/filter.hpp) entirely on the GPU
// (from_texture -> conv2d -> conv2d -> elementwise -> to_texture), and the window draws the
// result straight from the texture gltensor wrote, with the frame rate and the pipeline's GPU
// time per frame (a timer query) in an overlay and the title.
//
// --network det[=MODEL.onnx] also runs a pretrained network on every frame: PaddleOCR's PP-OCRv4
// text detector (DBNet; default: the OCR demo's model under GLTENSOR_MODEL_CACHE) on the scene,
// which then also shows moving text, dark on light. All on the GPU up to the probability map:
// the scene texture -> from_texture with PaddleOCR's NormalizeImage as the per-channel scale and
// bias -> index_select to BGR -> Model::run -> the map [1, 1, H, W] written by to_texture into a
// texture the window samples (a magenta tint); the map is then read back (small) for DB
// post-processing (demos/ocr_det, shared with the OCR demo) and the boxes drawn as outlines. The
// network's GPU time (its own timer query) is shown beside the filter's. Its input is the
// largest region of the scene with sides multiples of 32, at the top left.
//
//   graphics_demo [--api gles|gl] [--size WxH] [--frames N] [--screenshot FILE.png] [--input FILE.png]
//                 [--network det[=MODEL.onnx]] [--prob FILE.npy] [--boxes FILE.txt] [--headless]
//
// --headless (with --frames): no window and no display server; the application's context is an
// EGL context without surface (EGL's device platform, else Mesa's surfaceless one) and its
// "window" a framebuffer of its own: for GPU machines without X.
//
// --api gles (default): OpenGL ES 3.1+ through EGL; gl: desktop OpenGL 4.3 core through GLX.
// --frames N: stop after N frames (the animation advances 1/60 s per frame, so runs are
// reproducible); --screenshot writes the window's last frame, --input the scene it was computed
// from (both upright PNGs); ctest runs it under Xvfb and compares the two with the CPU reference
// (graphics_demo_check). --prob writes the last frame's probability map (.npy, [1, 1, H, W]),
// --boxes its boxes ("boxes N", then one line of 8 corner coordinates per box, image pixels, y
// down); ctest compares them with ONNX Runtime on the scene (graphics_demo_net_check).
#define GLFW_INCLUDE_NONE
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl32.h>
#include <GLFW/glfw3.h>
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "filter.hpp"
#include "gltensor/gltensor.hpp"
#include "gltensor/interop.hpp"
#if GRAPHICS_DEMO_NETWORK
#include "det.hpp"
#include "npy_io.hpp"
#endif

using namespace gltensor;

namespace {

struct Args {
  bool desktop = false;
  int width = 640, height = 480, frames = 0;
  std::string screenshot, input;
  std::string network;      ///< the det model's path; empty: no network
  std::string prob, boxes;  ///< outputs of the last frame's network
  bool headless = false;
};

const char* kUsage =
    "usage: graphics_demo [--api gles|gl] [--size WxH] [--frames N] [--screenshot FILE.png] [--input FILE.png]\n"
    "                     [--network det[=MODEL.onnx]] [--prob FILE.npy] [--boxes FILE.txt] [--headless]";

#if GRAPHICS_DEMO_NETWORK
std::string default_det_model() {
  const std::string dir =
      std::getenv("GLTENSOR_MODEL_CACHE") ? std::getenv("GLTENSOR_MODEL_CACHE") : GRAPHICS_DEMO_MODEL_CACHE;
  return dir + "/models/ocr/ch_PP-OCRv4_det_infer.onnx";
}
#endif

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
    } else if (s == "--network") {
      const std::string v = value();
      if (v != "det" && v.rfind("det=", 0) != 0) throw std::runtime_error("--network det[=MODEL.onnx]");
#if GRAPHICS_DEMO_NETWORK
      a.network = v == "det" ? default_det_model() : v.substr(4);
#else
      throw std::runtime_error("--network: graphics_demo was built without OpenCV, Clipper or xtensor");
#endif
    } else if (s == "--prob") {
      a.prob = value();
    } else if (s == "--boxes") {
      a.boxes = value();
    } else if (s == "--headless") {
      a.headless = true;
    } else {
      throw std::runtime_error(kUsage);
    }
  }
  if ((!a.prob.empty() || !a.boxes.empty()) && a.network.empty())
    throw std::runtime_error("--prob and --boxes need --network det");
  if (a.headless && a.frames <= 0) throw std::runtime_error("--headless needs --frames N");
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

// The result texture, texel for pixel; with the network, its probability map (texture u_prob,
// R channel, covering pixels [u_prob_origin, u_prob_origin + textureSize)) tinted over it.
const char* kBlitFs = R"(
uniform highp sampler2D u_tex;
uniform highp sampler2D u_prob;
uniform int u_net;
uniform ivec2 u_prob_origin;
out vec4 o_color;
void main() {
  o_color = texelFetch(u_tex, ivec2(gl_FragCoord.xy), 0);
  if (u_net != 0) {
    ivec2 p = ivec2(gl_FragCoord.xy) - u_prob_origin;
    if (all(greaterThanEqual(p, ivec2(0))) && all(lessThan(p, textureSize(u_prob, 0)))) {
      float prob = texelFetch(u_prob, p, 0).r;
      o_color.rgb = mix(o_color.rgb, vec3(1.0, 0.1, 0.75), 0.6 * prob);
    }
  }
}
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

// Flat-coloured triangles in window pixels (x right, y down), built by the helpers below.
using Triangles = std::vector<float>;

void add_quad(Triangles& tri, float x0, float y0, float x1, float y1) {
  const float q[] = {x0, y0, x1, y0, x1, y1, x0, y0, x1, y1, x0, y1};
  tri.insert(tri.end(), q, q + 12);
}

// A segment from a to b, `width` pixels wide.
void add_line(Triangles& tri, float ax, float ay, float bx, float by, float width) {
  const float len = std::hypot(bx - ax, by - ay);
  if (len <= 0) return;
  const float nx = -(by - ay) / len * width / 2, ny = (bx - ax) / len * width / 2;
  const float q[] = {ax + nx, ay + ny, bx + nx, by + ny, bx - nx, by - ny,
                     ax + nx, ay + ny, bx - nx, by - ny, ax - nx, ay - ny};
  tri.insert(tri.end(), q, q + 12);
}

// stb_easy_font's text with its top left at (x, y), `scale` pixels per font unit.
void add_text(Triangles& tri, const std::string& text, float x, float y, float scale) {
  static char buf[60000];
  const int quads = stb_easy_font_print(0, 0, const_cast<char*>(text.c_str()), nullptr, buf, sizeof buf);
  const float* v = reinterpret_cast<const float*>(buf);  // 4 vertices of x, y, z, rgba8 per quad
  for (int i = 0; i < quads; ++i, v += 16)
    add_quad(tri, x + v[0] * scale, y + v[1] * scale, x + v[8] * scale, y + v[9] * scale);
}

class Painter {
 public:
  explicit Painter(const std::string& version) {
    prog_ = program(version, kTextVs, kTextFs);
    glGenVertexArrays(1, &vao_);
    glGenBuffers(1, &vbo_);
  }
  ~Painter() {
    glDeleteProgram(prog_);
    glDeleteVertexArrays(1, &vao_);
    glDeleteBuffers(1, &vbo_);
  }
  // Into the bound framebuffer, whose viewport is w x h.
  void draw(const Triangles& tri, const std::array<float, 4>& color, int w, int h) {
    if (tri.empty()) return;
    glUseProgram(prog_);
    glUniform2f(glGetUniformLocation(prog_, "u_size"), static_cast<float>(w), static_cast<float>(h));
    glBindVertexArray(vao_);
    glBindBuffer(GL_ARRAY_BUFFER, vbo_);
    glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(tri.size() * 4), tri.data(), GL_STREAM_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
    glUniform4f(glGetUniformLocation(prog_, "u_color"), color[0], color[1], color[2], color[3]);
    if (color[3] < 1) {
      glEnable(GL_BLEND);
      glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    }
    glDrawArrays(GL_TRIANGLES, 0, static_cast<GLsizei>(tri.size() / 2));
    glDisable(GL_BLEND);
    glBindVertexArray(0);
  }
  // The overlay: text at the top left over a dark band of rows [0, kOverlayRows).
  void overlay(const std::string& text, int w, int h) {
    Triangles band, glyphs;
    add_quad(band, 0, 0, static_cast<float>(w), static_cast<float>(graphics_demo::kOverlayRows));
    add_text(glyphs, text, 4, 3, 1);
    draw(band, {0.0f, 0.0f, 0.0f, 0.75f}, w, h);
    draw(glyphs, {1.0f, 1.0f, 0.6f, 1.0f}, w, h);
  }

 private:
  GLuint prog_ = 0, vao_ = 0, vbo_ = 0;
};

// The moving text drawn into the scene with --network: lines dark on light panels, swaying
// sideways and bobbing, sized for the detector (a glyph about H / 10 pixels tall).
void draw_scene_text(Painter& painter, float t, int w, int h) {
  const float scale = std::max(2.0f, std::round(static_cast<float>(h) / 75.0f));
  const char* lines[] = {"gltensor", "GLSL 2026"};
  Triangles panels, glyphs;
  for (int i = 0; i < 2; ++i) {
    const std::string text = lines[i];
    const float tw = static_cast<float>(stb_easy_font_width(const_cast<char*>(text.c_str()))) * scale;
    const float th = 7 * scale;  // capitals and digits are 7 units tall
    const float cx = 0.5f * static_cast<float>(w) + 0.22f * static_cast<float>(w) * std::sin(0.9f * t + 2.0f * i);
    const float cy =
        static_cast<float>(h) * (0.32f + 0.36f * i) + 0.05f * static_cast<float>(h) * std::sin(1.7f * t + i);
    const float x = cx - tw / 2, y = cy - th / 2, m = 2 * scale;
    add_quad(panels, x - m, y - m, x + tw + m, y + th + 1.5f * m);
    add_text(glyphs, text, x, y, scale);
  }
  painter.draw(panels, {0.93f, 0.91f, 0.84f, 1.0f}, w, h);
  painter.draw(glyphs, {0.08f, 0.08f, 0.12f, 1.0f}, w, h);
}

// GPU time of the tensor pipeline by timer queries (GL_TIME_ELAPSED), read a few frames later
// so that reading never waits.
class GpuTimer {
 public:
  template <class Host>
  GpuTimer(bool desktop, const Host& host) {
    const bool ext = desktop || host.extension("GL_EXT_disjoint_timer_query");
    get_ = reinterpret_cast<Get>(host.proc(desktop ? "glGetQueryObjectui64v" : "glGetQueryObjectui64vEXT"));
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
  // Milliseconds of the last frames that poll() has not read (frames - kRing + 1 .. frames - 1),
  // waiting for them: for the summary of short runs.
  std::vector<double> drain(long frames) {
    std::vector<double> r;
    if (!ok_) return r;
    for (long f = std::max(0L, frames - kRing + 1); f < frames; ++f) {
      std::uint64_t ns = 0;
      get_(q_[f % kRing], GL_QUERY_RESULT, &ns);
      r.push_back(static_cast<double>(ns) * 1e-6);
    }
    return r;
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

#if GRAPHICS_DEMO_NETWORK
// PP-OCRv4 text detection on the scene texture, every frame: GPU work up to the probability map
// (drawn from the texture it is written to), then the map read back for DB post-processing.
class DetNetwork {
 public:
  DetNetwork(const Device& dev, const std::string& path, GLuint scene, int w, int h)
      : dev_(dev), scene_{scene, GL_RGBA8, w, h, 0}, h_(h / 32 * 32), w_(w / 32 * 32), height_(h) {
    if (h_ < 32 || w_ < 32) throw std::runtime_error("--network det needs a scene of at least 32x32");
    if (!std::ifstream(path)) throw std::runtime_error(path + " not found: run scripts/fetch-models.sh ocr");
    const auto t0 = std::chrono::steady_clock::now();
    model_.emplace(Model::load(dev, path));
    if (model_->inputs().size() != 1 || model_->outputs().size() != 1)
      throw std::runtime_error(path + ": a text detector has one input and one output");
    input_ = model_->inputs()[0].name;
    // PaddleOCR's NormalizeImage, (v / 255 - mean) / std with the statistics of the BGR image:
    // texel channel c (R, G, B) is the model's channel 2 - c. Texels read as v / 255.
    norm_.channels = 3;
    for (int c = 0; c < 3; ++c) {
      norm_.scale[c] = 1.0f / ocr::kDetStd[2 - c];
      norm_.bias[c] = -ocr::kDetMean[2 - c] / ocr::kDetStd[2 - c];
    }
    const std::vector<std::int32_t> bgr = {2, 1, 0};
    bgr_ = Tensor::from_host(dev, std::span<const std::int32_t>(bgr), {3});
    glGenTextures(1, &prob_tex_);
    glBindTexture(GL_TEXTURE_2D, prob_tex_);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w_, h_);
    glBindTexture(GL_TEXTURE_2D, 0);
    // A first run on zeros plans the graph for this size and compiles its kernels.
    model_->run({{input_, zeros(dev, {1, 3, h_, w_})}}).begin()->second.to_vector();
    std::printf("network: PP-OCRv4 det %s, input %dx%d (loaded and planned in %.0f ms)\n", path.c_str(), w_, h_,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  ~DetNetwork() { glDeleteTextures(1, &prob_tex_); }
  DetNetwork(const DetNetwork&) = delete;
  DetNetwork& operator=(const DetNetwork&) = delete;

  // The GPU part: scene texture -> normalized BGR [1, 3, h, w] -> the model -> the map into the
  // probability texture. The scene must have been acquired (its draw is ordered before).
  void run() {
    interop::StateScope scope(dev_);
    Tensor x = interop::from_texture(dev_, scene_, norm_);  // [1, 3, H, W], rows top first
    if (h_ != scene_.height || w_ != scene_.width) x = x.narrow(2, 0, h_).narrow(3, 0, w_);
    Tensor bgr = index_select(x, 1, bgr_);
    prob_ = model_->run({{input_, bgr}}).begin()->second;  // [1, 1, h, w]
    interop::to_texture(prob_, {prob_tex_, GL_RGBA8, w_, h_, 0});
    interop::release(dev_, GL_TEXTURE_FETCH_BARRIER_BIT, /*fence=*/false);
  }
  // The host part: the map read back (waits for the GPU), DB post-processing.
  void boxes_from_map() {
    prob_host_ = prob_.to_vector();
    boxes_ = ocr::db_boxes(prob_host_, h_, w_, h_, w_);
  }
  void write(const std::string& prob_path, const std::string& boxes_path) const {
    if (!prob_path.empty()) npy::write(prob_path, prob_);
    if (!boxes_path.empty()) {
      std::ofstream f(boxes_path);
      f << "boxes " << boxes_.size() << "\n";
      for (const auto& b : boxes_) {
        for (const auto& p : b.box) f << p.x << " " << p.y << " ";
        f << b.score << "\n";
      }
      if (!f) throw std::runtime_error("cannot write " + boxes_path);
    }
  }
  const std::vector<ocr::DetBox>& boxes() const { return boxes_; }
  GLuint prob_texture() const { return prob_tex_; }
  /// The map's texel (0, 0) is the window's pixel (0, origin_y()) (bottom-left origin).
  int origin_y() const { return height_ - h_; }
  int width() const { return w_; }
  int height() const { return h_; }

 private:
  Device dev_;
  interop::Texture scene_;
  int h_, w_, height_;
  std::optional<Model> model_;
  std::string input_;
  interop::TextureTransfer norm_;
  Tensor bgr_, prob_;
  GLuint prob_tex_ = 0;
  std::vector<float> prob_host_;
  std::vector<ocr::DetBox> boxes_;
};
#endif

// The application's window and context: a GLFW window, or with --headless an EGL context without
// surface that draws its "window" into a framebuffer of its own.
class Host {
 public:
  explicit Host(const Args& a) {
    if (a.headless) {
      open_headless(a);
      return;
    }
    if (!glfwInit()) throw std::runtime_error("glfwInit failed (no display? run under xvfb-run, or --headless)");
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
    win_ = glfwCreateWindow(a.width, a.height, "gltensor graphics demo", nullptr, nullptr);
    if (!win_) {
      glfwTerminate();
      throw std::runtime_error(a.desktop ? "no OpenGL 4.3 core window (GLX)" : "no OpenGL ES 3.1 window (EGL)");
    }
    glfwMakeContextCurrent(win_);
    glfwSwapInterval(a.frames > 0 ? 0 : 1);
    glfwGetFramebufferSize(win_, &width, &height);
  }
  ~Host() {
    if (win_) {
      glfwDestroyWindow(win_);
      glfwTerminate();
    } else if (display_ != EGL_NO_DISPLAY) {
      glDeleteFramebuffers(1, &fbo_);
      glDeleteTextures(1, &color_);
      eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
      eglDestroyContext(display_, context_);
      eglTerminate(display_);
    }
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  /// The window's framebuffer (0 for a window) and, headless, its colour texture (else 0).
  GLuint framebuffer() const { return fbo_; }
  GLuint color_texture() const { return color_; }
  bool should_close() const { return win_ && glfwWindowShouldClose(win_); }
  void present() {
    if (win_) {
      glfwSwapBuffers(win_);
      glfwPollEvents();
    } else {
      glFlush();
    }
  }
  void set_title(const char* title) {
    if (win_) glfwSetWindowTitle(win_, title);
  }
  void (*proc(const char* name) const)() {
    return win_ ? glfwGetProcAddress(name) : reinterpret_cast<void (*)()>(eglGetProcAddress(name));
  }
  bool extension(const char* name) const {
    if (win_) return glfwExtensionSupported(name);
    GLint n = 0;
    glGetIntegerv(GL_NUM_EXTENSIONS, &n);
    for (GLint i = 0; i < n; ++i)
      if (std::strcmp(reinterpret_cast<const char*>(glGetStringi(GL_EXTENSIONS, static_cast<GLuint>(i))), name) == 0)
        return true;
    return false;
  }
  int width = 0, height = 0;

 private:
  void open_headless(const Args& a) {
    const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    const auto has = [&](const char* ext) { return client && std::strstr(client, ext) != nullptr; };
    const auto get_display =
        reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
    if (!get_display) throw std::runtime_error("--headless: eglGetPlatformDisplayEXT is missing");
    // The first EGL device (a GPU where there is one), else Mesa's surfaceless platform.
    if (has("EGL_EXT_device_enumeration") && has("EGL_EXT_platform_device")) {
      const auto query = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
      EGLDeviceEXT devices[16];
      EGLint n = 0;
      if (query && query(16, devices, &n) && n > 0)
        display_ = get_display(EGL_PLATFORM_DEVICE_EXT, devices[0], nullptr);
    }
    if (display_ == EGL_NO_DISPLAY && has("EGL_MESA_platform_surfaceless"))
      display_ = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (display_ == EGL_NO_DISPLAY || !eglInitialize(display_, nullptr, nullptr))
      throw std::runtime_error("--headless: no EGL device or surfaceless display");
    eglBindAPI(a.desktop ? EGL_OPENGL_API : EGL_OPENGL_ES_API);
    const EGLint gl[] = {
        EGL_CONTEXT_MAJOR_VERSION,           4,       EGL_CONTEXT_MINOR_VERSION, 3, EGL_CONTEXT_OPENGL_PROFILE_MASK,
        EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    const EGLint gles[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 1, EGL_NONE};
    context_ = eglCreateContext(display_, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, a.desktop ? gl : gles);
    if (context_ == EGL_NO_CONTEXT || !eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_)) {
      eglTerminate(display_);
      throw std::runtime_error(a.desktop ? "--headless: no OpenGL 4.3 core context without surface"
                                         : "--headless: no OpenGL ES 3.1 context without surface");
    }
    width = a.width;
    height = a.height;
    glGenTextures(1, &color_);
    glBindTexture(GL_TEXTURE_2D, color_);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, width, height);
    glBindTexture(GL_TEXTURE_2D, 0);
    glGenFramebuffers(1, &fbo_);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color_, 0);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
  }

  GLFWwindow* win_ = nullptr;
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  GLuint fbo_ = 0, color_ = 0;
};

int run(const Args& a) {
  Host host(a);
  const int W = host.width, H = host.height;
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
    Painter painter(version);
    GpuTimer timer(a.desktop, host), net_timer(a.desktop, host);

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
#if GRAPHICS_DEMO_NETWORK
    std::unique_ptr<DetNetwork> net;
    if (!a.network.empty()) net = std::make_unique<DetNetwork>(dev, a.network, tex[0], W, H);
#else
    const std::unique_ptr<int> net;
#endif
    double net_ms = -1, net_sum = 0, host_sum = 0;
    int net_n = 0;

    auto t_window = std::chrono::steady_clock::now();
    int window_frames = 0;
    double fps = 0, gpu_ms = -1, gpu_sum = 0;
    int gpu_n = 0;
    long frames = 0;
    const auto t_loop = std::chrono::steady_clock::now();
    for (long frame = 0; !host.should_close() && (a.frames == 0 || frame < a.frames); ++frame, ++frames) {
      // 1. The application renders its scene into tex[0].
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glViewport(0, 0, W, H);
      glUseProgram(scene);
      glUniform1f(glGetUniformLocation(scene, "u_t"), static_cast<float>(frame) / 60.0f);
      glUniform2f(glGetUniformLocation(scene, "u_size"), static_cast<float>(W), static_cast<float>(H));
      glBindVertexArray(vao);
      glDrawArrays(GL_TRIANGLES, 0, 3);
      if (net) draw_scene_text(painter, static_cast<float>(frame) / 60.0f, W, H);
      glBindFramebuffer(GL_FRAMEBUFFER, host.framebuffer());
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
      // 2b. The network on the same scene texture (already acquired above), then its boxes.
#if GRAPHICS_DEMO_NETWORK
      if (net) {
        net_timer.begin(frame);
        net->run();
        net_timer.end();
        const auto t_host = std::chrono::steady_clock::now();
        net->boxes_from_map();
        host_sum += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_host).count();
      }
#endif
      // 3. The application draws the result texture (with the network's map) and the overlay.
      glViewport(0, 0, W, H);
      glUseProgram(blit);
      glActiveTexture(GL_TEXTURE0);
      glBindTexture(GL_TEXTURE_2D, tex[1]);
      glUniform1i(glGetUniformLocation(blit, "u_tex"), 0);
      glUniform1i(glGetUniformLocation(blit, "u_net"), net ? 1 : 0);
#if GRAPHICS_DEMO_NETWORK
      if (net) {
        glActiveTexture(GL_TEXTURE1);
        glBindTexture(GL_TEXTURE_2D, net->prob_texture());
        glActiveTexture(GL_TEXTURE0);
        glUniform1i(glGetUniformLocation(blit, "u_prob"), 1);
        glUniform2i(glGetUniformLocation(blit, "u_prob_origin"), 0, net->origin_y());
      }
#endif
      glBindVertexArray(vao);
      glDrawArrays(GL_TRIANGLES, 0, 3);
      if (net) {  // gltensor writes the map's texture again next frame: leave it unbound
        glActiveTexture(GL_TEXTURE1);
        glBindTexture(GL_TEXTURE_2D, 0);
        glActiveTexture(GL_TEXTURE0);
      }
      if (const double ms = timer.poll(frame); ms >= 0) {
        gpu_ms = ms;
        gpu_sum += ms;
        ++gpu_n;
      }
      const auto ms_text = [](double ms) {
        if (ms < 0) return std::string("n/a");
        char b[32];
        std::snprintf(b, sizeof b, "%.*f", ms < 10 ? 3 : ms < 100 ? 2 : ms < 1000 ? 1 : 0, ms);
        return std::string(b);
      };
      char text[200];
      std::snprintf(text, sizeof text, "%.1f fps   tensor pipeline %s ms GPU   frame %ld", fps, ms_text(gpu_ms).c_str(),
                    frame);
#if GRAPHICS_DEMO_NETWORK
      if (net) {
        if (const double ms = net_timer.poll(frame); ms >= 0) {
          net_ms = ms;
          net_sum += ms;
          ++net_n;
        }
        // The boxes' outlines (image pixels, y down: the window's overlay coordinates).
        Triangles outlines;
        for (const auto& b : net->boxes())
          for (int k = 0; k < 4; ++k)
            add_line(outlines, b.box[k].x, b.box[k].y, b.box[(k + 1) % 4].x, b.box[(k + 1) % 4].y, 2);
        painter.draw(outlines, {0.1f, 1.0f, 0.3f, 1.0f}, W, H);
        std::snprintf(text, sizeof text, "%.1f fps  filter %s ms  det %s ms GPU  %zu boxes", fps,
                      ms_text(gpu_ms).c_str(), ms_text(net_ms).c_str(), net->boxes().size());
      }
#endif
      painter.overlay(text, W, H);
      if (a.frames > 0 && frame == a.frames - 1) {
        if (!a.screenshot.empty()) write_png(a.screenshot, host.color_texture(), W, H);
        if (!a.input.empty()) write_png(a.input, tex[0], W, H);
#if GRAPHICS_DEMO_NETWORK
        if (net) {
          net->write(a.prob, a.boxes);
          std::printf("network: %zu boxes in the last frame\n", net->boxes().size());
        }
#endif
      }
      host.present();
      ++window_frames;
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_window).count();
      if (dt >= 1.0) {
        fps = window_frames / dt;
        window_frames = 0;
        t_window = std::chrono::steady_clock::now();
        char title[160];
        if (net)
          std::snprintf(title, sizeof title, "gltensor graphics demo: %.1f fps, pipeline %.2f ms, det %.2f ms GPU", fps,
                        gpu_ms, net_ms);
        else
          std::snprintf(title, sizeof title, "gltensor graphics demo: %.1f fps, pipeline %.2f ms GPU", fps, gpu_ms);
        host.set_title(title);
        std::printf("%s\n", title + 24);
        std::fflush(stdout);
      }
    }
    const double loop_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_loop).count();
    for (double ms : timer.drain(frames)) gpu_sum += ms, ++gpu_n;
    if (gpu_n > 0)
      std::printf("mean GPU time of the tensor pipeline: %.3f ms over %d frames\n", gpu_sum / gpu_n, gpu_n);
    if (net) {
      for (double ms : net_timer.drain(frames)) net_sum += ms, ++net_n;
      if (net_n > 0)
        std::printf("mean GPU time of the network (PP-OCRv4 det): %.3f ms over %d frames\n", net_sum / net_n, net_n);
      if (frames > 0)
        std::printf("mean host time of the map's readback and DB post-processing: %.3f ms; whole frame: %.1f ms\n",
                    host_sum / frames, loop_ms / frames);
    }
    if (!timer.ok()) std::printf("no timer queries on this context: GPU time not measured\n");
#if GRAPHICS_DEMO_NETWORK
    net.reset();
#endif
    dev = Device();
    glDeleteProgram(scene);
    glDeleteProgram(blit);
    glDeleteVertexArrays(1, &vao);
    glDeleteFramebuffers(1, &fbo);
    glDeleteTextures(2, tex);
  }
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
