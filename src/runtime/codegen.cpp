#include "runtime/codegen.hpp"

namespace gltensor::detail {

std::string operand_glsl(int i, DType d, CT ct, bool write) {
  const std::string n = std::to_string(i);
  const std::string t = "t" + n, C = "CT" + n;
  std::string s;
  s += "layout(std430, binding = " + n + ") " + (write ? "" : "readonly ") + "buffer Buf" + n + " { uint " + t +
       "[]; };\n";
  s += "#define " + C + " " + ct_glsl(ct) + "\n";
  s += "#define PER_WORD" + n + " " + std::to_string(per_word(d)) + "u\n";
  // load: element e of the buffer -> compute type
  std::string raw;
  switch (d) {
    case DType::f32:
      raw = "uintBitsToFloat(" + t + "[e])";
      break;
    case DType::i32:
      raw = "int(" + t + "[e])";
      break;
    case DType::f16:
      raw = "f16_bits_to_f32(" + t + "[e >> 1u] >> ((e & 1u) * 16u))";
      break;
    case DType::bf16:
      raw = "bf16_bits_to_f32(" + t + "[e >> 1u] >> ((e & 1u) * 16u))";
      break;
    case DType::u8:
    case DType::bool_:
      raw = "int((" + t + "[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu)";
      break;
    case DType::i8:
      raw = "bitfieldExtract(int(" + t + "[e >> 2u]), int((e & 3u) * 8u), 8)";
      break;
  }
  s += C + " load" + n + "(uint e) { return " + C + "(" + raw + "); }\n";
  if (!write) return s;
  // bits: compute type -> element bits (low bits of a uint)
  std::string bits;
  switch (d) {
    case DType::f32:
      bits = "floatBitsToUint(float(v))";
      break;
    case DType::i32:
      bits = "uint(int(v))";
      break;
    case DType::f16:
      bits = "f32_to_f16_bits(float(v))";
      break;
    case DType::bf16:
      bits = "f32_to_bf16_bits(float(v))";
      break;
    case DType::u8:
    case DType::i8:
      bits = "(uint(int(v)) & 0xffu)";
      break;
    case DType::bool_:
      bits = "(v != " + C + "(0) ? 1u : 0u)";
      break;
  }
  s += "uint bits" + n + "(" + C + " v) { return " + bits + "; }\n";
  if (itemsize(d) == 4) {
    s += "void store" + n + "(uint e, " + C + " v) { " + t + "[e] = bits" + n + "(v); }\n";
  } else {
    const std::string w = itemsize(d) == 2 ? "1u" : "2u", m = itemsize(d) == 2 ? "1u" : "3u",
                      b = itemsize(d) == 2 ? "16u" : "8u", mask = itemsize(d) == 2 ? "0xffffu" : "0xffu";
    s += "void store" + n + "(uint e, " + C + " v) {\n  uint w = e >> " + w + "; uint sh = (e & " + m + ") * " + b +
         ";\n  atomicAnd(" + t + "[w], ~(" + mask + " << sh));\n  atomicOr(" + t + "[w], bits" + n + "(v) << sh);\n}\n";
  }
  return s;
}

std::string quad_glsl(const char* name, int index, DType d) {
  const std::string n = name, i = std::to_string(index);
  if (d == DType::f32)
    return "layout(std430, binding = " + i + ") readonly restrict buffer Quad" + n + " { vec4 q" + n +
           "[]; };\nvec4 quad" + n + "(uint i) { return q" + n + "[i]; }\n";
  const std::string unpack = d == DType::f16 ? "vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y))"
                                             : "vec4(uintBitsToFloat(w.x << 16), uintBitsToFloat(w.x & 0xffff0000u), "
                                               "uintBitsToFloat(w.y << 16), uintBitsToFloat(w.y & 0xffff0000u))";
  return "layout(std430, binding = " + i + ") readonly restrict buffer Quad" + n + " { uvec2 q" + n +
         "[]; };\nvec4 quad" + n + "(uint i) { uvec2 w = q" + n + "[i]; return " + unpack + "; }\n";
}

std::string operand_glsl_vec4(int i, DType d, CT ct, bool write) {
  const std::string n = std::to_string(i), t = "t" + n + "4", C = "CT" + n;
  std::string s = "layout(std430, binding = " + n + ") " + (write ? "" : "readonly ") + "buffer Buf" + n + " { uvec4 " +
                  t + "[]; };\n#define " + C + " " + ct_glsl(ct) + "\n#define PER_WORD" + n + " 1u\n";
  const auto value = [&](const std::string& w) {
    return C + "(" + (d == DType::f32 ? "uintBitsToFloat(" + w + ")" : "int(" + w + ")") + ")";
  };
  if (write) {
    s += C + " load" + n + "(uint e) { return " + value(t + "[e >> 2u][e & 3u]") + "; }\n";
    s += "uint bits" + n + "(" + C + " v) { return " +
         (d == DType::f32 ? "floatBitsToUint(float(v))" : "uint(int(v))") + "; }\n";
  } else {
    // One 128-bit load per quad into a register, then lanes from the register.
    s += "uvec4 q" + n + ";\nvoid fetch" + n + "(uint quad) { q" + n + " = " + t + "[quad]; }\n";
    s += C + " load" + n + "(uint lane) { return " + value("q" + n + "[lane]") + "; }\n";
  }
  return s;
}

std::string subgroup_glsl(SubgroupFeature feature) {
  return std::string("#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_") +
         (feature == SubgroupFeature::arithmetic ? "arithmetic" : "shuffle") + " : require\n#define SUBGROUP 1\n";
}

std::string atomic_float_glsl() { return "#extension GL_NV_shader_atomic_float : require\n#define ATOMIC_FLOAT 1\n"; }

}  // namespace gltensor::detail
