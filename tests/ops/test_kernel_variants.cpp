// Every enumerated variant of the kernels converted to the Variant contract
// (runtime/variant.hpp) compiles offline with glslangValidator (Debian: glslang-tools), as GLSL ES
// 3.10 and as desktop GLSL 4.30, and every define a variant emits is tested (flags) or used
// (values, identifiers) by its kernel's source. No GPU: the sources are assembled as the
// ProgramCache assembles them. One glslang adjustment: common.glsl's F_NAN / F_INF constants
// become macros (glslang does not fold uintBitsToFloat in a const initializer; drivers do), as in
// scripts/check_f16_glsl.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gltensor/device.hpp"
#include "gltensor/errors.hpp"
#include "interop/frame_stage.hpp"
#include "nn/attention_variants.hpp"
#include "nn/conv_plan.hpp"
#include "nn/fused_mlp.hpp"
#include "nn/iconv_direct_plan.hpp"
#include "nn/norm_variants.hpp"
#include "nn/pool_plan.hpp"
#include "nn/quant_int_variants.hpp"
#include "nn/rnn.hpp"
#include "nn/squeeze_excite.hpp"
#include "nn/stft_mel.hpp"
#include "nn/train_variants.hpp"
#include "nn/transformer_variants.hpp"
#include "nn/warp_variant.hpp"
#include "ops/data_variants.hpp"
#include "ops/elementwise.hpp"
#include "ops/matmul_variant.hpp"
#include "ops/quant_variants.hpp"
#include "ops/reduce_variants.hpp"
#include "runtime/program_cache.hpp"

using namespace gltensor;
using namespace gltensor::detail;

namespace {

std::string glslang_source(const std::string& src) {
  std::string out;
  std::size_t pos = 0;
  while (pos < src.size()) {
    std::size_t end = src.find('\n', pos);
    if (end == std::string::npos) end = src.size();
    const std::string line = src.substr(pos, end - pos);
    pos = end + 1;
    const std::string prefix = "const float F_";
    if (line.rfind(prefix, 0) == 0 && !line.empty() && line.back() == ';') {
      // const float F_NAN = uintBitsToFloat(...);  ->  #define F_NAN uintBitsToFloat(...)
      const std::size_t eq = line.find(" = ");
      out += "#define " + line.substr(12, eq - 12) + " " + line.substr(eq + 3, line.size() - eq - 4) + "\n";
    } else {
      out += line + "\n";
    }
  }
  return out;
}

struct Compiled {
  int rc = 0;
  std::string log;
};

// Writes every source to its own file and compiles them in one glslangValidator run.
Compiled compile_all(const std::string& name, const std::vector<std::pair<std::string, std::string>>& sources) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gltensor-variants-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ostringstream cmd;
  cmd << GLTENSOR_GLSLANG;
  for (const auto& [file, source] : sources) {
    const std::filesystem::path path = dir / file;
    std::ofstream(path) << source;
    cmd << ' ' << path.string();
  }
  cmd << " 2>&1";
  Compiled c;
  if (FILE* p = popen(cmd.str().c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) c.log.append(buf, n);
    c.rc = pclose(p);
  } else {
    c.rc = -1;
  }
  if (c.rc == 0) std::filesystem::remove_all(dir);
  return c;
}

// A test's families, GLSL ES 3.10 and (unless `es_only`) GLSL 4.30: every variant's defines checked
// against its kernel as they are added, and every source compiled at the end of the test in one
// glslangValidator run per language (the log names a failing variant's file, <family>-<index>.comp).
// suite40b (2026-11-29, bench/RESULTS.md): a run costs about 0.06 CPU-s before its first file (glslang's
// built-in symbol tables); one per family and language made 136 runs, one per test and language 40 (the
// same 5329 sources): 19.1 / 18.9 -> 13.8 / 15.9 CPU-s cold on the 2-core CI machine.
class Variants {
 public:
  explicit Variants(std::string test) : test_(std::move(test)) {}
  Variants(const Variants&) = delete;
  Variants& operator=(const Variants&) = delete;
  ~Variants() {
    for (bool desktop : {false, true}) {
      const auto& sources = sources_[desktop];
      if (sources.empty()) continue;
      const Compiled c = compile_all(test_ + (desktop ? "-gl" : "-es"), sources);
      EXPECT_EQ(c.rc, 0) << test_ << (desktop ? " (GLSL 4.30)" : " (GLSL ES 3.10)") << ": " << sources.size()
                         << " variants\n"
                         << c.log;
    }
  }

  template <typename V>
  void add(const std::string& family, const char* file, const std::vector<V>& space, std::uint32_t local,
           bool es_only = false) {
    // The GPU pack runs every test_* on a machine without glslang-tools: nothing to compile with.
    if (!std::filesystem::exists(GLTENSOR_GLSLANG)) GTEST_SKIP() << GLTENSOR_GLSLANG << " not found";
    ASSERT_FALSE(space.empty()) << family;
    for (bool desktop : {false, true}) {
      if (desktop && es_only) continue;
      Capabilities caps;
      caps.desktop = desktop;
      caps.gl_major = desktop ? 4 : 3;
      caps.gl_minor = 1;
      const std::string bare = ProgramCache::full_source(caps, file, "", local, 1, 1);
      std::size_t i = 0;
      for (const V& v : space) {
        const Defines d = v.defines();
        EXPECT_NO_THROW(d.check(file, bare)) << family << " variant " << d.key();
        sources_[desktop].emplace_back(family + "-" + std::to_string(i++) + ".comp",
                                       glslang_source(ProgramCache::full_source(caps, file, d.header(), local, 1, 1)));
      }
    }
  }

 private:
  std::string test_;
  std::vector<std::pair<std::string, std::string>> sources_[2];  // [desktop]: file name, source
};

}  // namespace

// One file per family: unary, binary, ternary, fused (generated expressions). The f16 forms (F16V) as GLSL ES only:
// desktop drivers get them through NV_gpu_shader5 (DeviceImpl::f16_extension_glsl), which glslang does not know, and
// glslang's EXT float16 types lack unpackFloat2x16 in desktop GLSL.
TEST(KernelVariants, Elementwise) {
  Variants batch("Elementwise");
  for (ElementwiseKernel k :
       {ElementwiseKernel::unary, ElementwiseKernel::binary, ElementwiseKernel::ternary, ElementwiseKernel::fused}) {
    std::vector<ElementwiseVariant> f32, f16;
    for (const ElementwiseVariant& v : ElementwiseVariant::space())
      if (v.kernel == k) (v.f16_fn.empty() ? f32 : f16).push_back(v);
    batch.add(kernel_file(k), kernel_file(k), f32, 256);
    if (!f16.empty()) batch.add(std::string(kernel_file(k)) + "-f16", kernel_file(k), f16, 256, true);
  }
}

TEST(KernelVariants, Reductions) {
  Variants batch("Reductions");
  batch.add("reduce", ReduceVariant::kFile, ReduceVariant::space(), 256);
  batch.add("reduce_rows", ReduceRowsVariant::kFile, ReduceRowsVariant::space(), 256);
  batch.add("softmax", SoftmaxVariant::kFile, SoftmaxVariant::space(), 256);
  batch.add("scan", ScanVariant::kFile, ScanVariant::space(), 256);
}

TEST(KernelVariants, SortIndexRandom) {
  Variants batch("SortIndexRandom");
  batch.add("sort", SortVariant::kFile, SortVariant::space(), 256);
  batch.add("index", IndexVariant::kFile, IndexVariant::space(), 256);
  batch.add("random", RandomVariant::kFile, RandomVariant::space(), 256);
}

TEST(KernelVariants, Convolutions) {
  Variants batch("Convolutions");
  batch.add("conv_direct", ConvDirectVariant::kFile, ConvDirectVariant::space(), 256);
  batch.add("conv", ConvVariant::kFile, ConvVariant::space(), 256);
  batch.add("conv_wgrad", ConvWgradVariant::kFile, ConvWgradVariant::space(), kConvWgradLocal);
  // each variant at its own workgroup size (the fused stage's T x its blocking's invocations)
  std::map<std::uint32_t, std::vector<ConvWinogradVariant>> winograd;
  for (const ConvWinogradVariant& v : ConvWinogradVariant::space()) winograd[v.local()].push_back(v);
  for (const auto& [local, vs] : winograd)
    batch.add("conv_winograd-" + std::to_string(local), ConvWinogradVariant::kFile, vs, local);
}

// Weight-only quantization (quant.comp, qlinear.comp) and the model runtime's integer kernels
// (quant_int.comp; imatmul.comp with the local size of each tiling: its staging divides by it).
TEST(KernelVariants, Quantization) {
  Variants batch("Quantization");
  batch.add("quant", QuantVariant::kFile, QuantVariant::space(), 64);
  std::vector<QLinearVariant> gemv, gemm;
  for (const QLinearVariant& v : QLinearVariant::space()) (v.gemv ? gemv : gemm).push_back(v);
  batch.add("qlinear-gemv", QLinearVariant::kFile, gemv, 64);
  batch.add("qlinear-gemm", QLinearVariant::kFile, gemm, 256);
  batch.add("quant_int", QuantIntVariant::kFile, QuantIntVariant::space(), 64);
  batch.add("iconv_direct", IConvDirectVariant::kFile, IConvDirectVariant::space(), 64);
  // grouped by their local size: (64 / 4 RB) (BN / 4 CB) invocations per K slice
  std::map<std::uint32_t, std::vector<IMatmulVariant>> groups;
  for (const IMatmulVariant& v : IMatmulVariant::space()) {
    const int rb = v.rb ? v.rb : v.blocks;
    groups[static_cast<std::uint32_t>(64 / (4 * rb) * (v.bn / (4 * v.blocks)) * v.slices)].push_back(v);
  }
  for (const auto& [local, group] : groups)
    batch.add("imatmul-" + std::to_string(local), IMatmulVariant::kFile, group, local);
  batch.add("icol", IColVariant::kFile, IColVariant::space(), 64);
  // the QDQ conv on the warp kernel: BM BN / (8 TN) invocations (the chunks' sum, IW_SUM: 256)
  std::map<std::uint32_t, std::vector<IWarpVariant>> warp;
  for (const IWarpVariant& v : IWarpVariant::space())
    warp[static_cast<std::uint32_t>(v.sum ? 256 : v.bm * 128 / (8 * v.tn))].push_back(v);
  for (const auto& [local, group] : warp)
    batch.add("imatmul_warp-" + std::to_string(local), IWarpVariant::kFile, group, local);
}

TEST(KernelVariants, Norms) {
  Variants batch("Norms");
  batch.add("norm", NormVariant::kFile, NormVariant::space(), 256);
  batch.add("rms_norm", RmsNormVariant::kFile, RmsNormVariant::space(), 256);
  batch.add("batch_norm", BatchNormVariant::kFile, BatchNormVariant::space(), 256);
}

TEST(KernelVariants, PoolingAndTraining) {
  Variants batch("PoolingAndTraining");
  batch.add("pool", PoolVariant::kFile, PoolVariant::space(), 256);
  batch.add("pool_axis", PoolAxisVariant::kFile, PoolAxisVariant::space(), 256);
  batch.add("cross_entropy", CrossEntropyVariant::kFile, CrossEntropyVariant::space(), 256);
  batch.add("optim", OptimVariant::kFile, OptimVariant::space(), 256);
}

TEST(KernelVariants, Transformer) {
  Variants batch("Transformer");
  batch.add("rope", RopeVariant::kFile, RopeVariant::space(), 64);
  batch.add("glu", GluVariant::kFile, GluVariant::space(), 64);
}

TEST(KernelVariants, Image) {
  Variants batch("Image");
  batch.add("warp", WarpVariant::kFile, WarpVariant::space(), 64);
}

TEST(KernelVariants, Attention) {
  Variants batch("Attention");
  batch.add("attention", AttentionVariant::kFile, AttentionVariant::space(), 64);
  batch.add("attention_lanes", AttentionLanesVariant::kFile, AttentionLanesVariant::space(), 64);
  batch.add("attention_block", AttentionBlockVariant::kFile, AttentionBlockVariant::space(), 64);
  batch.add("attention_flash", FlashAttentionVariant::kFile, FlashAttentionVariant::space(), 64);
  batch.add("attention_tiled", TiledAttentionVariant::kFile, TiledAttentionVariant::space(), 256);
}

TEST(KernelVariants, Recurrent) {
  Variants batch("Recurrent");
  batch.add("rnn", RnnVariant::kFile, RnnVariant::space(), 64);
}
TEST(KernelVariants, RecurrentSequence) {
  Variants batch("RecurrentSequence");
  batch.add("rnn_seq", RnnSeqVariant::kFile, RnnSeqVariant::space(), 128);
}
TEST(KernelVariants, RecurrentSequenceRegs) {
  Variants batch("RecurrentSequenceRegs");
  batch.add("rnn_seq_regs", RnnSeqVariant::kRegsFile, RnnSeqVariant::regs_space(), 256);
}
TEST(KernelVariants, RecurrentStep) {
  Variants batch("RecurrentStep");
  batch.add("rnn_step", RnnStepVariant::kFile, RnnStepVariant::space(), 256);
}
TEST(KernelVariants, FusedMlp) {
  Variants batch("FusedMlp");
  batch.add("fused_mlp", FusedMlpVariant::kFile, FusedMlpVariant::space(), 256);
}
TEST(KernelVariants, SqueezeExcite) {
  Variants batch("SqueezeExcite");
  batch.add("squeeze_excite", SqueezeExciteVariant::kFile, SqueezeExciteVariant::space(), 256);
}
TEST(KernelVariants, StftMel) {
  Variants batch("StftMel");
  batch.add("stft_mel", StftMelVariant::kFile, StftMelVariant::space(), 256);
}

TEST(KernelVariants, Decoding) {
  Variants batch("Decoding");
  batch.add("kv_cache", KvCacheVariant::kFile, KvCacheVariant::space(), 64);
  batch.add("kv_attention", KvAttentionVariant::kFile, KvAttentionVariant::space(), 64);
  batch.add("sample", SampleVariant::kFile, SampleVariant::space(), 256);
}

// One family per kernel file (matmul_vec4/tile64/tile128/reg/warp.comp over matmul.glsl); the f16
// math forms as GLSL ES only (as the elementwise F16V forms).
TEST(KernelVariants, Matmul) {
  Variants batch("Matmul");
  std::map<std::string, std::vector<MatmulVariant>> f32, f16;
  for (const MatmulVariant& v : MatmulVariant::space()) (v.f16_ext.empty() ? f32 : f16)[v.file()].push_back(v);
  ASSERT_EQ(f32.size(), 5u);
  for (const auto& [file, space] : f32) batch.add(file, file.c_str(), space, 256);
  for (const auto& [file, space] : f16) batch.add(file + "-f16", file.c_str(), space, 256, true);
  batch.add("gemv", GemvVariant::kFile, GemvVariant::space(), 128);
  batch.add("matmul_sum", MatmulSumVariant::kFile, MatmulSumVariant::space(), 256);
}

// The check itself: a misspelt flag or value throws, naming the kernel and the define.
TEST(KernelVariants, MisspeltDefinesThrow) {
  Capabilities caps;
  caps.gl_major = 3, caps.gl_minor = 1;
  const std::string bare = ProgramCache::full_source(caps, "softmax.comp", "", 256, 1, 1);
  SoftmaxVariant v;
  EXPECT_NO_THROW(v.defines().check("softmax.comp", bare));
  Defines bad = v.defines();
  bad.flag("ROW_QUAD");
  try {
    bad.check("softmax.comp", bare);
    ADD_FAILURE() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("softmax.comp: #define ROW_QUAD"), std::string::npos) << e.what();
  }
  Defines bad_value = v.defines();
  bad_value.value("NQQ", 2);
  EXPECT_THROW(bad_value.check("softmax.comp", bare), DeviceError);
  // Equal variants, equal keys; any field changes the key.
  SoftmaxVariant w = v;
  EXPECT_EQ(v.defines().key(), w.defines().key());
  w.log = true;
  EXPECT_NE(v.defines().key(), w.defines().key());
}

// interop's frame filter stage (glsl/interop/frame_filter.comp): texture or intermediate in,
// image or intermediate out, weights and bias in f32 / f16 uniform blocks, shared memory or SSBOs,
// fused steps.
TEST(KernelVariants, InteropFrameFilter) {
  Variants batch("InteropFrameFilter");
  batch.add("frame_filter", FrameStageVariant::kFile, FrameStageVariant::space(), 256);
  batch.add("texture", TextureVariant::kFile, TextureVariant::space(), 256);
}
