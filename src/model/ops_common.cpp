// Run-time arguments, the registry and helpers shared by the op files.
#include <cmath>
#include <map>

#include "model/ops.hpp"
#include "runtime/settings.hpp"

namespace gltensor::model {

void CheckCtx::need_float(std::size_t i) const {
  const int e = elem(i);
  if (e != kUndefined && !elem_is_float(e)) fail(elem_name(e) + " inputs are not supported");
}

RtValue& Args::tensor_value(std::size_t i) const {
  if (!present(i)) fail("input " + std::to_string(i) + " is required");
  RtValue& v = *in_[i];
  if (v.seq || v.none) {  // (load-time kinds keep tensor ops off these; never a null dereference)
    const int id = i < node.inputs.size() ? node.inputs[i] : -1;
    fail("input " + std::to_string(i) + (id >= 0 ? " '" + g.values[id].name + "'" : std::string()) + " is " +
         (v.none ? "an empty optional" : "a sequence") + ", not a tensor");
  }
  return v;
}

const Tensor& Args::t(std::size_t i) {
  RtValue& v = tensor_value(i);
  if (!v.gpu.defined()) {
    try {
      v.gpu = v.host->upload(dev, weight_dtype_);
    } catch (const LimitError& e) {  // an int64 value past int32's range: name the node and input
      throw LimitError("gltensor::Model: " + g.where(node) + ": input " + std::to_string(i) + ": " +
                       without_model_prefix(e.what()));
    }
  }
  return v.gpu;
}

bool Args::host_output(std::size_t i, std::int64_t bytes) const {
  const detail::Settings& st = detail::settings();
  return model_output(i) && st.direct_host_io && bytes >= 0 && static_cast<std::size_t>(bytes) <= st.host_output_bytes;
}

const HostTensor& Args::h(std::size_t i) {
  RtValue& v = tensor_value(i);
  if (!v.host) v.host = std::make_shared<HostTensor>(HostTensor::download(v.gpu, elem(i)));
  return *v.host;
}

Shape Args::shape(std::size_t i) const {
  const RtValue& v = tensor_value(i);
  return v.gpu.defined() ? v.gpu.shape() : v.host->shape;
}

int Args::elem(std::size_t i) const {
  const int id = i < node.inputs.size() ? node.inputs[i] : -1;
  return id >= 0 ? g.values[id].elem : kUndefined;
}

DType Args::dtype(std::size_t i) const {
  const RtValue& v = tensor_value(i);
  return v.gpu.defined() ? v.gpu.dtype() : elem_dtype(v.host->elem);
}

std::string without_model_prefix(const std::string& what) {
  const std::string prefix = "gltensor::Model: ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

const std::vector<Tensor>* NodeCache::find(const std::vector<std::int64_t>& key) {
  for (auto it = entries.begin(); it != entries.end(); ++it)
    if (it->key == key) {
      entries.splice(entries.begin(), entries, it);
      return &entries.front().tensors;
    }
  return nullptr;
}

const std::vector<Tensor>& NodeCache::put(std::vector<std::int64_t> key, std::vector<Tensor> tensors) {
  entries.push_front(Entry{std::move(key), std::move(tensors)});
  auto bytes = [](const Entry& e) {
    std::size_t b = 0;
    for (const Tensor& t : e.tensors) b += static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
    return b;
  };
  std::size_t total = 0;
  for (const Entry& e : entries) total += bytes(e);
  while (entries.size() > 1 && (entries.size() > kEntries || total > kBytes)) {
    total -= bytes(entries.back());
    entries.pop_back();
  }
  return entries.front().tensors;
}

std::int64_t norm_axis(const Args& a, std::int64_t axis, std::int64_t rank) {
  const std::int64_t r = axis < 0 ? axis + rank : axis;
  if (r < 0 || r >= std::max<std::int64_t>(rank, 1))
    a.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return r;
}

Shape broadcast_host(const Args& a, const Shape& x, const Shape& y) {
  const std::size_t n = std::max(x.size(), y.size());
  Shape r(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t p = i < n - x.size() ? 1 : x[i - (n - x.size())];
    const std::int64_t q = i < n - y.size() ? 1 : y[i - (n - y.size())];
    if (p != q && p != 1 && q != 1) a.fail("shapes " + to_string(x) + " and " + to_string(y) + " do not broadcast");
    r[i] = p == 1 ? q : p;
  }
  return r;
}

HostTensor host_map2(const Args& a, const HostTensor& x, const HostTensor& y, int out_elem,
                     const std::function<double(double, double)>& f) {
  HostTensor r;
  r.elem = out_elem;
  r.shape = broadcast_host(a, x.shape, y.shape);
  const std::size_t n = r.shape.size();
  const std::int64_t total = numel_of(r.shape);
  r.v.resize(static_cast<std::size_t>(total));
  auto strides_of = [&](const Shape& s) {
    Shape st(n, 0);
    std::int64_t acc = 1;
    for (std::size_t k = 0; k < s.size(); ++k) {
      const std::size_t d = n - 1 - k;
      const std::int64_t size = s[s.size() - 1 - k];
      st[d] = size == 1 ? 0 : acc;
      acc *= size;
    }
    return st;
  };
  const Shape sx = strides_of(x.shape), sy = strides_of(y.shape);
  std::vector<std::int64_t> idx(n, 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t ox = 0, oy = 0;
    for (std::size_t d = 0; d < n; ++d) {
      ox += idx[d] * sx[d];
      oy += idx[d] * sy[d];
    }
    r.v[static_cast<std::size_t>(k)] = f(x.v[static_cast<std::size_t>(ox)], y.v[static_cast<std::size_t>(oy)]);
    for (std::size_t d = n; d-- > 0;) {
      if (++idx[d] < r.shape[d]) break;
      idx[d] = 0;
    }
  }
  host_round(r);
  return r;
}

void host_round(HostTensor& t) {
  if (t.elem == kFloat) {
    for (auto& x : t.v) x = static_cast<float>(x);
  } else if (t.elem == kBool) {
    for (auto& x : t.v) x = x != 0;
  } else if (!elem_is_float(t.elem)) {
    for (auto& x : t.v)
      if (std::isfinite(x)) x = std::trunc(x);
  }
}

int op_version(const std::string& op, int opset) {
  // Versions 18 to 21 of the default domain's ops that the runtime maps or might (ONNX's
  // onnx/defs/operator_sets.h and the 1.13-1.16 release notes): new attributes or inputs (Reduce*
  // axes, Split num_outputs, Pad axes and wrap, Resize antialias/axes/keep_aspect_ratio_policy and
  // half_pixel_symmetric, Scatter* max/min, AveragePool dilations, GroupNormalization's per-channel
  // scale, DFT's axis input), new ops, and versions that only add dtypes (float8, int4, ...).
  static const std::map<std::string, std::vector<int>> table = {
      {"AffineGrid", {20}},
      {"AveragePool", {19}},
      {"BitwiseAnd", {18}},
      {"BitwiseNot", {18}},
      {"BitwiseOr", {18}},
      {"BitwiseXor", {18}},
      {"Cast", {19, 21}},
      {"CastLike", {19, 21}},
      {"CenterCropPad", {18}},
      {"Col2Im", {18}},
      {"Constant", {19, 21}},
      {"ConstantOfShape", {20, 21}},
      {"DFT", {20}},
      {"DequantizeLinear", {19, 21}},
      {"Equal", {19}},
      {"Flatten", {21}},
      {"Gelu", {20}},
      {"GridSample", {20}},
      {"GroupNormalization", {18, 21}},
      {"Identity", {19, 21}},
      {"IsInf", {20}},
      {"IsNaN", {20}},
      {"LpPool", {18}},
      {"Mish", {18}},
      {"OptionalGetElement", {18}},
      {"OptionalHasElement", {18}},
      {"Pad", {18, 19, 21}},
      {"QuantizeLinear", {19, 21}},
      {"ReduceL1", {18}},
      {"ReduceL2", {18}},
      {"ReduceLogSum", {18}},
      {"ReduceLogSumExp", {18}},
      {"ReduceMax", {18, 20}},
      {"ReduceMean", {18}},
      {"ReduceMin", {18, 20}},
      {"ReduceProd", {18}},
      {"ReduceSumSquare", {18}},
      {"Reshape", {19, 21}},
      {"Resize", {18, 19}},
      {"ScatterElements", {18}},
      {"ScatterND", {18}},
      {"Shape", {19, 21}},
      {"Size", {19, 21}},
      {"Split", {18}},
      {"Squeeze", {21}},
      {"Transpose", {21}},
      {"Unsqueeze", {21}},
  };
  auto it = table.find(op);
  int v = 0;
  if (it != table.end())
    for (int s : it->second)
      if (s <= opset) v = s;
  return v;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry m;
    register_elementwise_ops(m);
    register_nn_ops(m);
    register_shape_ops(m);
    register_reduce_ops(m);
    register_fused_ops(m);
    register_rnn_ops(m);
    register_control_ops(m);
    register_quant_ops(m);
    register_signal_ops(m);
    register_sequence_ops(m);  // (last: it extends Identity)
    return m;
  }();
  return r;
}

}  // namespace gltensor::model
