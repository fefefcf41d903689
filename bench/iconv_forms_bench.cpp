// The QDQ convolution's integer-GEMM forms against float32 conv2d, layer by layer, in one process
// (issue 22; bench/RESULTS.md, "int8w"): the 3x3 convolutions (pads 1) of the QDQ nets that
// `gltensor_model_bench --qdq` runs (64-128-128-256-256 and 32-64-64-128 channels) at one image
// size, each as detail::conv_requant (uint8 image, zero point 128, int8 weights, per-channel
// scales, bias, Relu, QuantizeLinear to uint8: what the model runtime runs for the QDQ
// pattern) under every form of the block-f32 integer matmul (glsl/nn/imatmul.comp: the implicit
// GEMM or im2col's columns, 4 x 4 / 8 x 4 / 8 x 8 outputs per invocation (8x8t64: 8 x 8 on 64 x
// 64 tiles, else 64 x 128; 4x8 on 64 x 128; t32: 64 x 32 tiles; sliced: two K slices per
// workgroup), K tiles of 16 or 8, int32 totals in registers, memory or shared memory; set
// in-process through Settings, as the GLTENSOR_ICONV_GEMM / GLTENSOR_IMATMUL* variables do), against conv2d with bias
// on float32 tensors of the same shapes. Each case alternates f32 and every form for N rounds (each round: back-to-back
// ops for at least T ms, then Device::synchronize) and keeps each one's best round; "int8 / f32 speed" is f32's time
// over the form's (above 1: int8 faster); every form's output is checked against the first form's, byte for byte (the
// sums are exact in every form; the warp forms' sums are f32 sums, rounded past 2^24: "NO" is expected there).
// Forms "warp" and "warp-f32cols": the QDQ pattern's warp path (IntRequant::f32_sums, as the model runtime's
// QConv runs it), and that with float32 operands converted first (IntRequant::f32_columns, a lab form).
// --chain R: the wide net's four layers as one chain per form, R runs each synchronized (as the
// model bench times a run), against the f32 chain; then the default form with the QDQ model's
// ends (QuantizeLinear of an f32 input, DequantizeLinear of the output). --chain-only: no layers.
// --chain-narrow: the narrow net's three layers instead. --gemm: the integer GEMM alone (matmul_integer, int32
// sums of int8 weights [M, K] and uint8 columns [K, N]) under the forms against f32 matmul of the same shapes
// (the 3x3 convs' GEMMs at 112x112: 256 x 2304 x 12544, 256 x 1152 x 12544, 128 x 1152 x 12544).
//   gltensor_iconv_forms_bench [--size 112] [--rounds N] [--min-ms T] [--forms a,b,...] [--chain R]
//                              [--chain-only] [--chain-narrow] [--gemm]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>

#include "gltensor/gltensor.hpp"
#include "int8_rounds.hpp"
#include "nn/imatmul_plan.hpp"
#include "nn/quant_int.hpp"
#include "runtime/settings.hpp"

using namespace gltensor;
using detail::IConvGemmSetting;
using detail::IMatmulSetting;
using detail::Settings;

namespace {

using Clock = std::chrono::steady_clock;

using int8_bench::q8;
using int8_bench::round_seconds;

// A form: its name and the settings it changes (on top of the defaults).
struct Form {
  const char* name;
  std::function<void(Settings&)> set;
  int swizzle = -1;  ///< Settings::imatmul_swizzle while the form runs (-1: the plan's choice)
  /// IntRequant::f32_sums (the QDQ pattern's warp path where it applies: the model runtime's
  /// QConv) and its lab form IntRequant::f32_columns (float32 operands converted first).
  bool f32_sums = false, f32_columns = false;
  detail::IntRequant requant(const Tensor& ys, const Tensor& zy) const {
    detail::IntRequant rq{ys, zy, Activation::relu, DType::u8};
    rq.f32_sums = f32_sums, rq.f32_columns = f32_columns;
    return rq;
  }
};

// Runs op under the form's settings.
Tensor under(const Form& f, const std::function<Tensor()>& op) {
  const Settings saved = detail::settings();
  f.set(detail::settings());
  detail::settings().imatmul_swizzle = f.swizzle;
  Tensor y = op();
  detail::settings() = saved;
  return y;
}

const std::vector<Form>& all_forms() {
  using I = IMatmulSetting;
  using G = IConvGemmSetting;
  static const std::vector<Form> forms{
      {"default", [](Settings&) {}},
      {"warp", [](Settings&) {}, -1, true},
      {"warp-f32cols", [](Settings&) {}, -1, true, true},
      {"im2col-4x4-regs", [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 64; }},
      {"implicit-4x4-regs", [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 64; }},
      {"im2col-4x4-shared", [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul = I::shared; }},
      {"im2col-8x4-shared-bk8",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_rb = 2, s.imatmul = I::shared, s.imatmul_bk = 8; }},
      {"im2col-8x8-regs", [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 128, s.imatmul = I::regs; }},
      {"im2col-8x8-regs-bk8",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 128, s.imatmul = I::regs, s.imatmul_bk = 8; }},
      {"im2col-8x8-mem-bk8",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 128, s.imatmul = I::mem, s.imatmul_bk = 8; }},
      {"im2col-8x8-shared-bk8",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 128, s.imatmul = I::shared, s.imatmul_bk = 8; }},
      {"im2col-4x8-regs",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 128, s.imatmul_rb = 1, s.imatmul = I::regs; }},
      {"implicit-4x8-regs",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul_rb = 1, s.imatmul = I::regs; }},
      {"im2col-8x8t64-shared-bk8",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_blocks = 2, s.imatmul = I::shared, s.imatmul_bk = 8; }},
      {"implicit-8x8t64-shared-bk8",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_blocks = 2, s.imatmul = I::shared, s.imatmul_bk = 8; }},
      {"implicit-8x8t64-regs",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_blocks = 2, s.imatmul = I::regs; }},
      {"im2col-8x8-sliced-bk8",
       [](Settings& s) { s.iconv_gemm = G::im2col, s.imatmul_tile = 128, s.imatmul_slices = 2, s.imatmul_bk = 8; }},
      {"implicit-8x8-sliced-bk8",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul_slices = 2, s.imatmul_bk = 8; }},
      {"implicit-8x8-sliced",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul_slices = 2; }},
      {"implicit-4x8-sliced",
       [](Settings& s) {
         s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul_rb = 1, s.imatmul_slices = 2, s.imatmul = I::regs;
       }},
      {"default-nos", [](Settings&) {}, 0},
      {"implicit-4x4-regs-nos", [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 64; }, 0},
      {"implicit-4x8-sliced-s",
       [](Settings& s) {
         s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul_rb = 1, s.imatmul_slices = 2, s.imatmul = I::regs;
       },
       1},
      {"implicit-4x8-mem",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul_rb = 1, s.imatmul = I::mem; }},
      {"implicit-8x4-regs",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 64, s.imatmul_rb = 2, s.imatmul = I::regs; }},
      {"implicit-8x8-regs", [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul = I::regs; }},
      {"implicit-8x8-regs-bk8",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul = I::regs, s.imatmul_bk = 8; }},
      {"implicit-8x8-shared-bk8",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 128, s.imatmul = I::shared, s.imatmul_bk = 8; }},
      {"implicit-4x4-t32", [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 32; }},
      {"implicit-4x4-t32-sliced",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 32, s.imatmul_slices = 2; }},
      {"implicit-4x4-sliced",
       [](Settings& s) { s.iconv_gemm = G::implicit, s.imatmul_tile = 64, s.imatmul_slices = 2; }},
  };
  return forms;
}

// Milliseconds per run of one chain, each run synchronized (as gltensor_model_bench times a
// model run): the best of three rounds of `runs` runs.
double chain_ms(Device& dev, int runs, const std::function<Tensor()>& run) {
  run();
  dev.synchronize();
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < runs; ++i) {
      Tensor y = run();
      dev.synchronize();
    }
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / runs);
  }
  return best;
}

// The wide QDQ net's four convolutions (64-128-128-256-256; `narrow`: the narrow net's three,
// 32-64-64-128) as one chain, each layer's uint8 output the next one's input (zero point 0 after
// the first), against the f32 chain (conv2d with bias, relu): per run with a synchronize, as the
// model bench measures the whole net.
void chains(Device& dev, Generator& g, std::int64_t H, const std::vector<Form>& forms, int runs, bool narrow) {
  const std::vector<std::int64_t> chans =
      narrow ? std::vector<std::int64_t>{32, 64, 64, 128} : std::vector<std::int64_t>{64, 128, 128, 256, 256};
  std::string net;
  for (auto c : chans) net += (net.empty() ? "" : "-") + std::to_string(c);
  std::vector<Tensor> wf, qw, bias, sw, zw;
  for (std::size_t l = 0; l + 1 < chans.size(); ++l) {
    const std::int64_t C = chans[l], O = chans[l + 1];
    wf.push_back(randn(dev, {O, C, 3, 3}, g));
    qw.push_back(q8(dev, g, {O, C, 3, 3}, DType::i8));
    bias.push_back(randn(dev, {O}, g));
    sw.push_back(full(dev, {O}, 1e-3));
    zw.push_back(zeros(dev, {O}, DType::i8));
  }
  const Tensor x = randn(dev, {1, chans[0], H, H}, g), qx = q8(dev, g, {1, chans[0], H, H}, DType::u8);
  const Tensor z128 = full(dev, {1}, 128, DType::u8), z0 = zeros(dev, {1}, DType::u8);
  const Tensor sx = full(dev, {1}, 0.02), ys = full(dev, {1}, 0.05);
  Conv2dOptions o;
  o.padding = {1, 1, 1, 1};
  detail::IntConvOptions io;
  io.padding = {1, 1, 1, 1};
  const double tf = chain_ms(dev, runs, [&] {
    Tensor y = x;
    for (std::size_t l = 0; l < wf.size(); ++l) y = relu(conv2d(y, wf[l], bias[l], o));
    return y;
  });
  std::printf("\n| chain %s, %lldx%lld | f32 ms | int8 ms | int8 / f32 speed |\n|---|---:|---:|---:|\n", net.c_str(),
              static_cast<long long>(H), static_cast<long long>(H));
  for (const Form& f : forms) {
    const double ti = chain_ms(dev, runs, [&] {
      return under(f, [&] {
        Tensor y = qx;
        for (std::size_t l = 0; l < qw.size(); ++l) {
          y = detail::conv_requant(y, qw[l], l ? z0 : z128, zw[l], io, {sx, sw[l], bias[l], true}, f.requant(ys, z0));
        }
        return y;
      });
    });
    std::printf("| %s | %.3f | %.3f | %.2fx |\n", f.name, tf, ti, tf / ti);
    std::fflush(stdout);
  }
  // The default form with the QDQ model's ends: the f32 input quantized (QuantizeLinear), the
  // last layer's output dequantized (DequantizeLinear), as gltensor_model_bench --qdq runs it.
  const Tensor xr = rand(dev, {1, chans[0], H, H}, g);
  const double te = chain_ms(dev, runs, [&] {
    Tensor y = detail::quantize_linear(xr, sx, z128, {}, DType::u8, {}, "QuantizeLinear");
    for (std::size_t l = 0; l < qw.size(); ++l)
      y = detail::conv_requant(y, qw[l], l ? z0 : z128, zw[l], io, {sx, sw[l], bias[l], true},
                               {ys, z0, Activation::relu, DType::u8});
    return detail::dequantize_linear(y, ys, z0, {}, "DequantizeLinear");
  });
  std::printf("| default, with the model's QuantizeLinear / DequantizeLinear | %.3f | %.3f | %.2fx |\n", tf, te,
              tf / te);
  std::fflush(stdout);
}

// f32 and every form's op compiled, each op's output checked against the first's, byte for byte
// (exact int32 sums, the same epilogue: "yes" or "**NO**"), then `rounds` alternating rounds: the
// best seconds per op of f32 and of each op.
struct Timed {
  double f32 = 1e30;
  std::vector<double> ops;
  std::vector<std::string> same;
};
Timed time_forms(Device& dev, int rounds, double min_ms, const std::function<Tensor()>& f32,
                 const std::vector<std::function<Tensor()>>& ops) {
  Timed t;
  f32();
  t.same.assign(ops.size(), "yes");
  const std::vector<std::int32_t> first = ops.empty() ? std::vector<std::int32_t>{} : ops[0]().to_int_vector();
  for (std::size_t i = 1; i < ops.size(); ++i)
    if (ops[i]().to_int_vector() != first) t.same[i] = "**NO**";
  dev.synchronize();
  t.ops.assign(ops.size(), 1e30);
  for (int r = 0; r < rounds; ++r) {
    t.f32 = std::min(t.f32, round_seconds(dev, min_ms, f32));
    for (std::size_t i = 0; i < ops.size(); ++i) t.ops[i] = std::min(t.ops[i], round_seconds(dev, min_ms, ops[i]));
  }
  return t;
}

// --gemm: the integer GEMM alone, int32 c [M, N] = (a - 0) [M, K] int8 @ (b - 128) [K, N] uint8
// (matmul_integer: a conv's weights against its im2col columns), under each form, against the
// f32 matmul of the same shape (the warp kernel on GPUs), back-to-back ops as the layer rows.
void gemms(Device& dev, Generator& g, const std::vector<Form>& forms, int rounds, double min_ms) {
  std::printf(
      "\n| GEMM M x K x N | form | f32 ms (TFLOP/s) | int8 ms (TFLOP/s) | int8 / f32 speed | c = first form's |\n"
      "|---|---|---:|---:|---:|---|\n");
  const std::vector<std::array<std::int64_t, 3>> shapes{{256, 2304, 12544}, {256, 1152, 12544}, {128, 1152, 12544}};
  for (auto [M, K, N] : shapes) {
    const Tensor a = q8(dev, g, {M, K}, DType::i8), b = q8(dev, g, {K, N}, DType::u8);
    const Tensor za = zeros(dev, {1}, DType::i8), zb = full(dev, {1}, 128, DType::u8);
    const Tensor af = randn(dev, {M, K}, g), bf = randn(dev, {K, N}, g);
    const auto f32 = [=] { return matmul(af, bf); };
    std::vector<std::function<Tensor()>> ops;
    for (const Form& f : forms)
      ops.push_back([=] { return under(f, [&] { return detail::matmul_integer(a, b, za, zb); }); });
    const Timed t = time_forms(dev, rounds, min_ms, f32, ops);
    const double tf = t.f32;
    const std::vector<double>& ti = t.ops;
    const std::vector<std::string>& same = t.same;
    const double flop = 2.0 * static_cast<double>(M) * static_cast<double>(K) * static_cast<double>(N);
    for (std::size_t i = 0; i < ops.size(); ++i)
      std::printf("| %lld x %lld x %lld | %s | %.3f (%.1f) | %.3f (%.1f) | %.2fx | %s |\n", static_cast<long long>(M),
                  static_cast<long long>(K), static_cast<long long>(N), forms[i].name, tf * 1e3, flop / tf * 1e-12,
                  ti[i] * 1e3, flop / ti[i] * 1e-12, tf / ti[i], same[i].c_str());
    std::fflush(stdout);
    dev.trim();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"QDQ conv layers: the integer GEMM's forms against float32 conv2d, same run"};
  int rounds = 3;
  double min_ms = 40;
  std::int64_t size = 0;
  std::string only;
  int chain_runs = 0;
  app.add_option("--rounds", rounds, "alternating rounds of f32 and each form per case")->check(CLI::PositiveNumber);
  app.add_option("--min-ms", min_ms, "milliseconds of back-to-back ops per round")->check(CLI::PositiveNumber);
  app.add_option("--size", size, "image size (default: 112 on GPUs, 28 on software rasterizers)");
  app.add_option("--forms", only, "comma-separated form names (default: all)");
  app.add_option("--chain", chain_runs, "also the wide net's four layers as one chain, this many synchronized runs");
  bool chain_only = false;
  app.add_flag("--chain-only", chain_only, "only the chain (no per-layer rows)");
  bool chain_narrow = false;
  app.add_flag("--chain-narrow", chain_narrow, "the chain of the narrow net (32-64-64-128) instead of the wide one");
  bool gemm = false;
  app.add_flag("--gemm", gemm, "also the integer GEMM alone (matmul_integer) against f32 matmul, same shapes");
  CLI11_PARSE(app, argc, argv);
  Device dev = Device::open();
  Generator g(1);
  if (size <= 0) size = dev.adapter().software ? 28 : 112;
  std::vector<Form> forms;
  for (const Form& f : all_forms())
    if (only.empty() || ("," + only + ",").find("," + std::string(f.name) + ",") != std::string::npos)
      forms.push_back(f);
  std::printf("device: %s (%s); 3x3 convs, pads 1, batch 1, %lldx%lld; best of %d rounds of >= %.0f ms\n\n",
              dev.caps().renderer.c_str(), dev.caps().version.c_str(), static_cast<long long>(size),
              static_cast<long long>(size), rounds, min_ms);
  std::printf(
      "| C -> O | K | form | f32 ms | int8 ms | int8 / f32 speed | output = first form's |\n"
      "|---|---:|---|---:|---:|---:|---|\n");
  using CO = std::pair<std::int64_t, std::int64_t>;
  const std::vector<CO> layers{{64, 128}, {128, 128}, {128, 256}, {256, 256}, {32, 64}, {64, 64}};
  for (auto [C, O] : layers) {
    if (chain_only) break;
    const std::int64_t H = size;
    Tensor x = randn(dev, {1, C, H, H}, g), w = randn(dev, {O, C, 3, 3}, g), b = randn(dev, {O}, g);
    Tensor qx = q8(dev, g, {1, C, H, H}, DType::u8), qw = q8(dev, g, {O, C, 3, 3}, DType::i8);
    const Tensor zx = full(dev, {1}, 128, DType::u8), zw = zeros(dev, {O}, DType::i8);
    const Tensor sx = full(dev, {1}, 0.02), sw = full(dev, {O}, 1e-3), ys = full(dev, {1}, 0.05);
    const Tensor zy = zeros(dev, {1}, DType::u8);
    Conv2dOptions o;
    o.padding = {1, 1, 1, 1};
    detail::IntConvOptions io;
    io.padding = {1, 1, 1, 1};
    const auto f32 = [=] { return conv2d(x, w, b, o); };
    std::vector<std::function<Tensor()>> ops;
    for (const Form& f : forms)
      ops.push_back([=] {
        return under(f, [&] { return detail::conv_requant(qx, qw, zx, zw, io, {sx, sw, b, true}, f.requant(ys, zy)); });
      });
    const Timed t = time_forms(dev, rounds, min_ms, f32, ops);
    const double tf = t.f32;
    const std::vector<double>& ti = t.ops;
    const std::vector<std::string>& same = t.same;
    for (std::size_t i = 0; i < ops.size(); ++i)
      std::printf("| %lld -> %lld | %lld | %s | %.3f | %.3f | %.2fx | %s |\n", static_cast<long long>(C),
                  static_cast<long long>(O), static_cast<long long>(C * 9), forms[i].name, tf * 1e3, ti[i] * 1e3,
                  tf / ti[i], same[i].c_str());
    std::fflush(stdout);
    dev.trim();
  }
  if (gemm) gemms(dev, g, forms, rounds, min_ms);
  if (chain_runs > 0) chains(dev, g, size, forms, chain_runs, chain_narrow);
  return 0;
}
