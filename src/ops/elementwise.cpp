#include "ops/elementwise.hpp"

#include <algorithm>

namespace gltensor::detail {

void launch_elementwise(const Elementwise& e, const Tensor& out, std::vector<Tensor> inputs) {
  DeviceImpl& dev = dev_of(out);
  Enter guard(dev, e.op);
  const Shape& shape = out.shape();
  const std::int64_t n = out.numel();
  for (std::int64_t d = 0; d < out.dim(); ++d)
    if (out.strides()[d] == 0 && shape[d] > 1)
      throw ValueError(std::string("gltensor::") + e.op + ": the output " + out.repr() +
                       " has more than one element referring to the same memory location (expanded view)");
  for (auto& in : inputs) {
    if (in.shape() != shape) in = in.expand(shape);
    if (in.shares_storage(out) && may_overlap(in, out) && !same_view(in, out)) in = in.clone();
  }
  if (n == 0) return;

  // Collapse dims: drop size-1 dims, merge neighbours that are contiguous in every operand.
  std::vector<const Tensor*> ops{&out};
  for (auto& in : inputs) ops.push_back(&in);
  const int nops = static_cast<int>(ops.size());
  Shape sizes = shape;
  std::vector<Shape> strides;
  for (int j = 0; j < nops; ++j) strides.push_back(ops[j]->strides());
  merge_dims(sizes, strides, 1);
  const int ndim = static_cast<int>(sizes.size());
  bool contig = ndim == 1;
  for (int j = 0; j < nops && contig; ++j) contig = strides[j][0] == 1 || sizes[0] == 1;

  const DType od = out.dtype();
  const int pw = per_word(od);
  const bool words = pw > 1 && out.is_contiguous();
  bool vec4 = contig && n % 4 == 0 && itemsize(od) == 4;
  for (int j = 0; j < nops && vec4; ++j) vec4 = itemsize(ops[j]->dtype()) == 4 && ops[j]->offset() % 4 == 0;

  // Short key first: the GLSL header is only built when the program is not cached yet.
  std::string key = e.kernel;
  key += '|';
  key += e.fn;
  key +=
      '|' + std::to_string(nops) + std::to_string(ndim) + (contig ? "c" : "") + (words ? "w" : "") + (vec4 ? "v" : "");
  key += e.scalar ? (e.scalar_first ? "A" : "B") : "";
  key += e.in_ct == CT::i32 ? "i" : "f";
  key += static_cast<char>('0' + static_cast<int>(od));
  for (int j = 1; j < nops; ++j) key += static_cast<char>('0' + static_cast<int>(ops[j]->dtype()));
  const Program& p = dev.programs.get_keyed(
      key, e.kernel,
      [&] {
        std::string h = "#define NOPS " + std::to_string(nops) + "\n#define NDIM " + std::to_string(ndim) +
                        "\n#define OP " + e.fn + "\n";
        if (contig) h += "#define CONTIG 1\n";
        if (words) h += "#define OUT_WORDS 1\n";
        if (vec4) h += "#define VEC4 1\n";
        if (e.scalar) {
          h += e.scalar_first ? "#define SCALAR_A 1\n" : "#define SCALAR_B 1\n";
          if (e.in_ct == CT::i32) h += "#define SCALAR_INT 1\n";
        }
        if (vec4) {
          h += operand_glsl_vec4(0, od, natural_ct(od), true);
          h += "#define FETCH_QUADS(q)";
          for (int j = 1; j < nops; ++j)
            h += " fetch" + std::to_string(j) + "((u_offset[" + std::to_string(j) + "] >> 2u) + q);";
          h += "\n";
          for (int j = 1; j < nops; ++j) h += operand_glsl_vec4(j, ops[j]->dtype(), e.in_ct, false);
          return h;
        }
        h += operand_glsl(0, od, natural_ct(od), true);
        for (int j = 1; j < nops; ++j) h += operand_glsl(j, ops[j]->dtype(), e.in_ct, false);
        return h;
      },
      256);
  std::uint64_t count = static_cast<std::uint64_t>(n);
  if (vec4) count = count / 4;
  if (words) {
    const std::uint64_t off = static_cast<std::uint64_t>(out.offset());
    count = (off + count + pw - 1) / pw - off / pw;
  }
  std::vector<GLuint> shape_u(sizes.begin(), sizes.end());
  std::vector<GLuint> strides_u, offs;
  for (int j = 0; j < nops; ++j) {
    for (int d = 0; d < ndim; ++d) strides_u.push_back(static_cast<GLuint>(strides[j][d]));
    offs.push_back(static_cast<GLuint>(ops[j]->offset()));
  }
  p.set_uint("u_count", static_cast<GLuint>(count));
  p.set_uint("u_numel", static_cast<GLuint>(n));
  p.set_uints("u_shape", shape_u.data(), ndim);
  p.set_uints("u_strides", strides_u.data(), nops * ndim);
  p.set_uints("u_offset", offs.data(), nops);
  p.set_float("u_p0", e.p0);
  p.set_float("u_p1", e.p1);
  p.set_int("u_i0", e.i0);
  p.set_float("u_alpha", e.alpha);
  if (e.scalar) {
    p.set_float("u_scalar", static_cast<float>(*e.scalar));
    p.set_int("u_iscalar", static_cast<GLint>(*e.scalar));
  }
  std::vector<BufferUse> uses;
  for (int j = 0; j < nops; ++j) uses.push_back({ops[j]->impl()->storage.get(), j == 0});
  dev.dispatch_1d(p, count, uses);
}

}  // namespace gltensor::detail
