// Reading a .onnx file (ONNX protobuf, Debian's libonnx) into the graph IR: graph inputs and
// outputs with names, dtypes and (symbolic) shapes, initializers and Constant nodes as host
// constants, nodes sorted topologically. Only the default domain, opsets 1 to 21.
#define ONNX_ML 1
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

#include "model/graph.hpp"

namespace gltensor::model {

namespace {

constexpr int kMinOpset = 1, kMaxOpset = 21;

[[noreturn]] void file_error(const std::string& path, const std::string& reason) {
  throw ModelError("gltensor::Model: " + path + ": " + reason, reason);
}

template <typename T>
void read_raw(std::vector<double>& out, const std::string& raw, std::size_t n) {
  if (raw.size() < n * sizeof(T)) throw std::runtime_error("raw_data holds fewer bytes than its dims need");
  for (std::size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(x);
  }
}

}  // namespace

// TensorProto -> HostTensor; throws std::runtime_error with the reason for what it cannot read.
HostTensor host_from_proto(const onnx::TensorProto& t) {
  HostTensor h;
  h.elem = t.data_type();
  h.shape.assign(t.dims().begin(), t.dims().end());
  const std::size_t n = static_cast<std::size_t>(numel_of(h.shape));
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw std::runtime_error("tensor '" + t.name() + "' has external data (not supported)");
  if (!elem_supported(h.elem)) throw std::runtime_error("dtype " + elem_name(h.elem));
  h.v.assign(n, 0.0);
  const bool raw = t.has_raw_data();
  const std::string& r = t.raw_data();
  auto need = [&](int have) {
    if (static_cast<std::size_t>(have) < n) throw std::runtime_error("tensor '" + t.name() + "' holds too few values");
  };
  switch (h.elem) {
    case kFloat:
      if (raw)
        read_raw<float>(h.v, r, n);
      else {
        need(t.float_data_size());
        for (std::size_t i = 0; i < n; ++i) h.v[i] = t.float_data(static_cast<int>(i));
      }
      break;
    case kInt64:
      if (raw)
        read_raw<std::int64_t>(h.v, r, n);
      else {
        need(t.int64_data_size());
        for (std::size_t i = 0; i < n; ++i) h.v[i] = static_cast<double>(t.int64_data(static_cast<int>(i)));
      }
      break;
    case kInt32:
    case kInt8:
      if (raw && h.elem == kInt8)
        read_raw<std::int8_t>(h.v, r, n);
      else if (raw)
        read_raw<std::int32_t>(h.v, r, n);
      else {
        need(t.int32_data_size());
        for (std::size_t i = 0; i < n; ++i) h.v[i] = t.int32_data(static_cast<int>(i));
      }
      break;
    case kFloat16:
    case kBfloat16: {
      std::vector<std::uint16_t> bits(n);
      if (raw) {
        if (r.size() < 2 * n) throw std::runtime_error("raw_data holds fewer bytes than its dims need");
        if (n) std::memcpy(bits.data(), r.data(), 2 * n);
      } else {
        need(t.int32_data_size());
        for (std::size_t i = 0; i < n; ++i) bits[i] = static_cast<std::uint16_t>(t.int32_data(static_cast<int>(i)));
      }
      for (std::size_t i = 0; i < n; ++i) h.v[i] = h.elem == kFloat16 ? f16_to_f32(bits[i]) : bf16_to_f32(bits[i]);
      break;
    }
    case kUint4:
    case kInt4: {  // two per byte, the first in the low nibble (raw_data or int32_data's bytes)
      const std::size_t bytes = (n + 1) / 2;
      std::vector<std::uint8_t> packed(bytes);
      if (raw) {
        if (r.size() < bytes) throw std::runtime_error("raw_data holds fewer bytes than its dims need");
        if (bytes) std::memcpy(packed.data(), r.data(), bytes);
      } else {
        if (static_cast<std::size_t>(t.int32_data_size()) < bytes)
          throw std::runtime_error("tensor '" + t.name() + "' holds too few values");
        for (std::size_t i = 0; i < bytes; ++i)
          packed[i] = static_cast<std::uint8_t>(t.int32_data(static_cast<int>(i)));
      }
      for (std::size_t i = 0; i < n; ++i) {
        const int nib = (packed[i / 2] >> ((i & 1) * 4)) & 0xf;
        h.v[i] = h.elem == kInt4 && nib >= 8 ? nib - 16 : nib;
      }
      break;
    }
    case kUint8:
    case kBool:
      if (raw)
        read_raw<std::uint8_t>(h.v, r, n);
      else {
        need(t.int32_data_size());
        for (std::size_t i = 0; i < n; ++i) h.v[i] = t.int32_data(static_cast<int>(i));
      }
      if (h.elem == kBool)
        for (auto& x : h.v) x = x != 0;
      break;
    default:
      throw std::runtime_error("dtype " + elem_name(h.elem));
  }
  return h;
}

namespace {

Graph read_graph_proto(const onnx::GraphProto& pg, const std::string& path, int opset, bool sub);

// The kind and element type of a TypeProto (a tensor, a sequence of tensors, an optional tensor
// or sequence) and its tensors' TypeProto; null with `why` for what the runtime does not take.
const onnx::TypeProto_Tensor* type_of(const onnx::TypeProto& t, ValueKind& kind, int& elem, std::string& why) {
  kind = ValueKind::tensor;
  elem = kUndefined;
  const onnx::TypeProto* inner = &t;
  if (t.has_optional_type()) {
    inner = &t.optional_type().elem_type();
    kind = inner->has_sequence_type() ? ValueKind::optional_sequence : ValueKind::optional_tensor;
  }
  if (inner->has_sequence_type()) {
    inner = &inner->sequence_type().elem_type();
    if (kind == ValueKind::tensor) kind = ValueKind::sequence;
  }
  if (!inner->has_tensor_type()) {
    why = inner->has_map_type()        ? "a map"
          : inner->has_sequence_type() ? "a sequence of sequences"
          : inner->has_optional_type() ? "an optional of an optional"
                                       : "not a tensor, sequence of tensors or optional";
    return nullptr;
  }
  elem = inner->tensor_type().elem_type();
  return &inner->tensor_type();
}

Attr attr_from_proto(const onnx::AttributeProto& a, const std::string& path, int opset) {
  Attr r;
  r.type = a.type();
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT:
      r.f = a.f();
      break;
    case onnx::AttributeProto::INT:
      r.i = a.i();
      break;
    case onnx::AttributeProto::STRING:
      r.s = a.s();
      break;
    case onnx::AttributeProto::FLOATS:
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR:
      try {
        r.t = std::make_shared<HostTensor>(host_from_proto(a.t()));
      } catch (const std::exception& e) {
        r.t_error = e.what();
      }
      break;
    case onnx::AttributeProto::GRAPH:
      r.g = std::make_shared<Graph>(read_graph_proto(a.g(), path, opset, true));
      break;
    case onnx::AttributeProto::TYPE_PROTO:
      if (!type_of(a.tp(), r.tp_kind, r.tp_elem, r.tp_error))
        r.tp_error = "the type is " + r.tp_error;
      else if (!elem_supported(r.tp_elem))
        r.tp_error = "dtype " + elem_name(r.tp_elem) + " is not supported";
      break;
    default:
      break;  // lists of graphs or tensors, sparse tensors: the op check refuses them
  }
  return r;
}

ValueInfo value_info(const onnx::ValueInfoProto& v) {
  ValueInfo vi;
  vi.name = v.name();
  int elem = 0;
  std::string why;
  const onnx::TypeProto_Tensor* t = type_of(v.type(), vi.kind, elem, why);
  const auto& tt = t ? *t : v.type().tensor_type();
  vi.dtype = elem_supported(tt.elem_type()) ? elem_dtype(tt.elem_type()) : DType::f32;
  for (const auto& d : tt.shape().dim()) {
    vi.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    vi.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return vi;
}

}  // namespace

namespace {

Graph read_graph_proto(const onnx::GraphProto& pg, const std::string& path, int opset, bool sub) {
  Graph g;
  g.file = path;
  g.opset = opset;
  g.sub = sub;
  for (const auto& init : pg.initializer()) {
    const int id = g.value(init.name());
    try {
      g.values[id].constant = std::make_shared<HostTensor>(host_from_proto(init));
      g.values[id].elem = init.data_type();
    } catch (const std::exception& e) {
      file_error(path, std::string("initializer '") + init.name() + "': " + e.what());
    }
  }
  for (const auto& v : pg.input()) {
    // A subgraph's input may leave its type to the enclosing node (found at check time).
    const bool untyped = sub && v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET;
    ValueKind kind = ValueKind::tensor;
    int elem = kUndefined;
    std::string why;
    if (!untyped && !type_of(v.type(), kind, elem, why))
      file_error(path, std::string(sub ? "subgraph" : "graph") + " input '" + v.name() + "' is " + why);
    const int id = g.value(v.name());
    if (g.values[id].constant) continue;  // an initializer listed as input (IR < 4): a constant
    g.values[id].kind = kind;
    if (!(sub && elem == kUndefined) && !elem_supported(elem))
      file_error(path, std::string(sub ? "subgraph" : "graph") + " input '" + v.name() + "': dtype " + elem_name(elem));
    g.values[id].elem = elem;
    g.values[id].graph_input = true;
    g.inputs.push_back(id);
    g.input_info.push_back(value_info(v));
  }
  // Nodes, then a topological sort (Kahn, stable: file order among ready nodes).
  std::vector<Node> nodes;
  for (int i = 0; i < pg.node_size(); ++i) {
    const auto& pn = pg.node(i);
    Node n;
    n.index = i;
    n.name = pn.name();
    n.op_type = pn.op_type();
    n.domain = pn.domain();
    for (const auto& in : pn.input()) n.inputs.push_back(in.empty() ? -1 : g.value(in));
    for (const auto& out : pn.output()) n.outputs.push_back(out.empty() ? -1 : g.value(out));
    for (const auto& a : pn.attribute()) {
      Attr at = attr_from_proto(a, path, opset);
      if (at.g)  // the names its subgraph reads from outside: this node's implicit inputs
        for (int o : at.g->outer) {
          const int id = g.value(at.g->values[o].name);
          if (std::find(n.implicit.begin(), n.implicit.end(), id) == n.implicit.end()) n.implicit.push_back(id);
        }
      n.attrs.set(a.name(), std::move(at));
    }
    nodes.push_back(std::move(n));
  }
  {
    std::vector<int> producer(g.values.size(), -1);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      for (int o : nodes[i].outputs)
        if (o >= 0) {
          if (producer[o] >= 0 || g.values[o].constant || g.values[o].graph_input)
            file_error(path, "value '" + g.values[o].name + "' is produced twice");
          producer[o] = static_cast<int>(i);
        }
    std::vector<int> pending(nodes.size(), 0);
    std::vector<std::vector<int>> users(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      std::vector<int> reads = nodes[i].inputs;
      reads.insert(reads.end(), nodes[i].implicit.begin(), nodes[i].implicit.end());
      for (int in : reads)
        if (in >= 0 && producer[in] >= 0) {
          ++pending[i];
          users[producer[in]].push_back(static_cast<int>(i));
        } else if (in >= 0 && !g.values[in].constant && !g.values[in].graph_input) {
          if (sub) {  // read from an enclosing graph
            if (!g.values[in].outer) g.outer.push_back(in);
            g.values[in].outer = true;
            continue;
          }
          file_error(path, "node " + std::to_string(i) + " '" + nodes[i].name + "' (" + nodes[i].op_type + ") reads '" +
                               g.values[in].name + "', which nothing produces");
        }
    }
    std::vector<int> order, ready;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (!pending[i]) ready.push_back(static_cast<int>(i));
    while (!ready.empty()) {
      std::sort(ready.begin(), ready.end(), std::greater<int>());
      const int i = ready.back();
      ready.pop_back();
      order.push_back(i);
      for (int u : users[i])
        if (--pending[u] == 0) ready.push_back(u);
    }
    if (order.size() != nodes.size()) file_error(path, "the graph has a cycle");
    for (int i : order) g.nodes.push_back(std::move(nodes[i]));
  }
  for (const auto& v : pg.output()) {
    {
      ValueKind kind;
      int elem;
      std::string why;
      if (!(sub && v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) && !type_of(v.type(), kind, elem, why))
        file_error(path, std::string(sub ? "subgraph" : "graph") + " output '" + v.name() + "' is " + why);
    }
    const int id = g.value(v.name());
    // A subgraph may return a value of an enclosing graph directly.
    if (sub && !g.values[id].constant && !g.values[id].graph_input && g.values[id].producer < 0) {
      bool produced = false;
      for (const auto& n : g.nodes)
        for (int o : n.outputs) produced = produced || o == id;
      if (!produced && !g.values[id].outer) {
        g.values[id].outer = true;
        g.outer.push_back(id);
      }
    }
    g.values[id].graph_output = true;
    g.outputs.push_back(id);
    g.output_info.push_back(value_info(v));
  }
  g.recount();
  return g;
}

}  // namespace

Graph read_graph(const std::string& path) {
  onnx::ModelProto m;
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) file_error(path, "cannot open the file");
    if (!m.ParseFromIstream(&f)) file_error(path, "not an ONNX model (protobuf parse failed)");
  }
  int opset = 0;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  }
  if (opset == 0) file_error(path, "no opset of the default domain is imported");
  if (opset < kMinOpset || opset > kMaxOpset)
    file_error(path, "opset " + std::to_string(opset) + " is not supported (supported: " + std::to_string(kMinOpset) +
                         " to " + std::to_string(kMaxOpset) + ")");
  return read_graph_proto(m.graph(), path, opset, false);
}

}  // namespace gltensor::model
