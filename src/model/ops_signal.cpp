// Signal-processing ONNX ops of opset 17 (audio front ends, issue #22): STFT (its frames a
// strided view of the signal, one matmul with the windowed DFT matrix), DFT's matrix product
// (dft_rows, shared with DFT in ops_nn.cpp), and the host-computed constants HannWindow,
// HammingWindow, BlackmanWindow and MelWeightMatrix (their inputs are scalars; the values are
// computed in float64 on the host, as ONNX's reference does, then uploaded or folded into the
// graph at load).
#include <algorithm>
#include <bit>
#include <cmath>

#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "model/ops.hpp"
#include "nn/stft_mel.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::model {

namespace {

std::int64_t scalar_int(Args& a, std::size_t i, const char* what) {
  const HostTensor& h = a.h(i);
  if (h.numel() != 1) a.fail(std::string(what) + " must be a scalar, got " + to_string(h.shape));
  return static_cast<std::int64_t>(h.v[0]);
}

double scalar_real(Args& a, std::size_t i, const char* what) {
  const HostTensor& h = a.h(i);
  if (h.numel() != 1) a.fail(std::string(what) + " must be a scalar, got " + to_string(h.shape));
  return h.v[0];
}

// output_datatype (default float): any element type gltensor carries but bool (double, uint16,
// ... refused at load).
void check_output_datatype(const CheckCtx& c) {
  const int e = static_cast<int>(c.attrs().i("output_datatype", kFloat));
  if (!elem_supported(e) || e == kBool) c.fail_attr("output_datatype", elem_name(e) + " is not supported");
}

std::vector<int> output_datatype(const CheckCtx& c) {
  return {static_cast<int>(c.attrs().i("output_datatype", kFloat))};
}

// The windows (ONNX's reference): w[i] = f(2 pi i / N), N = size (periodic) or size - 1
// (symmetric; size 1 gives 0 / 0, NaN, as the reference does).
enum class Window { hann, hamming, blackman };

HostTensor host_window(Args& a, Window kind) {
  const std::int64_t n = scalar_int(a, 0, "size");
  if (n < 0 || n > kMaxHostElements)
    a.fail("size " + std::to_string(n) + " must be in [0, " + std::to_string(kMaxHostElements) + "]");
  const bool periodic = a.attrs.i("periodic", 1) != 0;
  const double N = static_cast<double>(periodic ? n : n - 1);
  HostTensor r{static_cast<int>(a.attrs.i("output_datatype", kFloat)), {n}, {}};
  r.v.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = 2.0 * M_PI * static_cast<double>(i) / N;
    double w = 0;
    switch (kind) {
      case Window::hann:
        w = 0.5 - 0.5 * std::cos(t);
        break;
      case Window::hamming:
        w = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(t);
        break;
      case Window::blackman:
        w = 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2.0 * t);
        break;
    }
    r.v[static_cast<std::size_t>(i)] = w;
  }
  host_round(r);
  return r;
}

// MelWeightMatrix as ONNX's reference computes it: num_mel_bins + 2 points evenly spaced on the
// mel scale (the step is the range over num_mel_bins + 2), mapped to DFT bins as
// floor((dft_length + 1) * hz / sample_rate), then triangles of peak 1 between consecutive points.
HostTensor host_mel(Args& a) {
  const std::int64_t bins = scalar_int(a, 0, "num_mel_bins"), dft = scalar_int(a, 1, "dft_length");
  const double rate = scalar_real(a, 2, "sample_rate"), lo = scalar_real(a, 3, "lower_edge_hertz"),
               hi = scalar_real(a, 4, "upper_edge_hertz");
  if (bins <= 0 || dft <= 0 || !(rate > 0) || !std::isfinite(rate))
    a.fail("num_mel_bins " + std::to_string(bins) + ", dft_length " + std::to_string(dft) + " and sample_rate " +
           std::to_string(rate) + " must be positive (the rate finite)");
  const std::int64_t spec = dft / 2 + 1;
  if (spec > kMaxHostElements / bins)
    a.fail("[" + std::to_string(spec) + ", " + std::to_string(bins) + "] is past the " +
           std::to_string(kMaxHostElements) + " elements computed on the host");
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double mlo = mel(lo), step = (mel(hi) - mlo) / static_cast<double>(bins + 2);
  // The rows written lie between the points (f[i] .. f[i + 2] - 1 for bin i, or f[i + 1] alone
  // where f[i + 1] = f[i]), so every point in [0, spec) and the last in [0, spec] keeps them inside
  // the matrix, whatever their order (an upper edge below the lower one makes them decrease); a
  // NaN or infinite point fails the same test before its conversion to an integer.
  std::vector<std::int64_t> f(static_cast<std::size_t>(bins + 2));
  bool inside = true;
  for (std::int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + mlo) / 2595.0) - 1.0);
    const double p = std::floor(static_cast<double>(dft + 1) * hz / rate);
    const double end = static_cast<double>(i == bins + 1 ? spec + 1 : spec);
    inside = inside && p >= 0 && p < end;  // false for NaN
    f[static_cast<std::size_t>(i)] = inside ? static_cast<std::int64_t>(p) : 0;
  }
  if (!inside)
    a.fail("lower_edge_hertz " + std::to_string(lo) + " and upper_edge_hertz " + std::to_string(hi) +
           " map outside the " + std::to_string(spec) + " DFT bins of dft_length " + std::to_string(dft) +
           " at sample_rate " + std::to_string(rate));
  HostTensor r{static_cast<int>(a.attrs.i("output_datatype", kFloat)), {spec, bins}, {}};
  r.v.assign(static_cast<std::size_t>(spec * bins), 0.0);
  auto at = [&](std::int64_t j, std::int64_t i) -> double& { return r.v[static_cast<std::size_t>(j * bins + i)]; };
  for (std::int64_t i = 0; i < bins; ++i) {
    const std::int64_t l = f[static_cast<std::size_t>(i)], c = f[static_cast<std::size_t>(i + 1)],
                       h = f[static_cast<std::size_t>(i + 2)];
    if (c == l) {
      at(c, i) = 1.0;
    } else {
      for (std::int64_t j = l; j <= c; ++j) at(j, i) = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    for (std::int64_t j = c; j < h; ++j) at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  host_round(r);
  return r;
}

// STFT (17): signal [B, L, 1 | 2] (real or complex), frame_step, window [n] (optional),
// frame_length (optional; the window's length, else L) -> [B, F, m, 2], F = 1 + (L - n) /
// frame_step frames of n samples starting every frame_step, each times the window, then its DFT
// of length n (onesided: the first m = n / 2 + 1 frequencies).
Ts run_stft(Args& a) {
  const Tensor& x = a.t(0);
  const Shape xs = x.shape();
  if (xs.size() != 3 || (xs[2] != 1 && xs[2] != 2)) a.fail("STFT expects a signal [B, L, 1 | 2], got " + to_string(xs));
  const std::int64_t B = xs[0], L = xs[1], ch = xs[2];
  const std::int64_t step = scalar_int(a, 1, "frame_step");
  if (step <= 0) a.fail("frame_step " + std::to_string(step) + " must be positive");
  const bool has_window = a.present(2) && a.shape(2) != Shape{0};
  std::int64_t n = L;
  if (has_window) {
    if (a.shape(2).size() != 1) a.fail("window must be 1-D, got " + to_string(a.shape(2)));
    n = a.shape(2)[0];
  }
  if (a.present(3)) {
    const std::int64_t fl = scalar_int(a, 3, "frame_length");
    if (has_window && fl != n)
      a.fail("frame_length " + std::to_string(fl) + " differs from the window's length " + std::to_string(n));
    n = fl;
  }
  if (n <= 0 || n > L)
    a.fail("frame_length " + std::to_string(n) + " must be in [1, " + std::to_string(L) + "] (the signal's length)");
  const std::int64_t F = 1 + (L - n) / step, m = a.attrs.i("onesided", 1) ? n / 2 + 1 : n;
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  if (B == 0) return Ts{full(a.dev, {0, F, m, 2}, 0.0, out_dtype)};
  // The output is the op's only buffer that grows with the signal: past the device's max SSBO
  // block (as float32), an error naming the node before any work.
  if (const std::int64_t limit = a.dev.impl()->ssbo_limit(); F > limit / (B * m * 2 * 4))
    a.fail("the output [" + std::to_string(B) + ", " + std::to_string(F) + ", " + std::to_string(m) +
           ", 2] of float32 is past the device's max SSBO block of " + std::to_string(limit) + " bytes");
  // Frame f of batch row b: the n * ch values from (b L + f step) ch on, read in place through
  // a view whose rows overlap (no frames in memory: no workspace grows with the signal, #22).
  const Tensor xf = x.to(DType::f32).contiguous();
  const Tensor frames = B == 1 ? detail::make_view(xf, {F, n * ch}, {step * ch, 1}, xf.offset())
                               : detail::make_view(xf, {B, F, n * ch}, {L * ch, step * ch, 1}, xf.offset());
  // (fuse_stft_power: the node's epilogue squares each value, the power spectrum's terms)
  const Tensor y = dft_rows(a, frames, ch, n, m, false, has_window ? 2 : -1, a.node.epilogue).reshape({B, F, m, 2});
  return Ts{y.dtype() == out_dtype ? y : y.to(out_dtype)};
}

// gltensor.Frames (fuse_stft_power): a real signal [B, L, 1]'s STFT frames as a view [B, F, n]
// (rows that overlap, never copied), F = 1 + (L - n) / frame_step; the STFT's own checks.
Ts run_frames(Args& a) {
  const Tensor& x = a.t(0);
  const Shape xs = x.shape();
  if (xs.size() != 3 || xs[2] != 1) a.fail("the STFT's frames expect a real signal [B, L, 1], got " + to_string(xs));
  const std::int64_t B = xs[0], L = xs[1], step = a.attrs.i("frame_step", 1), n = a.attrs.i("frame_length", 1);
  if (n <= 0 || n > L)
    a.fail("frame_length " + std::to_string(n) + " must be in [1, " + std::to_string(L) + "] (the signal's length)");
  const std::int64_t F = 1 + (L - n) / step;
  if (B == 0) return Ts{full(a.dev, {0, F, n}, 0.0)};
  const Tensor xf = x.to(DType::f32).contiguous();
  return Ts{detail::make_view(xf, {B, F, n}, {L, step, 1}, xf.offset())};
}

// gltensor.StftMel (fuse_stft_mel): x [B, L, 1], D [n, 2 m] (the windowed DFT matrix), w2 [2 m, N]
// (the mel weight's rows twice), bias [N], and the one-dispatch kernel's constants: window [n],
// twiddles [n, 2], M [m, N]; frame_step, frame_length; the node's epilogue (Log).
// y [B, F, N] = act(|frames D|^2 M + bias): nn/stft_mel.hpp's one dispatch where its plan takes
// the sizes, else fuse_stft_power's two matmuls.
Ts run_stft_mel(Args& a) {
  const Tensor frames = run_frames(a)[0];  // (the STFT's checks; [B, F, n], a view)
  const std::int64_t B = frames.size(0), F = frames.size(1), n = frames.size(2);
  const detail::Settings& st = detail::settings();
  const detail::StftMelChoice choice{st.stft_mel_frames, st.stft_mel_slices, st.stft_mel_local, st.stft_mel_twiddles};
  const Shape ms = a.shape(6);
  if (B * F > 0 && ms.size() == 2 &&
      detail::plan_stft_mel(n, ms[0], ms[1], detail::stft_mel_device(a.t(0)), choice).ok) {
    const Tensor x = a.t(0).to(DType::f32).contiguous();
    const std::int64_t L = x.size(1);
    return Ts{detail::stft_mel("StftMel", x.reshape({B, L}), a.attrs.i("frame_step", 1), a.t(4), a.t(5), a.t(6), a.t(3),
                               a.node.epilogue, choice, a.host_output(0, B * F * ms[1] * 4))};
  }
  const Tensor p = matmul_fused(frames, a.t(1), Tensor(), 1.0, 1.0, Epilogue(Activation::square));
  return Ts{matmul_fused(p, a.t(2), a.t(3), 1.0, 1.0, a.node.epilogue)};
}

}  // namespace

std::vector<double> stft_matrix(std::int64_t n, std::int64_t m, const std::vector<double>& window) {
  std::vector<double> v(static_cast<std::size_t>(n * 2 * m));
  for (std::int64_t j = 0; j < n; ++j) {
    const double scale = window.empty() ? 1.0 : window[static_cast<std::size_t>(j)];
    for (std::int64_t q = 0; q < 2 * m; ++q) {
      const double t = 2.0 * M_PI * static_cast<double>((j * (q / 2)) % n) / static_cast<double>(n);
      v[static_cast<std::size_t>(j * 2 * m + q)] = q % 2 != 0 ? -std::sin(t) * scale : std::cos(t) * scale;
    }
  }
  return v;
}

Tensor dft_rows(Args& a, const Tensor& x, std::int64_t ch, std::int64_t n, std::int64_t m, bool inverse, int window,
                const Epilogue& epilogue) {
  if (n > kMaxHostElements / m)
    a.fail("a DFT of length " + std::to_string(n) + " (" + std::to_string(m) + " frequencies) needs [" +
           std::to_string(n) + ", " + std::to_string(m) + "] cos / sin values, past the " +
           std::to_string(kMaxHostElements) + " elements computed on the host");
  const std::int64_t R = x.size(-1), rows = R / ch, cols = 2 * m;
  Shape out_shape = x.shape();
  out_shape.back() = cols;
  if (R == 0 || x.numel() == 0) return apply_epilogue(full(a.dev, out_shape, 0.0), epilogue);
  // The matrix in blocks of columns, each within the device's max SSBO block (and the host's
  // limit): one block but for long DFTs or a lowered limit.
  const std::int64_t most = std::min(kMaxHostElements, a.dev.impl()->ssbo_limit() / 4);
  const std::int64_t cb = std::min(cols, most / R);
  if (cb < 1)
    a.fail("a DFT of " + std::to_string(R) +
           " values per signal needs matrix rows past the device's max SSBO block of " +
           std::to_string(a.dev.impl()->ssbo_limit()) + " bytes");
  // A window on the host (a constant, or computed on the host this run) is folded into the
  // matrix, its values part of the cache's key; one on the GPU scales the matrix's rows per run.
  const bool host_window = window >= 0 && a.on_host(static_cast<std::size_t>(window));
  const HostTensor* hw = host_window ? &a.h(static_cast<std::size_t>(window)) : nullptr;
  std::vector<std::int64_t> key{n, m, R, ch, inverse ? 1 : 0, cb};
  if (hw)
    for (double v : hw->v) key.push_back(std::bit_cast<std::int64_t>(v));
  // X[k] = sum_j x[j] e^{-+2 pi i j k / n}: with s = -+sin, (xr + i xi)(cos + i s) = xr cos - xi s +
  // i (xr s + xi cos): row j (real) or rows 2j, 2j + 1 (re, im) of columns 2k (re) and 2k + 1 (im).
  auto build = [&] {
    std::vector<Tensor> blocks;
    const double sign = inverse ? 1.0 : -1.0, norm = inverse ? 1.0 / static_cast<double>(n) : 1.0;
    for (std::int64_t c0 = 0; c0 < cols; c0 += cb) {
      const std::int64_t w = std::min(cb, cols - c0);
      std::vector<float> v(static_cast<std::size_t>(R * w));
      for (std::int64_t j = 0; j < rows; ++j) {
        const double scale = norm * (hw ? hw->v[static_cast<std::size_t>(j)] : 1.0);
        for (std::int64_t q = c0; q < c0 + w; ++q) {
          const double t = 2.0 * M_PI * static_cast<double>((j * (q / 2)) % n) / static_cast<double>(n);
          const double c = std::cos(t) * scale, s = sign * std::sin(t) * scale;
          const bool im_out = q % 2 != 0;
          v[static_cast<std::size_t>(j * ch * w + q - c0)] = static_cast<float>(im_out ? s : c);
          if (ch == 2) v[static_cast<std::size_t>((j * ch + 1) * w + q - c0)] = static_cast<float>(im_out ? c : -s);
        }
      }
      blocks.push_back(Tensor::from_host(a.dev, v, {R, w}));
    }
    return blocks;
  };
  NodeCache* cache = a.cache();
  const std::vector<Tensor>* mats = cache ? cache->find(key) : nullptr;
  std::vector<Tensor> local;
  if (!mats) {
    local = build();
    mats = cache ? &cache->put(std::move(key), std::move(local)) : &local;
  }
  const Tensor gpu_window =
      window >= 0 && !hw ? a.t(static_cast<std::size_t>(window)).to(DType::f32).reshape({rows, 1, 1}) : Tensor();
  std::vector<Tensor> parts;
  for (const Tensor& mat : *mats) {
    const std::int64_t w = mat.size(1);
    const Tensor b = gpu_window.defined() ? mul(mat.reshape({rows, ch, w}), gpu_window).reshape({R, w}) : mat;
    parts.push_back(epilogue.none() ? matmul(x, b) : matmul_fused(x, b, Tensor(), 1.0, 1.0, epilogue));
  }
  return parts.size() == 1 ? parts[0] : concat(parts, x.dim() - 1);
}

void register_signal_ops(Registry& m) {
  m["STFT"] = OpDef{{"onesided"},
                    [](const CheckCtx& c) {
                      c.need_float(0);
                      const std::int64_t o = c.attrs().i("onesided", 1);
                      if (o != 0 && o != 1) c.fail_attr("onesided", "expected 0 or 1");
                    },
                    nullptr,
                    run_stft};
  m["gltensor.Frames"] = OpDef{{"frame_step", "frame_length"}, nullptr, nullptr, run_frames};
  m["gltensor.StftMel"] = OpDef{{"frame_step", "frame_length"}, nullptr, nullptr, run_stft_mel};
  const std::pair<const char*, Window> windows[] = {
      {"HannWindow", Window::hann}, {"HammingWindow", Window::hamming}, {"BlackmanWindow", Window::blackman}};
  for (const auto& [op, kind] : windows)
    m[op] = OpDef{{"output_datatype", "periodic"},
                  check_output_datatype,
                  output_datatype,
                  [kind](Args& a) { return Ts{host_window(a, kind).upload(a.dev)}; },
                  [kind](Args& a) { return Hs{host_window(a, kind)}; }};
  m["MelWeightMatrix"] = OpDef{{"output_datatype"},
                               check_output_datatype,
                               output_datatype,
                               [](Args& a) { return Ts{host_mel(a).upload(a.dev)}; },
                               [](Args& a) { return Hs{host_mel(a)}; }};
}

}  // namespace gltensor::model
