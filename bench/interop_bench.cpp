// Graphics-app costs (bench/RESULTS.md), in one run on one device:
//  1. per-call cost of a small op (add of 256 floats, recorded without waiting) on a
//     Device::open device and on an adopted application context: restoring at each call, inside
//     an interop::StateScope, with AdoptOptions::restore_state = false; and a Device::open device
//     used while the application's context is current (a context switch per call). Run it with
//     and without NVIDIA's threaded optimisations (__GL_THREADED_OPTIMIZATIONS=0/1 in the
//     environment: the driver reads it when the process starts).
//  2. a frame (also fused: interop::conv2d_texture and interop::FrameFilter, one dispatch; their f16
//     forms against the raw shader's mediump form; a two-conv FrameFilter chain): a W x H RGBA8 texture -> tensor
//     (from_texture, 3 channels) -> conv2d 3x3 (3 -> 3 channels, padding 1) -> RGBA8 texture (to_texture), against one
//     raw GL compute shader doing the same arithmetic (texelFetch of the 3 x 3 neighbourhood, imageStore) in the same
//     run; both outputs are compared (at most 1/255 apart) so that the same work is timed.
// Times are host wall-clock per call / per frame over many calls or frames with one wait at the
// end (throughput). Usage:
//   gltensor_interop_bench [--api gles|gl] [--calls N] [--frames N] [--rounds N] [--size WxH]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "gltensor/interop.hpp"
#include "runtime/egl_platform.hpp"
#include "runtime/gl.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  bool desktop = false;
  int calls = 0, frames = 0, w = 1920, h = 1080, rounds = 2;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// An application's context (surfaceless EGL), current on this thread.
struct AppContext {
  detail::EglContext egl;
  explicit AppContext(bool desktop) {
    auto cands = detail::enumerate_egl_candidates();
    std::string why;
    if (cands.empty() ||
        !detail::create_egl_context(cands[0], false, desktop ? EGL_OPENGL_API : EGL_OPENGL_ES_API, egl, why)) {
      std::fprintf(stderr, "no application context: %s\n", why.c_str());
      std::exit(1);
    }
  }
  ~AppContext() { detail::destroy_egl_context(egl); }
  void make_current() const { detail::make_current(egl); }
};

// Microseconds per call of `op` (n calls, then one wait).
double per_call_us(Device& dev, int n, const std::function<void()>& op) {
  for (int i = 0; i < 50; ++i) op();
  dev.synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) op();
  dev.synchronize();
  return seconds_since(t0) * 1e6 / n;
}

void bench_calls(const Args& a) {
  // Every mode's device exists at once; rounds measure the modes in turn and each mode's median
  // is reported (drift and other load hit all modes alike).
  const int n = a.calls, rounds = 7;
  OpenOptions oo;
  oo.api = a.desktop ? GlApi::gl : GlApi::gles;
  struct Mode {
    std::string name;
    Device dev;
    bool app_current, scope;
    Tensor x, y, z;
    std::vector<double> us;
  };
  std::vector<Mode> modes;
  modes.push_back({"Device::open", Device::open(oo), false, false, {}, {}, {}, {}});
  AppContext app(a.desktop);
  app.make_current();
  AdoptOptions no_restore;
  no_restore.restore_state = false;
  modes.push_back({"adopted, restored at each call", Device::adopt_current(), true, false, {}, {}, {}, {}});
  modes.push_back({"adopted, one StateScope", Device::adopt_current(), true, true, {}, {}, {}, {}});
  modes.push_back({"adopted, restore_state = false", Device::adopt_current(no_restore), true, false, {}, {}, {}, {}});
  modes.push_back({"Device::open beside a current app context", Device::open(oo), true, false, {}, {}, {}, {}});
  for (Mode& m : modes) {
    m.x = ones(m.dev, {256});
    m.y = ones(m.dev, {256});
  }
  for (int r = 0; r < rounds; ++r)
    for (Mode& m : modes) {
      if (m.app_current)
        app.make_current();
      else
        eglMakeCurrent(app.egl.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
      std::unique_ptr<interop::StateScope> scope;
      if (m.scope) scope = std::make_unique<interop::StateScope>(m.dev);
      m.us.push_back(per_call_us(m.dev, n, [&] { m.z = m.x + m.y; }));
    }
  app.make_current();
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = median(modes[0].us);
  std::printf("\nPer-call cost: add of 256 floats, %d calls then one wait, median of %d interleaved rounds\n\n", n,
              rounds);
  std::printf("| mode | us per call | ratio to Device::open |\n|---|---|---|\n");
  for (const Mode& m : modes) {
    const double us = median(m.us);
    std::printf("| %s | %.2f | %.2f |\n", m.name.c_str(), us, us / base);
  }
  for (Mode& m : modes) m = Mode{};
}

GLuint compile(bool desktop, const std::string& body) {
  const std::string src = std::string(desktop ? "#version 430 core\n" : "#version 310 es\n") + body;
  GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
  const char* s = src.c_str();
  glShaderSource(sh, 1, &s, nullptr);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048];
    glGetShaderInfoLog(sh, sizeof log, nullptr, log);
    std::fprintf(stderr, "raw shader: %s\n", log);
    std::exit(1);
  }
  GLuint p = glCreateProgram();
  glAttachShader(p, sh);
  glLinkProgram(p);
  glDeleteShader(sh);
  return p;
}

// The raw filter: out(x, picture row y) = b + sum w[o][c][ky][kx] * in(x + kx - 1, y + ky - 1),
// with picture row y at texel row H - 1 - y (as from_texture's default origin), zero outside.
const char* kRawFilter = R"(
precision highp float;
layout(local_size_x = 16, local_size_y = 16) in;
layout(binding = 0) uniform highp sampler2D u_in;
layout(binding = 0, rgba8) writeonly uniform highp image2D u_out;
uniform float u_w[81];
uniform float u_b[3];
uniform ivec2 u_size;
void main() {
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  if (p.x >= u_size.x || p.y >= u_size.y) return;
  vec3 acc = vec3(u_b[0], u_b[1], u_b[2]);
  for (int ky = 0; ky < 3; ++ky)
    for (int kx = 0; kx < 3; ++kx) {
      ivec2 q = ivec2(p.x + kx - 1, p.y - (ky - 1));  // picture row + (ky - 1) is texel row - (ky - 1)
      if (q.x < 0 || q.y < 0 || q.x >= u_size.x || q.y >= u_size.y) continue;
      vec3 t = texelFetch(u_in, q, 0).rgb;
      for (int o = 0; o < 3; ++o)
        acc[o] += u_w[(o * 3 + 0) * 9 + ky * 3 + kx] * t.r + u_w[(o * 3 + 1) * 9 + ky * 3 + kx] * t.g +
                  u_w[(o * 3 + 2) * 9 + ky * 3 + kx] * t.b;
    }
  imageStore(u_out, p, vec4(acc, 1.0));
}
)";

// The same filter as an application writes its f16 form: mediump (16-bit where the GPU has it;
// NVIDIA's drivers compute mediump in 32 bits), weights rounded to f16 by the application.
std::string raw_filter_f16() {
  std::string s = kRawFilter;
  s.replace(s.find("precision highp float;"), 22, "precision mediump float;");
  return s;
}

std::vector<std::uint8_t> read_texture(GLuint tex, int w, int h) {
  GLuint fbo = 0;
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
  glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 4);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &fbo);
  return px;
}

void bench_frame(const Args& a) {
  const int W = a.w, H = a.h;
  AppContext app(a.desktop);
  app.make_current();
  GLuint tex[3];
  glGenTextures(3, tex);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(W) * H * 4);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      std::uint8_t* p = &px[(static_cast<std::size_t>(y) * W + x) * 4];
      p[0] = static_cast<std::uint8_t>((x * 7 + y * 3) & 255);
      p[1] = static_cast<std::uint8_t>(((x / 16 + y / 16) & 1) * 200);
      p[2] = static_cast<std::uint8_t>((x * y) >> 6 & 255);
      p[3] = 255;
    }
  for (int i = 0; i < 3; ++i) {
    glBindTexture(GL_TEXTURE_2D, tex[i]);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, W, H);
  }
  glBindTexture(GL_TEXTURE_2D, tex[0]);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  glBindTexture(GL_TEXTURE_2D, 0);
  // A 3 x 3 filter: a blur mixed with an edge detector, per channel and across channels.
  std::vector<float> wv(81), bv = {0.05f, 0.0f, -0.05f};
  for (int o = 0; o < 3; ++o)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 9; ++k)
        wv[static_cast<std::size_t>((o * 3 + c) * 9 + k)] =
            (o == c ? (k == 4 ? 1.5f : -0.0625f) : 0.02f * static_cast<float>(k % 3 - 1));

  // raw: one compute shader
  GLuint prog = compile(a.desktop, kRawFilter);
  glUseProgram(prog);
  glUniform1fv(glGetUniformLocation(prog, "u_w"), 81, wv.data());
  glUniform1fv(glGetUniformLocation(prog, "u_b"), 3, bv.data());
  glUniform2i(glGetUniformLocation(prog, "u_size"), W, H);
  GLuint sampler = 0;
  glGenSamplers(1, &sampler);
  glSamplerParameteri(sampler, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glSamplerParameteri(sampler, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  GLuint prog16 = compile(a.desktop, raw_filter_f16());
  const auto raw_dispatch = [&](GLuint p) {
    glUseProgram(p);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, tex[0]);
    glBindSampler(0, sampler);
    glBindImageTexture(0, tex[1], 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA8);
    glDispatchCompute(static_cast<GLuint>((W + 15) / 16), static_cast<GLuint>((H + 15) / 16), 1);
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
  };
  const auto raw_frame = [&] { raw_dispatch(prog); };
  const auto raw_frame16 = [&] { raw_dispatch(prog16); };

  // gltensor: adopted context, one StateScope per frame
  Device dev = Device::adopt_current();
  Tensor w = Tensor::from_host(dev, wv, {3, 3, 3, 3}), b = Tensor::from_host(dev, bv, {3});
  const interop::Texture in{tex[0], GL_RGBA8, W, H, 0}, out{tex[2], GL_RGBA8, W, H, 0};
  interop::TextureTransfer rgb;
  rgb.channels = 3;
  const auto gltensor_frame = [&] {
    interop::StateScope scope(dev);
    Tensor x = interop::from_texture(dev, in, rgb);
    interop::to_texture(conv2d(x, w, b, Conv2dOptions::pad(1)), out);
    interop::release(dev, interop::kTextureReadBarrierBits, false);
  };
  interop::TextureTransfer rgb16 = rgb;
  rgb16.dtype = DType::f16;
  Tensor w16 = w.to(DType::f16), b16 = b.to(DType::f16);
  {  // the raw f16 form's weights: rounded to f16 as gltensor's f16 forms read them
    const std::vector<float> w16v = w16.to(DType::f32).to_vector(), b16v = b16.to(DType::f32).to_vector();
    glUseProgram(prog16);
    glUniform1fv(glGetUniformLocation(prog16, "u_w"), 81, w16v.data());
    glUniform1fv(glGetUniformLocation(prog16, "u_b"), 3, b16v.data());
    glUniform2i(glGetUniformLocation(prog16, "u_size"), W, H);
  }
  const auto gltensor_frame16 = [&] {  // f16 tensors: half the bytes between the passes
    interop::StateScope scope(dev);
    Tensor x = interop::from_texture(dev, in, rgb16);
    interop::to_texture(conv2d(x, w16, b16, Conv2dOptions::pad(1)), out);
    interop::release(dev, interop::kTextureReadBarrierBits, false);
  };
  const auto gltensor_fused = [&] {  // interop::conv2d_texture: texture -> texture in one dispatch
    interop::StateScope scope(dev);
    interop::conv2d_texture(in, out, w, b, Conv2dOptions::pad(1), {}, rgb);
    interop::release(dev, interop::kTextureReadBarrierBits, false);
  };
  const auto gltensor_fused16 = [&] {  // f16 weights and bias (read as f16 from uniform blocks)
    interop::StateScope scope(dev);
    interop::conv2d_texture(in, out, w16, b16, Conv2dOptions::pad(1), {}, rgb);
    interop::release(dev, interop::kTextureReadBarrierBits, false);
  };
  // FrameFilter chains: the same filter, then conv 3 -> 8, relu, conv 8 -> 3, clamp (two dispatches)
  // with f32 and f16 intermediates.
  interop::FrameFilter filter(dev), filter16(dev);
  filter.conv2d(w, b, Conv2dOptions::pad(1));
  filter16.conv2d(w16, b16, Conv2dOptions::pad(1));
  std::vector<float> w1(8 * 3 * 9), w2(3 * 8 * 9);
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = 0.05f * static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
  for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = 0.03f * static_cast<float>(static_cast<int>(i * 5 % 13) - 6);
  Tensor tw1 = Tensor::from_host(dev, w1, {8, 3, 3, 3}), tw2 = Tensor::from_host(dev, w2, {3, 8, 3, 3});
  interop::FrameFilter chain(dev, interop::FrameFilter::Intermediates::f32),
      chain16(dev, interop::FrameFilter::Intermediates::f16);
  for (interop::FrameFilter* f : {&chain, &chain16})
    f->conv2d(tw1, Tensor(), Conv2dOptions::pad(1)).relu().conv2d(tw2, b, Conv2dOptions::pad(1)).clamp(0, 1);
  const auto filter_frame = [&](interop::FrameFilter& f) {
    interop::StateScope scope(dev);
    f.run(in, out, rgb);
    interop::release(dev, interop::kTextureReadBarrierBits, false);
  };
  const auto time_frames = [&](const std::function<void()>& frame) {
    for (int i = 0; i < 2; ++i) frame();
    glFinish();
    const auto t0 = Clock::now();
    for (int i = 0; i < a.frames; ++i) frame();
    glFinish();
    return seconds_since(t0) * 1e3 / a.frames;
  };
  // Where the fused frame's time goes: without release() (the application's barrier instead).
  const auto fused_no_release = [&] {
    interop::StateScope scope(dev);
    interop::conv2d_texture(in, out, w, b, Conv2dOptions::pad(1), {}, rgb);
    glMemoryBarrier(interop::kTextureReadBarrierBits);
  };
  double raw_ms = 1e30, glt_ms = 1e30, glt16_ms = 1e30, fused_ms = 1e30, raw16_ms = 1e30, fused16_ms = 1e30,
         filter_ms = 1e30, filter16_ms = 1e30, chain_ms = 1e30, chain16_ms = 1e30, fnr_ms = 1e30;
  int max_diff_fused = 0, max_diff_fused16 = 0;
  const auto diff_to_raw = [&] {
    auto pr = read_texture(tex[1], W, H), pf = read_texture(tex[2], W, H);
    int m = 0;
    for (std::size_t i = 0; i < pr.size(); ++i) m = std::max(m, std::abs(pr[i] - pf[i]));
    return m;
  };
  for (int round = 0; round < a.rounds; ++round) {  // interleaved, the best round of each
    raw_ms = std::min(raw_ms, time_frames(raw_frame));
    fused_ms = std::min(fused_ms, time_frames(gltensor_fused));
    if (round == 0) max_diff_fused = diff_to_raw();
    fnr_ms = std::min(fnr_ms, time_frames(fused_no_release));
    filter_ms = std::min(filter_ms, time_frames([&] { filter_frame(filter); }));
    if (round == 0) max_diff_fused = std::max(max_diff_fused, diff_to_raw());
    raw16_ms = std::min(raw16_ms, time_frames(raw_frame16));
    fused16_ms = std::min(fused16_ms, time_frames(gltensor_fused16));
    if (round == 0) max_diff_fused16 = diff_to_raw();
    filter16_ms = std::min(filter16_ms, time_frames([&] { filter_frame(filter16); }));
    if (round == 0) max_diff_fused16 = std::max(max_diff_fused16, diff_to_raw());
    chain_ms = std::min(chain_ms, time_frames([&] { filter_frame(chain); }));
    chain16_ms = std::min(chain16_ms, time_frames([&] { filter_frame(chain16); }));
    glt_ms = std::min(glt_ms, time_frames(gltensor_frame));
    glt16_ms = std::min(glt16_ms, time_frames(gltensor_frame16));
  }
  auto p16 = read_texture(tex[2], W, H);
  // Without the StateScope, and on a device that restores nothing.
  const auto fused_no_scope = [&] {
    interop::conv2d_texture(in, out, w, b, Conv2dOptions::pad(1), {}, rgb);
    glMemoryBarrier(interop::kTextureReadBarrierBits);
  };
  AdoptOptions no_restore;
  no_restore.restore_state = false;
  Device dev_nr = Device::adopt_current(no_restore);
  Tensor w_nr = Tensor::from_host(dev_nr, wv, {3, 3, 3, 3}), b_nr = Tensor::from_host(dev_nr, bv, {3});
  const auto fused_no_restore = [&] {
    interop::conv2d_texture(in, out, w_nr, b_nr, Conv2dOptions::pad(1), {}, rgb);
    glMemoryBarrier(interop::kTextureReadBarrierBits);
  };
  const double fns_ms = time_frames(fused_no_scope), fnrs_ms = time_frames(fused_no_restore);
  w_nr = b_nr = Tensor();
  dev_nr = Device();
  // gltensor's stages alone (where the frame's time goes).
  Tensor x0 = interop::from_texture(dev, in, rgb), y0 = conv2d(x0, w, b, Conv2dOptions::pad(1));
  const double from_ms = time_frames([&] { x0 = interop::from_texture(dev, in, rgb); });
  const double conv_ms = time_frames([&] { y0 = conv2d(x0, w, b, Conv2dOptions::pad(1)); });
  const double to_ms = time_frames([&] { interop::to_texture(y0, out); });
  auto pr = read_texture(tex[1], W, H), pg = read_texture(tex[2], W, H);
  int max_diff = 0, max_diff16 = 0;
  for (std::size_t i = 0; i < pr.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(pr[i] - pg[i]));
    max_diff16 = std::max(max_diff16, std::abs(pr[i] - p16[i]));
  }
  std::printf(
      "\nFrame: %dx%d RGBA8 texture -> tensor [1, 3, H, W] f32 -> conv2d 3x3 (3 -> 3, padding 1) -> RGBA8 "
      "texture, %d frames (best of %d interleaved rounds)\n\n",
      W, H, a.frames, a.rounds);
  std::printf("| path | ms per frame |\n|---|---|\n");
  std::printf("| raw GL compute shader (one dispatch) | %.3f |\n", raw_ms);
  std::printf("| gltensor (adopted, StateScope; from_texture, conv2d, to_texture, release) | %.3f |\n", glt_ms);
  std::printf("| gltensor, f16 tensors | %.3f |\n", glt16_ms);
  std::printf("| gltensor fused: interop::conv2d_texture (one dispatch), release | %.3f |\n", fused_ms);
  std::printf("| gltensor fused: interop::FrameFilter (conv2d, one dispatch), release | %.3f |\n", filter_ms);
  std::printf("| raw GL compute shader, f16 form (mediump, f16-rounded weights) | %.3f |\n", raw16_ms);
  std::printf("| gltensor fused, f16 form: conv2d_texture with f16 weights and bias, release | %.3f |\n", fused16_ms);
  std::printf("| gltensor fused, f16 form: FrameFilter with f16 weights and bias, release | %.3f |\n", filter16_ms);
  std::printf("| FrameFilter chain: conv 3->8, relu, conv 8->3, clamp (2 dispatches), f32 intermediates | %.3f |\n",
              chain_ms);
  std::printf("| the same chain, f16 intermediates | %.3f |\n", chain16_ms);
  std::printf("| fused, StateScope, the application's glMemoryBarrier instead of release() | %.3f |\n", fnr_ms);
  std::printf("| fused, no StateScope (each call restores), glMemoryBarrier | %.3f |\n", fns_ms);
  std::printf("| fused, restore_state = false, glMemoryBarrier | %.3f |\n", fnrs_ms);
  std::printf("| gltensor stage: from_texture alone | %.3f |\n", from_ms);
  std::printf("| gltensor stage: conv2d alone (direct kernel) | %.3f |\n", conv_ms);
  std::printf("| gltensor stage: to_texture alone | %.3f |\n", to_ms);
  std::printf(
      "\nratio raw / gltensor = %.2f (f16 tensors: %.2f; goal >= 0.8); outputs differ by at most %d/255%s "
      "(f16: %d/255)\n",
      raw_ms / glt_ms, raw_ms / glt16_ms, max_diff, max_diff > 1 ? " (MISMATCH)" : "", max_diff16);
  std::printf(
      "ratio raw / gltensor fused (conv2d_texture) = %.2f, FrameFilter %.2f (goal >= 0.8); outputs differ by "
      "at most %d/255%s\n",
      raw_ms / fused_ms, raw_ms / filter_ms, max_diff_fused, max_diff_fused > 1 ? " (MISMATCH)" : "");
  std::printf(
      "f16 form: ratio raw f16 / gltensor fused f16 = %.2f, FrameFilter %.2f; f16 / f32 time: raw %.2f, "
      "conv2d_texture %.2f (goal <= 1); outputs differ from raw f32 by at most %d/255%s\n",
      raw16_ms / fused16_ms, raw16_ms / filter16_ms, raw16_ms / raw_ms, fused16_ms / fused_ms, max_diff_fused16,
      max_diff_fused16 > 2 ? " (MISMATCH)" : "");
  std::printf("chain: f16 / f32 intermediates time %.2f\n", chain16_ms / chain_ms);
  x0 = y0 = w = b = w16 = b16 = tw1 = tw2 = Tensor();
  filter = interop::FrameFilter(dev), filter16 = interop::FrameFilter(dev), chain = interop::FrameFilter(dev),
  chain16 = interop::FrameFilter(dev);
  dev = Device();
  glDeleteSamplers(1, &sampler);
  glDeleteProgram(prog);
  glDeleteProgram(prog16);
  glDeleteTextures(3, tex);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (s == "--api") {
      a.desktop = std::string(v) == "gl";
      ++i;
    } else if (s == "--calls") {
      a.calls = std::atoi(v);
      ++i;
    } else if (s == "--rounds") {
      a.rounds = std::max(1, std::atoi(v));
      ++i;
    } else if (s == "--frames") {
      a.frames = std::atoi(v);
      ++i;
    } else if (s == "--size") {
      std::sscanf(v, "%dx%d", &a.w, &a.h);
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--api gles|gl] [--calls N] [--frames N] [--rounds N] [--size WxH]\n", argv[0]);
      return 2;
    }
  }
  {
    OpenOptions oo;
    oo.api = a.desktop ? GlApi::gl : GlApi::gles;
    Device probe = Device::open(oo);
    const bool software = probe.adapter().software;
    if (a.calls == 0) a.calls = software ? 2000 : 20000;
    if (a.frames == 0) a.frames = software ? 5 : 200;
    const char* threaded = std::getenv("__GL_THREADED_OPTIMIZATIONS");
    std::printf("device: %s | %s | __GL_THREADED_OPTIMIZATIONS=%s\n", probe.caps().renderer.c_str(),
                probe.caps().version.c_str(), threaded ? threaded : "(unset)");
  }
  bench_calls(a);
  bench_frame(a);
  return 0;
}
