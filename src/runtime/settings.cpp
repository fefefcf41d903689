#include "runtime/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "gltensor/errors.hpp"

namespace gltensor::detail {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The value named `text` among `values` (text, value), else ValueError naming the variable.
template <typename E>
E parse(const char* variable, const std::string& text, const std::vector<std::pair<const char*, E>>& values) {
  std::string names;
  for (const auto& [name, value] : values) {
    if (text == name) return value;
    names += std::string(names.empty() ? "" : ", ") + "\"" + name + "\"";
  }
  throw ValueError(std::string("gltensor: ") + variable + "=\"" + text + "\" is not one of " + names);
}

// Every boolean GLTENSOR_* variable: 1, on, true or 0, off, false (any case); unset or empty:
// `unset` (a setting's default, or -1 where the plan chooses); else ValueError naming it.
int env_flag(const char* variable, int unset) {
  std::string t = env(variable);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return parse<int>(variable, t, {{"", unset}, {"1", 1}, {"on", 1}, {"true", 1}, {"0", 0}, {"off", 0}, {"false", 0}});
}
bool env_bool(const char* variable, bool unset) { return env_flag(variable, unset ? 1 : 0) == 1; }
}  // namespace

MatmulKernelSetting parse_matmul_kernel(const std::string& text) {
  using K = MatmulKernelSetting;
  return parse<K>("GLTENSOR_MATMUL_KERNEL", text,
                  {{"", K::choose},
                   {"gpu", K::gpu},
                   {"vec4", K::vec4},
                   {"vec4s", K::vec4s},
                   {"vec4u", K::vec4u},
                   {"vec4su", K::vec4su},
                   {"tile64", K::tile64},
                   {"tile128", K::tile128},
                   {"reg", K::reg},
                   {"gemv", K::gemv},
                   {"warp", K::warp}});
}

ConvSetting parse_conv(const std::string& text) {
  return parse<ConvSetting>(
      "GLTENSOR_CONV", text,
      {{"", ConvSetting::choose}, {"direct", ConvSetting::direct}, {"im2col", ConvSetting::im2col}});
}

ConvDirectSetting parse_conv_direct(const std::string& text) {
  using C = ConvDirectSetting;
  return parse<C>("GLTENSOR_CONV_DIRECT", text,
                  {{"", C::choose}, {"rows", C::rows}, {"lanes", C::lanes}, {"ubo", C::ubo}});
}

PrecisionSetting parse_precision(const std::string& text) {
  using P = PrecisionSetting;
  return parse<P>("GLTENSOR_PRECISION", text,
                  {{"", P::f32},
                   {"f32", P::f32},
                   {"f16", P::f16},
                   {"f16-matmul", P::f16_matmul},
                   {"f16-force", P::f16_force},
                   {"f16-emulate", P::f16_emulate},
                   {"f16-ext-only", P::f16_ext_only}});
}

F16MatmulSetting parse_f16_matmul(const std::string& text) {
  using F = F16MatmulSetting;
  return parse<F>("GLTENSOR_F16_MATMUL", text, {{"", F::choose}, {"f16x4", F::f16x4}, {"f16x2", F::f16x2}});
}

F16ExtSetting parse_f16_ext(const std::string& text) {
  using F = F16ExtSetting;
  return parse<F>("GLTENSOR_F16_EXT", text, {{"", F::choose}, {"nv", F::nv}, {"amd", F::amd}, {"ext", F::ext}});
}

QlinearKernelSetting parse_qlinear_kernel(const std::string& text) {
  using Q = QlinearKernelSetting;
  return parse<Q>("GLTENSOR_QLINEAR_KERNEL", text,
                  {{"", Q::choose}, {"gemv", Q::gemv}, {"words", Q::words}, {"serial", Q::serial}, {"gemm", Q::gemm}});
}

QlinearGemvShape parse_qlinear_gemv(const std::string& text) {
  QlinearGemvShape g;
  if (text.empty()) return g;
  char tail = 0;
  char extra = 0;
  const int n = std::sscanf(text.c_str(), "%dx%dx%d%c%c", &g.rows, &g.unroll, &g.tpr, &tail, &extra);
  g.mantissa = n == 4 && tail == 'm';
  g.pairs = n == 4 && tail == 'p';
  const bool parsed = n == 3 || g.mantissa || g.pairs;
  if (!parsed || g.tpr < 8 || g.tpr > 256 || (g.tpr & (g.tpr - 1)) != 0 || g.rows < 1 || g.rows > 16 || g.unroll < 1 ||
      g.unroll > 8)
    throw ValueError("gltensor: GLTENSOR_QLINEAR_GEMV=\"" + text +
                     "\" is not RxUxT[m|p] with R in 1..16, U in 1..8 and T a power of two in 8..256");
  return g;
}

int parse_elementwise_quads(const std::string& text) {
  return parse<int>("GLTENSOR_ELEMENTWISE_QUADS", text, {{"", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}});
}

RnnSetting parse_rnn(const std::string& text) {
  using R = RnnSetting;
  return parse<R>("GLTENSOR_RNN", text,
                  {{"", R::choose}, {"steps", R::steps}, {"units", R::units}, {"quads", R::quads}});
}

IMatmulSetting parse_imatmul(const std::string& text) {
  using I = IMatmulSetting;
  return parse<I>("GLTENSOR_IMATMUL", text,
                  {{"", I::choose}, {"regs", I::regs}, {"mem", I::mem}, {"shared", I::shared}});
}

IConvGemmSetting parse_iconv_gemm(const std::string& text) {
  using I = IConvGemmSetting;
  return parse<I>("GLTENSOR_ICONV_GEMM", text,
                  {{"", I::choose}, {"implicit", I::implicit}, {"bytes", I::bytes}, {"im2col", I::im2col}});
}

void parse_fused_mlp(const std::string& text, int& on, std::int64_t& rows, std::int64_t& split) {
  on = text.empty() ? -1 : text == "0" ? 0 : 1, rows = 0, split = 0;
  if (text.empty() || text == "0" || text == "1") return;
  char* end = nullptr;
  rows = std::strtol(text.c_str(), &end, 10);
  if (*end == 'x') split = std::strtol(end + 1, &end, 10);
  if (*end || rows < 4 || rows > 64 || rows % 4 || split < 0 || split > 8)
    throw ValueError("gltensor: GLTENSOR_FUSED_MLP=\"" + text +
                     "\" is not 0, 1, R or RxS (R rows per workgroup 4, 8, ..., 64; S slices of K 1..8)");
}

void parse_stft_mel(const std::string& text, int& on, std::int64_t& frames, std::int64_t& slices, std::int64_t& local,
                    std::int64_t& twiddles) {
  on = text.empty() ? -1 : text == "0" ? 0 : 1, frames = 0, slices = 0, local = 0, twiddles = 0;
  if (text.empty() || text == "0" || text == "1") return;
  char* end = nullptr;
  frames = std::strtol(text.c_str(), &end, 10);
  if (*end == 'x') slices = std::strtol(end + 1, &end, 10);
  if (*end == 'x') local = std::strtol(end + 1, &end, 10);
  if (*end == 'x') twiddles = std::strtol(end + 1, &end, 10);
  const auto pow2 = [](std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (*end || frames < 0 || frames > 8 || (slices != 0 && (!pow2(slices) || slices > 32)) ||
      (local != 0 && (!pow2(local) || local < 32 || local > 1024)) ||
      (twiddles != 0 && (!pow2(twiddles) || twiddles > 32)))
    throw ValueError("gltensor: GLTENSOR_STFT_MEL=\"" + text +
                     "\" is not 0, 1, F, FxS, FxSxL or FxSxLxQ (F frames per workgroup 0..8, S slices 0, 1, 2, ..., "
                     "32, L invocations 0, 32, 64, ..., 1024, Q twiddles 0, 1, 2, 4, ..., 32)");
}

Settings Settings::from_env() {
  Settings s;
  s.device = env("GLTENSOR_DEVICE");
  s.api = env("GLTENSOR_API");
  if (const char* d = std::getenv("GLTENSOR_CACHE_DIR")) {
    if (std::string(d) != "off" && *d) s.cache_dir = d;
  } else if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) {
    s.cache_dir = std::filesystem::path(x) / "gltensor";
  } else if (const std::string h = env("HOME"); !h.empty()) {
    s.cache_dir = std::filesystem::path(h) / ".cache" / "gltensor";
  }
  s.full_barriers = env_bool("GLTENSOR_FULL_BARRIERS", false);
  if (const std::string t = env("GLTENSOR_STAGING"); t == "copy") {
    s.persistent_staging = false;
  } else if (!t.empty() && t != "persistent") {
    throw ValueError("gltensor: GLTENSOR_STAGING=\"" + t + "\" is not one of persistent, copy");
  }
  if (const std::string t = env("GLTENSOR_HOST_IO"); t == "copy") {
    s.direct_host_io = false;
  } else if (!t.empty() && t != "direct") {
    throw ValueError("gltensor: GLTENSOR_HOST_IO=\"" + t + "\" is not one of direct, copy");
  }
  if (const std::string t = env("GLTENSOR_HOST_OUTPUT_BYTES"); !t.empty()) {
    if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 12)
      throw ValueError("gltensor: GLTENSOR_HOST_OUTPUT_BYTES=\"" + t + "\" is not a number of bytes");
    s.host_output_bytes = static_cast<std::size_t>(std::stoull(t));
  }
  if (const std::string t = env("GLTENSOR_READ_PIECES"); !t.empty()) {
    if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 2 || std::stoi(t) < 1 || std::stoi(t) > 64)
      throw ValueError("gltensor: GLTENSOR_READ_PIECES=\"" + t + "\" is not a number of pieces 1..64");
    s.read_pieces = std::stoi(t);
  }
  if (const std::string t = env("GLTENSOR_UPLOAD_PIECES"); !t.empty()) {
    if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 2 || std::stoi(t) < 1 || std::stoi(t) > 64)
      throw ValueError("gltensor: GLTENSOR_UPLOAD_PIECES=\"" + t + "\" is not a number of pieces 1..64");
    s.upload_pieces = std::stoi(t);
  }
  if (const std::string t = env("GLTENSOR_UPLOAD_COPY"); t.empty() || t == "threads-stream") {
    s.upload_copy = UploadCopySetting::threads_stream;
  } else if (t == "threads") {
    s.upload_copy = UploadCopySetting::threads;
  } else if (t == "plain") {
    s.upload_copy = UploadCopySetting::plain;
  } else if (t == "stream") {
    s.upload_copy = UploadCopySetting::stream;
  } else {
    throw ValueError("gltensor: GLTENSOR_UPLOAD_COPY=\"" + t +
                     "\" is not one of plain, stream, threads, threads-stream");
  }
  if (const std::string t = env("GLTENSOR_UPLOAD_DIRECT"); !t.empty()) {
    if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 12)
      throw ValueError("gltensor: GLTENSOR_UPLOAD_DIRECT=\"" + t + "\" is not a number of bytes");
    s.upload_direct_bytes = static_cast<std::int64_t>(std::stoll(t));
  }
  s.cuda_memory = env_bool("GLTENSOR_CUDA_MEMORY", true);
  s.matmul_kernel = parse_matmul_kernel(env("GLTENSOR_MATMUL_KERNEL"));
  if (const std::string t = env("GLTENSOR_MATMUL_SPLIT"); !t.empty()) {
    s.matmul_split = std::atoi(t.c_str());
    if (s.matmul_split < 0 || s.matmul_split > 64 || t.find_first_not_of("0123456789") != std::string::npos)
      throw ValueError("gltensor: GLTENSOR_MATMUL_SPLIT=\"" + t + "\" is not a number of K slices 0..64");
  }
  if (const std::string t = env("GLTENSOR_MATMUL_REG_BLOCK"); !t.empty()) {
    const bool ok = t.size() == 3 && t[1] == 'x' && std::string("1248").find(t[0]) != std::string::npos &&
                    (t[2] == '1' || t[2] == '2');
    if (!ok)
      throw ValueError("gltensor: GLTENSOR_MATMUL_REG_BLOCK=\"" + t +
                       "\" is not ROWSxQUADS with ROWS 1, 2, 4 or 8 and QUADS 1 or 2 (e.g. 4x1)");
    s.matmul_reg_rows = t[0] - '0';
    s.matmul_reg_quads = t[2] - '0';
  }
  s.qlinear_kernel = parse_qlinear_kernel(env("GLTENSOR_QLINEAR_KERNEL"));
  s.qlinear_gemv = parse_qlinear_gemv(env("GLTENSOR_QLINEAR_GEMV"));
  s.conv = parse_conv(env("GLTENSOR_CONV"));
  s.conv_direct = parse_conv_direct(env("GLTENSOR_CONV_DIRECT"));
  s.conv_pointwise_batched = parse<bool>("GLTENSOR_CONV_POINTWISE", env("GLTENSOR_CONV_POINTWISE"),
                                         {{"", true}, {"batched", true}, {"im2col", false}});
  s.conv_winograd =
      parse<int>("GLTENSOR_CONV_WINOGRAD", env("GLTENSOR_CONV_WINOGRAD"), {{"", -1}, {"0", 0}, {"2", 2}, {"4", 4}});
  if (const std::string t = env("GLTENSOR_CONV_WINOGRAD_FUSED"); !t.empty()) {
    std::vector<int> parts(1, 0);
    bool ok = true;
    for (char ch : t) {
      if (ch == 'x')
        parts.push_back(0);
      else if (ch >= '0' && ch <= '9' && parts.back() < 1000)
        parts.back() = parts.back() * 10 + (ch - '0');
      else
        ok = false;
    }
    const auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0 && v <= 64; };
    if (parts.size() == 1) {
      ok = ok && (parts[0] == 0 || parts[0] == 1) && t.size() == 1;
    } else {
      ok = ok && parts.size() <= 4 && pow2(parts[0]) && pow2(parts[1]) && (parts.size() < 3 || pow2(parts[2])) &&
           (parts.size() < 4 || parts[3] <= 1);
    }
    if (!ok)
      throw ValueError("gltensor: GLTENSOR_CONV_WINOGRAD_FUSED=\"" + t +
                       "\" is not 0, 1, OxP, OxPxC or OxPxCxF (powers of 2 up to 64, F 0 or 1, e.g. 16x8x8x1)");
    s.conv_winograd_fused = parts.size() == 1 ? parts[0] : 1;
    if (parts.size() > 1) s.conv_winograd_block_o = parts[0], s.conv_winograd_block_p = parts[1];
    if (parts.size() > 2) s.conv_winograd_block_c = parts[2];
    if (parts.size() > 3) s.conv_winograd_block_f = parts[3];
  }
  s.conv_winograd_split = parse<int>("GLTENSOR_CONV_WINOGRAD_SPLIT", env("GLTENSOR_CONV_WINOGRAD_SPLIT"),
                                     {{"", 0}, {"1", 1}, {"2", 2}, {"4", 4}});
  s.rnn = parse_rnn(env("GLTENSOR_RNN"));
  if (const std::string t = env("GLTENSOR_RNN_REGS"); !t.empty()) {
    std::vector<std::string> parts(1);
    for (char ch : t) {
      if (ch == ',')
        parts.emplace_back();
      else
        parts.back().push_back(ch);
    }
    bool ok = parts.size() == 2 || parts.size() == 3;
    for (const std::string& n : parts)
      ok = ok && !n.empty() && n.size() <= 3 && n.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) throw ValueError("gltensor: GLTENSOR_RNN_REGS=\"" + t + "\" is not KS,RR or KS,RR,NG (numbers)");
    s.rnn_regs_parts = std::atoi(parts[0].c_str()), s.rnn_regs_cols = std::atoi(parts[1].c_str());
    if (parts.size() == 3) s.rnn_regs_grid = std::atoi(parts[2].c_str());
  }
  s.rnn_grid_stall = env_bool("GLTENSOR_RNN_GRID_STALL", false);
  s.elementwise_quads = parse_elementwise_quads(env("GLTENSOR_ELEMENTWISE_QUADS"));
  s.imatmul = parse_imatmul(env("GLTENSOR_IMATMUL"));
  s.iconv_gemm = parse_iconv_gemm(env("GLTENSOR_ICONV_GEMM"));
  if (const int r = std::atoi(env("GLTENSOR_IMATMUL_RB").c_str()); r == 1 || r == 2) s.imatmul_rb = r;
  if (const int b = std::atoi(env("GLTENSOR_IMATMUL_BLOCKS").c_str()); b == 1 || b == 2) s.imatmul_blocks = b;
  s.imatmul_slices = std::atoi(env("GLTENSOR_IMATMUL_SLICES").c_str()) == 2 ? 2 : 0;
  s.qconv_requant = env_bool("GLTENSOR_QCONV_REQUANT", true);
  parse_fused_mlp(env("GLTENSOR_FUSED_MLP"), s.fused_mlp, s.fused_mlp_rows, s.fused_mlp_split);
  parse_stft_mel(env("GLTENSOR_STFT_MEL"), s.stft_mel, s.stft_mel_frames, s.stft_mel_slices, s.stft_mel_local,
                 s.stft_mel_twiddles);
  s.fuse_layernorm = env_bool("GLTENSOR_FUSE_LAYERNORM", true);
  s.fuse_attention = env_bool("GLTENSOR_FUSE_ATTENTION", true);
  s.fuse_elementwise = env_bool("GLTENSOR_FUSE_ELEMENTWISE", true);
  s.fuse_qdq_output = env_bool("GLTENSOR_FUSE_QDQ_OUTPUT", true);
  s.fuse_qdq_input = env_bool("GLTENSOR_FUSE_QDQ_INPUT", true);
  s.imatmul_swizzle = env_flag("GLTENSOR_IMATMUL_SWIZZLE", -1);
  if (const std::string t = env("GLTENSOR_POOL_MIN_CLASS"); !t.empty()) {
    if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 12)
      throw ValueError("gltensor: GLTENSOR_POOL_MIN_CLASS=\"" + t + "\" is not a number of bytes");
    s.pool_min_class = static_cast<std::size_t>(std::stoull(t));
  }
  if (const int t = std::atoi(env("GLTENSOR_IMATMUL_TILE").c_str()); t == 32 || t == 64 || t == 128) s.imatmul_tile = t;
  if (const int t = std::atoi(env("GLTENSOR_IMATMUL_BK").c_str()); t == 8 || t == 16) s.imatmul_bk = t;
  s.iconv_groups = std::max<std::int64_t>(0, std::atoll(env("GLTENSOR_ICONV_GROUPS").c_str()));
  s.tune = env_flag("GLTENSOR_TUNE", -1);
  s.attention_composite = env("GLTENSOR_ATTENTION") == "composite";
  s.attention_rows = env("GLTENSOR_ATTENTION") == "rows";
  s.attention_uniform_dims = env_flag("GLTENSOR_ATTENTION_UNIFORM_DIMS", -1);
  // (16 as well: attention_plan's narrow_attention_tiles stays at or below the cap)
  const int attention_bq = std::atoi(env("GLTENSOR_ATTENTION_BQ").c_str());
  s.attention_bq = attention_bq == 32 || attention_bq == 16 ? attention_bq : 0;
  s.attention_keys = std::atoi(env("GLTENSOR_ATTENTION_KEYS").c_str()) == 32 ? 32 : 0;
  {
    const int tile = std::atoi(env("GLTENSOR_ATTENTION_TILE").c_str());
    s.attention_tile = tile == 4 || tile == 8 || tile == 16 ? tile : 0;
  }
  s.attention_lanes = env_flag("GLTENSOR_ATTENTION_LANES", -1);
  s.attention_lane_width = parse<int>("GLTENSOR_ATTENTION_LANE_WIDTH", env("GLTENSOR_ATTENTION_LANE_WIDTH"),
                                      {{"", 0}, {"0", 0}, {"4", 4}, {"8", 8}, {"16", 16}, {"32", 32}});
  s.attention_lane_keys = parse<int>("GLTENSOR_ATTENTION_LANE_KEYS", env("GLTENSOR_ATTENTION_LANE_KEYS"),
                                     {{"", 0}, {"0", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}});
  s.attention_block = env_flag("GLTENSOR_ATTENTION_BLOCK", -1);
  s.attention_block_rows = parse<int>("GLTENSOR_ATTENTION_BLOCK_ROWS", env("GLTENSOR_ATTENTION_BLOCK_ROWS"),
                                      {{"", 0}, {"0", 0}, {"4", 4}, {"8", 8}, {"16", 16}, {"32", 32}});
  s.attention_block_local = parse<int>("GLTENSOR_ATTENTION_BLOCK_LOCAL", env("GLTENSOR_ATTENTION_BLOCK_LOCAL"),
                                       {{"", 0}, {"0", 0}, {"64", 64}, {"128", 128}, {"256", 256}, {"512", 512}});
  s.attention_split = parse<int>("GLTENSOR_ATTENTION_SPLIT", env("GLTENSOR_ATTENTION_SPLIT"),
                                 {{"", -1}, {"0", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}});
  s.attention_combine_dispatch = parse<int>("GLTENSOR_ATTENTION_COMBINE", env("GLTENSOR_ATTENTION_COMBINE"),
                                            {{"", 0}, {"fused", 0}, {"dispatch", 1}}) != 0;
  s.batch_norm_iters = parse<int>("GLTENSOR_BATCH_NORM_ITERS", env("GLTENSOR_BATCH_NORM_ITERS"),
                                  {{"", 0}, {"0", 0}, {"8", 8}, {"16", 16}, {"32", 32}, {"64", 64}});
  s.subgroups = env_bool("GLTENSOR_SUBGROUPS", true);
  s.dump_source = env("GLTENSOR_DUMP_SOURCE");
  s.glsl_dir = env("GLTENSOR_GLSL_DIR");
  s.precision = parse_precision(env("GLTENSOR_PRECISION"));
  s.f16_matmul = parse_f16_matmul(env("GLTENSOR_F16_MATMUL"));
  s.f16_ext = parse_f16_ext(env("GLTENSOR_F16_EXT"));
  s.profile = env_bool("GLTENSOR_PROFILE", false);
  s.gl_debug = env_bool("GLTENSOR_GL_DEBUG", false);
  s.model_trace = env_bool("GLTENSOR_MODEL_TRACE", false);
  s.check_loops = env_bool("GLTENSOR_CHECK_LOOPS", false);
  return s;
}

Settings& settings() {
  static Settings s = Settings::from_env();
  return s;
}

}  // namespace gltensor::detail
