// The Variant contract (internal): a kernel's compile-time choices as typed fields, turned into
// its #defines and its program key in one place.
//
// Each converted kernel has a Variant struct beside its Params struct (uniforms):
//
//   struct SoftmaxVariant {                       // src/ops/softmax_plan.hpp
//     static constexpr const char* kFile = "softmax.comp";
//     std::int64_t kd = 1;  bool log = false;  ...
//     Defines defines() const;                    // the only place that spells its defines
//     static std::vector<SoftmaxVariant> space(); // every value of every field, in combinations
//   };                                            // that compile (tests/runtime/test_kernel_variants)
//   launch.program(v.kFile, v.defines(), {v.local});
//
// Defines records what a variant asks for (flags, values, identifiers, operand declarations,
// extension text); its key() encodes all of it, so the program is found by key and the GLSL
// header (operand declarations included) is rendered only when the key is new. A define name the
// kernel's source never tests (#if/#ifdef/#ifndef/#elif/defined()) or, for a value, never uses
// throws (check_defines: on every new program in debug builds, and for every enumerated variant
// in ctest), as a misspelt uniform does.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/codegen.hpp"

namespace gltensor::detail {

class Defines {
 public:
  /// `#define NAME 1` where `on` (a name the source tests with #if/#ifdef/defined).
  Defines& flag(const char* name, bool on = true);
  /// `#define NAME v` (signed) or `#define NAME vu` (unsigned).
  Defines& value(const char* name, std::int64_t v);
  Defines& uvalue(const char* name, std::uint64_t v);
  /// `#define NAME ident`: a variant chosen by name (`#define RED red_sum`), never by a code.
  /// Identifiers and text are referenced, not copied: a Defines lives no longer than the Variant
  /// (or literal) it was made from (`launch.program(v.kFile, v.defines(), ...)`).
  Defines& ident(const char* name, const std::string& ident);
  Defines& ident(const char* name, const char* ident);
  /// A temporary string would dangle (only its pointer is kept): refused at compile time.
  Defines& ident(const char* name, std::string&& ident) = delete;
  /// Operand `index`'s declarations (codegen.hpp: operand_glsl, operand_glsl_vec4).
  Defines& operand(int index, DType dtype, CT ct, bool write);
  Defines& operand_vec4(int index, DType dtype, CT ct, bool write);
  /// Operand `index` read as quads, quadNAME(i) (codegen.hpp: quad_glsl; `name` a literal).
  Defines& quads(const char* name, int index, DType dtype);
  /// An f32 operand at `index` read as the array `vec4 NAME[]` (no functions; `name` a literal).
  Defines& quad_array(const char* name, int index);
  /// The subgroup extensions and `#define SUBGROUP 1` (codegen.hpp: subgroup_glsl).
  Defines& subgroup(SubgroupFeature feature);
  /// Text that depends on the device (the f16 extension lines): a hash of it in the key.
  Defines& text(const std::string& glsl);
  /// `#define <signature> <body(arg)>`: a macro generated from an int (e.g. one statement per
  /// operand), rendered only with the header; `signature` and `arg` in the key.
  Defines& macro(const char* signature, std::string (*body)(int), int arg);
  /// `#define <signature> <body>` with a body the Variant holds (e.g. an activation call with
  /// a model's parameters); both in the key.
  Defines& macro(const char* signature, const std::string& body);

  /// Encodes every call above, in order: equal keys render equal headers.
  const std::string& key() const { return key_; }
  /// Appends the kernel file and local size to the key (Launch::program's program key).
  const std::string& finish_key(const char* file, std::uint32_t lx, std::uint32_t ly, std::uint32_t lz);
  /// The GLSL header: the defines and operand declarations in the order they were added.
  std::string header() const;

  /// Throws DeviceError ("internal error") naming `kernel` and the define if a flag is tested
  /// nowhere in `source` (#if/#ifdef/#ifndef/#elif/defined()) or a value or identifier define
  /// appears nowhere in it (as a whole word).
  void check(const std::string& kernel, const std::string& source) const;

 private:
  // Kept inline (no allocation per launch: the key is made for every dispatch, the header only
  // for new programs).
  enum class Kind {
    flag,
    value,
    uvalue,
    ident,
    operand,
    operand_vec4,
    quads,
    quad_array,
    subgroup,
    text,
    macro,
    macro_text
  };
  struct Entry {  // trivial: the array costs nothing to make; add() sets every field
    Kind kind;
    const char* name;  // define name or macro signature (a literal)
    std::int64_t v;    // value, unsigned value, operand index, subgroup feature, macro arg
    const char* arg;   // identifier or text (the Variant's)
    DType dtype;
    CT ct;
    bool write;
    std::string (*body)(int);
  };
  Entry& add(Kind kind, const char* name);
  void key_int(std::int64_t v);
  static constexpr std::size_t kMaxEntries = 32;
  std::array<Entry, kMaxEntries> entries_;
  std::size_t n_ = 0;
  std::string key_;
};

/// The names a GLSL source tests in preprocessor conditions (#if, #ifdef, #ifndef, #elif,
/// defined(NAME)) and every identifier it uses, comments removed.
struct SourceNames {
  std::vector<std::string> tested, words;
};
SourceNames source_names(const std::string& source);

}  // namespace gltensor::detail
