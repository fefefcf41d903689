// ONNX operators mapped to gltensor ops (internal): what each mapping accepts (checked at load),
// the element types it produces (for load-time type inference), its GPU implementation and, for
// the ops of shape subgraphs, a host implementation on small integer tensors.
#pragma once
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.hpp"

namespace gltensor::model {

/// Model::run_host's inputs up to this size live in host-visible buffers that the host writes and
/// the kernels read in place (Pool::acquire_host, host_io.cpp). Larger ones are copied through the
/// staging of host_staging.hpp (a kernel reading host memory reads it over the bus on every pass:
/// for large tensors, or ones read many times, one copy costs less). Outputs have their own limit,
/// Settings::host_output_bytes (a kernel writes each element once): a replay's outputs (model.cpp)
/// and a plain run's outputs that an op writes itself (Args::host_output).
constexpr std::size_t kDirectHostBytes = std::size_t{256} << 10;

/// A value at run time: on the GPU, on the host (constants, shape subgraphs) or both; or, for a
/// value of kind sequence / optional (Value::kind), `seq`: the sequence's tensors (GPU, in order;
/// an empty vector for an empty sequence; an optional's tensor as one element) or `none`: an empty
/// optional. A sequence's vector is never changed once made (ops make a new one), so values share it.
struct RtValue {
  Tensor gpu;
  std::shared_ptr<const HostTensor> host;
  std::shared_ptr<const std::vector<Tensor>> seq;
  bool none = false;
  bool defined() const { return gpu.defined() || host != nullptr || seq != nullptr || none; }
};

/// The version of ONNX op `op` that a model of opset `opset` uses, from opset 18 on (its ONNX
/// since_version: 18 for ReduceMax in opsets 18 and 19, 20 from opset 20), or 0 for the versions
/// before 18 (each mapping checks those through the opset) and for ops unchanged since.
int op_version(const std::string& op, int opset);

/// Load-time view of a node for checks and type inference.
struct CheckCtx {
  const Graph& g;
  const Node& n;
  std::vector<int> in_elems;        ///< kUndefined for omitted inputs
  std::vector<ValueKind> in_kinds;  ///< ValueKind::tensor for omitted inputs
  ValueKind kind(std::size_t i) const { return i < in_kinds.size() ? in_kinds[i] : ValueKind::tensor; }
  int opset() const { return g.opset; }
  /// op_version of the node's op at the graph's opset.
  int version() const { return op_version(n.op_type, g.opset); }
  const Attrs& attrs() const { return n.attrs; }
  bool has_input(std::size_t i) const { return i < n.inputs.size() && n.inputs[i] >= 0; }
  int elem(std::size_t i) const { return i < in_elems.size() ? in_elems[i] : kUndefined; }
  /// The constant value of input i, or null.
  const HostTensor* constant(std::size_t i) const {
    return has_input(i) ? g.values[n.inputs[i]].constant.get() : nullptr;
  }
  [[noreturn]] void fail(const std::string& reason) const { g.fail(n, reason); }
  [[noreturn]] void fail_attr(const std::string& a, const std::string& why) const { g.fail_attr(n, a, why); }
  /// Fails unless input i is floating ("integer inputs are not supported").
  void need_float(std::size_t i = 0) const;
};

/// Tensors an op derives from its node's attributes and its inputs' sizes (DFT's and STFT's DFT
/// matrices), built at the node's first run of those sizes and kept for its later runs, per
/// device (DeviceState::node_cache: only that device's thread touches it): at most kEntries keys
/// a node, and past kBytes the oldest go first (the newest stays, whatever its size). The
/// recordings of ModelOptions::replay keep what they read alive themselves.
struct NodeCache {
  static constexpr std::size_t kEntries = 4;
  static constexpr std::size_t kBytes = std::size_t{256} << 20;
  struct Entry {
    std::vector<std::int64_t> key;
    std::vector<Tensor> tensors;
  };
  std::list<Entry> entries;  // the most recently used first
  /// The tensors kept under `key` (now the most recently used), or null.
  const std::vector<Tensor>* find(const std::vector<std::int64_t>& key);
  /// Keeps `tensors` under `key` (a new key: find returned null), dropping the oldest past the
  /// limits; returns the kept tensors.
  const std::vector<Tensor>& put(std::vector<std::int64_t> key, std::vector<Tensor> tensors);
};
using NodeCaches = std::map<const Node*, NodeCache>;

/// Run-time arguments of one node.
class Args {
 public:
  Args(const Device& dev, const Graph& g, const Node& n, std::vector<RtValue*> in, DType weight_dtype,
       NodeCaches* caches = nullptr)
      : dev(dev),
        g(g),
        node(n),
        attrs(n.attrs),
        opset(g.opset),
        in_(std::move(in)),
        weight_dtype_(weight_dtype),
        caches_(caches) {}
  const Device& dev;
  const Graph& g;
  const Node& node;
  const Attrs& attrs;
  const int opset;

  std::size_t size() const { return in_.size(); }
  /// Input i as it is (a sequence or an optional: OpDef::values); fails naming the node when omitted.
  const RtValue& value(std::size_t i) const {
    if (!present(i)) fail("input " + std::to_string(i) + " is missing");
    return *in_[i];
  }
  bool present(std::size_t i) const { return i < in_.size() && in_[i] && in_[i]->defined(); }
  bool on_host(std::size_t i) const { return present(i) && in_[i]->host != nullptr; }
  /// Input i on the GPU (a host value is uploaded once and kept).
  const Tensor& t(std::size_t i);
  /// Input i or an undefined tensor when omitted.
  Tensor opt(std::size_t i) { return present(i) ? t(i) : Tensor(); }
  /// Input i on the host (a GPU value is read back once and kept).
  const HostTensor& h(std::size_t i);
  std::vector<std::int64_t> ints(std::size_t i) { return h(i).ints(); }
  Shape shape(std::size_t i) const;
  /// ONNX element type of input i in the graph.
  int elem(std::size_t i) const;
  DType dtype(std::size_t i) const;
  std::size_t n_outputs() const { return node.outputs.size(); }
  bool wants_output(std::size_t i) const { return i < node.outputs.size() && node.outputs[i] >= 0; }
  /// Whether output i is one of the model's outputs (of the main graph, not a subgraph's): the
  /// tensor Model::run returns. An op may write such an output of up to kDirectHostBytes into a
  /// host-visible buffer (detail::alloc_host), which to_vector() then reads without a copy.
  bool model_output(std::size_t i) const { return wants_output(i) && !g.sub && g.values[node.outputs[i]].graph_output; }
  /// Whether output i, of `bytes` bytes, is written into a host-visible buffer: a model output of up
  /// to Settings::host_output_bytes (GLTENSOR_HOST_OUTPUT_BYTES) where direct host I/O is on.
  bool host_output(std::size_t i, std::int64_t bytes) const;
  [[noreturn]] void fail(const std::string& reason) const { g.fail(node, reason); }
  /// This node's cache on the run's device, or null where the run keeps none (constant folding
  /// at load).
  NodeCache* cache() const { return caches_ ? &(*caches_)[&node] : nullptr; }

 private:
  /// Input i, which must be a tensor (present, not a sequence or an empty optional).
  RtValue& tensor_value(std::size_t i) const;
  std::vector<RtValue*> in_;
  DType weight_dtype_;
  NodeCaches* caches_;
};

using Ts = std::vector<Tensor>;
using Hs = std::vector<HostTensor>;

struct OpDef {
  OpDef() = default;
  OpDef(std::vector<std::string> a, std::function<void(const CheckCtx&)> c,
        std::function<std::vector<int>(const CheckCtx&)> t, std::function<std::vector<Tensor>(Args&)> r,
        std::function<std::vector<HostTensor>(Args&)> h = nullptr, bool so = false)
      : attrs(std::move(a)),
        check(std::move(c)),
        types(std::move(t)),
        run(std::move(r)),
        host(std::move(h)),
        shape_only(so) {}
  /// Attributes the mapping handles; any other attribute on a node is a load-time ModelError.
  std::vector<std::string> attrs;
  /// Load-time checks of attribute values, input dtypes and the opset (optional).
  std::function<void(const CheckCtx&)> check;
  /// Output element types (optional; default: every output has input 0's type).
  std::function<std::vector<int>(const CheckCtx&)> types;
  std::function<Ts(Args&)> run;
  /// Host implementation (optional): used when every input is on the host and small, and at load
  /// to fold constants.
  std::function<Hs(Args&)> host;
  /// The host implementation needs only the inputs' shapes (Shape, Size): always on the host.
  bool shape_only = false;
  /// The versions of the op from opset 18 on (ONNX since_version, see op_version) that the
  /// mapping implements; a node whose opset selects another one is refused at load.
  std::vector<int> versions;
  /// Output kinds (optional; default: tensors, and then every input must be a tensor): ops over
  /// sequences and optionals (ops_sequence.cpp), Identity.
  std::function<std::vector<ValueKind>(const CheckCtx&)> kinds;
  /// Run over whole values (sequences, optionals): used instead of `run` where set and `run` is
  /// null or input 0 is not a tensor (Identity); never folded at load.
  std::function<std::vector<RtValue>(Args&)> values;
  /// Never folded to a constant at load, even with constant inputs (gltensor.DequantizeWeight:
  /// quantized weights stay 8-bit in memory).
  bool keep = false;
};

using Registry = std::map<std::string, OpDef>;
/// Every ONNX op the runtime maps, plus the planner's internal ops (domain "gltensor").
const Registry& registry();

void register_elementwise_ops(Registry& r);
void register_nn_ops(Registry& r);
void register_shape_ops(Registry& r);
void register_reduce_ops(Registry& r);
void register_fused_ops(Registry& r);
void register_rnn_ops(Registry& r);
void register_control_ops(Registry& r);
void register_quant_ops(Registry& r);
void register_signal_ops(Registry& r);
void register_sequence_ops(Registry& r);
/// "a tensor", "a sequence", "an optional tensor", "an optional sequence" (messages).
std::string kind_name(ValueKind k);
/// Ops mapped in the com.microsoft domain (ONNX Runtime's contrib QLinear ops, Q/DQ).
bool microsoft_op(const std::string& op);

// Helpers shared by the op files.
/// `what` without a leading "gltensor::Model: " (to wrap a runtime message with a node's place).
std::string without_model_prefix(const std::string& what);
/// Normalizes a negative axis against rank (fails naming the node when out of range).
std::int64_t norm_axis(const Args& a, std::int64_t axis, std::int64_t rank);
/// NumPy broadcast of host shapes.
Shape broadcast_host(const Args& a, const Shape& x, const Shape& y);
/// Elementwise host op over broadcast inputs.
HostTensor host_map2(const Args& a, const HostTensor& x, const HostTensor& y, int out_elem,
                     const std::function<double(double, double)>& f);
/// ONNX pads [b0, b1, ..., e0, e1, ...] of a conv or pool over spatial dims `in` (auto_pad, pads).
std::vector<std::int64_t> forward_pads(Args& a, const Shape& in, const std::vector<std::int64_t>& k,
                                       const std::vector<std::int64_t>& s, const std::vector<std::int64_t>& d);
/// Rounds host values to what their element type holds (integers truncate, float -> float32).
void host_round(HostTensor& t);
/// The most elements an array computed on the host for one node may have (2^25: 128 MiB of
/// float32, llvmpipe's largest buffer: windows, mel matrices, DFT matrices), so that a wrong size
/// fails naming the node instead of exhausting host memory.
constexpr std::int64_t kMaxHostElements = std::int64_t{1} << 25;
/// STFT's [n, 2 m] matrix of a real signal's forward DFT, in float64: row j, columns 2 k and 2 k + 1
/// = cos and -sin of 2 pi j k / n, times window[j] (empty: 1); dft_rows' values for ch = 1
/// (fuse_stft_power's constant, at load).
std::vector<double> stft_matrix(std::int64_t n, std::int64_t m, const std::vector<double>& window);
/// The DFT of length n (inverse: e^{+2 pi i j k / n} / n) of the signals that are x's rows
/// [..., R], f32: each row the first R / ch samples (R / ch <= n; the rest of the n are zeros) of
/// a real (ch = 1) or complex (ch = 2: re, im pairs) signal, read through x's strides (STFT's
/// frames: overlapping rows of its signal, a view, never copied). Returns [..., 2 m], the first m
/// frequencies as (re, im) pairs: one matmul with the [R, 2 m] DFT matrix, its rows scaled by
/// input `window` of the node where window >= 0 (values on the host folded into the matrix, a
/// window on the GPU multiplied into it each run). The matrix is computed on the host (float64,
/// rounded once) at the node's first run of these sizes (and window values) and kept in
/// Args::cache; past the device's max SSBO block it is built and multiplied in blocks of columns.
/// n * m past kMaxHostElements fails naming the node (a.fail), before any host allocation.
/// `epilogue`: applied to every output element in the matmul's epilogue (STFT's square where
/// fuse_stft_power took its power spectrum).
Tensor dft_rows(Args& a, const Tensor& x, std::int64_t ch, std::int64_t n, std::int64_t m, bool inverse,
                int window = -1, const Epilogue& epilogue = {});

}  // namespace gltensor::model
