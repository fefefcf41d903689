// gltensor::Model: load (read, check, plan, upload constants) and run (executor with liveness).
#include "gltensor/model.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <optional>

#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "model/model_impl.hpp"
#include "model/planner.hpp"
#include "nn/conv_plan.hpp"
#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {

namespace {

DType weight_dtype(const ModelOptions& o) { return o.f16_weights ? DType::f16 : DType::f32; }

[[noreturn]] void input_error(const Graph& g, const std::string& reason) {
  throw ModelError("gltensor::Model: " + g.file + ": " + reason, reason);
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const Device& dev, const std::string& path, const ModelOptions& options) {
  auto m = std::make_unique<Impl>(dev, read_graph(path), options);
  Graph& g = m->g;
  for (auto& vi : g.input_info) {
    auto it = options.input_shapes.find(vi.name);
    if (it == options.input_shapes.end()) continue;
    if (it->second.size() != vi.shape.size())
      input_error(g, "input_shapes['" + vi.name + "'] = " + to_string(it->second) +
                         " does not match the input's rank " + std::to_string(vi.shape.size()));
    for (std::size_t d = 0; d < vi.shape.size(); ++d) {
      if (vi.shape[d] >= 0 && vi.shape[d] != it->second[d])
        input_error(g, "input_shapes['" + vi.name + "'] = " + to_string(it->second) + " contradicts the fixed dim " +
                           std::to_string(d) + " of " + to_string(vi.shape));
      vi.shape[d] = it->second[d];
    }
  }
  for (const auto& [name, s] : options.input_shapes) {
    bool found = false;
    for (const auto& vi : g.input_info) found = found || vi.name == name;
    if (!found) input_error(g, "input_shapes names '" + name + "', which is not a graph input");
  }
  check_and_type(g);
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {  // what the outputs are, as inferred
    g.output_info[k].kind = g.values[g.outputs[k]].kind;
    if (g.output_info[k].kind != ValueKind::tensor && elem_supported(g.values[g.outputs[k]].elem))
      g.output_info[k].dtype = elem_dtype(g.values[g.outputs[k]].elem);
  }
  m->plan(g, nullptr);
  m->state_for(dev);  // the weights go to the load device now
  return Model(std::move(m));
}

namespace {

// The order the nodes run in: by dependency level (a node after every node whose output it reads,
// as early as that allows; nodes of one level in file order), so that nodes that do not depend on
// each other are dispatched next to each other and share one barrier interval of the queue (which
// issues a barrier only before a dispatch that reads what was written since the last one).
std::vector<int> barrier_order(const Graph& g) {
  std::vector<int> level_of_value(g.values.size(), 0);
  std::vector<std::pair<int, int>> order;  // (level, node index)
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.removed) continue;
    int level = 0;
    for (const auto* ids : {&n.inputs, &n.implicit})
      for (int in : *ids)
        if (in >= 0) level = std::max(level, level_of_value[in] + 1);
    for (int o : n.outputs)
      if (o >= 0) level_of_value[o] = level;
    order.emplace_back(level, static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> r;
  for (const auto& [level, i] : order) r.push_back(i);
  return r;
}

}  // namespace

// Plans a graph, then the subgraphs of its remaining nodes (which see its constants).
void Model::Impl::plan(Graph& g, const Graph* parent) {
  if (parent)  // outer values that are constants in the enclosing graph: constants here
    for (int o : g.outer) {
      auto it = parent->ids.find(g.values[o].name);
      if (it != parent->ids.end() && parent->values[it->second].constant)
        g.values[o].constant = parent->values[it->second].constant;
    }
  for (const Value& v : g.values) seq_values = seq_values || v.kind != ValueKind::tensor;
  fuse_qdq(g, stats);
  fold_constants(g, dev, stats);
  while (inline_ifs(g, stats)) fold_constants(g, dev, stats);
  fuse_stft_power(g, stats);
  // (until neither folds more: a BatchNormalization after an Add that fold_affine folds, as in
  // DBNet's head)
  for (int folds = -1; folds != stats.batchnorm + stats.affine;) {
    folds = stats.batchnorm + stats.affine;
    fold_batchnorm(g, stats);
    fold_affine(g, stats);
  }
  fuse_hardswish(g, stats);
  fuse_layernorm(g, stats);
  fuse_attention(g, stats);
  fuse_epilogues(g, stats);
  fuse_muladd(g, stats);
  fuse_conv_affine(g, options.f16_weights, stats);
  fuse_se(g, options.f16_weights, stats);
  fuse_residual(g, stats);
  fuse_stft_mel(g, dev, options.f16_weights, stats);
  fuse_mlp(g, dev, stats);
  fuse_elementwise(g, dev, options.f16_weights, stats);
  remove_dead(g, stats);
  // The run plan: each remaining node's op mapping, and the values each one reads last.
  GraphPlan& p = plans[&g];
  const Registry& reg = registry();
  std::vector<int> last_use(g.values.size(), -1);
  std::vector<char> seen(g.values.size(), 0);
  for (int idx : barrier_order(g)) {
    const auto i = static_cast<std::size_t>(idx);
    const Node& n = g.nodes[i];
    Step s;
    s.node = static_cast<int>(i);
    if (!is_control_flow(n)) s.def = &reg.at(n.op_type);
    p.steps.push_back(std::move(s));
    std::vector<int> reads = n.inputs;
    reads.insert(reads.end(), n.implicit.begin(), n.implicit.end());
    for (int in : reads) {
      if (in < 0) continue;
      last_use[in] = static_cast<int>(p.steps.size() - 1);
      const Value& v = g.values[in];
      if (!v.constant || seen[in]) continue;
      seen[in] = 1;
      p.constants.push_back(in);
      // Floating constants and large ones are uploaded once per device (weights).
      if (elem_is_float(v.constant->elem) || v.constant->numel() > 16) p.uploads.push_back(in);
    }
  }
  for (int o : g.outputs)
    if (g.values[o].constant && !seen[o]) {
      seen[o] = 1;
      p.constants.push_back(o);
    }
  // Values go after their last reader; a subgraph's inputs and outer values belong to the
  // enclosing graph. Outputs nothing reads go at once.
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.constant || val.graph_output) continue;
    if (last_use[v] < 0 || (g.sub && (val.graph_input || val.outer))) continue;
    p.steps[static_cast<std::size_t>(last_use[v])].release.push_back(static_cast<int>(v));
  }
  for (auto& st : p.steps)
    for (int o : g.nodes[static_cast<std::size_t>(st.node)].outputs)
      if (o >= 0 && last_use[o] < 0 && !g.values[o].graph_output) st.unread.push_back(o);
  running += static_cast<int>(p.steps.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].removed) continue;
    for (const auto& [name, a] : g.nodes[i].attrs.all())
      if (a.g) plan(*a.g, &g);
  }
}

// The state of the model on device `d` (created at the first run there: the weights uploaded).
DeviceState& Model::Impl::state_for(const Device& d) const {
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& ds : devices)
      if (ds->dev == d) return *ds;
  }
  // Uploads run outside the lock (on d's thread; other devices' runs go on meanwhile).
  auto ds = std::make_unique<DeviceState>();
  ds->dev = d;
  for (const auto& [graph, p] : plans) {
    auto& c = ds->constants[graph];
    c.resize(graph->values.size());
    for (int id : p.constants) c[id].host = graph->values[id].constant;
    // Conv filters uploaded into a buffer of a whole uniform block where conv2d runs them in the
    // direct kernel's ubo layout (software rasterizers: every layer's program then has the same
    // block size; conv_ubo_weight_floats), no copy and no other upload of them; the padding is
    // not counted in weight_bytes.
    std::vector<std::int64_t> min_numel(graph->values.size(), 0);
    if (weight_dtype(options) == DType::f32)
      for (const Node& n : graph->nodes)
        if (!n.removed && n.op_type == "Conv" && n.inputs.size() > 1 && n.inputs[1] >= 0)
          if (const auto& w = graph->values[static_cast<std::size_t>(n.inputs[1])].constant;
              w && elem_is_float(w->elem) && w->elem != kFloat16 && w->elem != kBfloat16)
            min_numel[static_cast<std::size_t>(n.inputs[1])] =
                detail::conv_ubo_weight_floats(*d.impl(), w->shape, n.attrs.i("group", 1));
    for (int id : p.uploads) {
      try {
        c[id].gpu =
            graph->values[id].constant->upload(d, weight_dtype(options), min_numel[static_cast<std::size_t>(id)]);
      } catch (const LimitError& e) {  // an int64 value past int32's range: name a node that reads it
        const auto reads = [id](const Node& n) {
          return std::find(n.inputs.begin(), n.inputs.end(), id) != n.inputs.end();
        };
        const auto n = std::find_if(graph->nodes.begin(), graph->nodes.end(),
                                    [&](const Node& x) { return !x.removed && reads(x); });
        throw LimitError("gltensor::Model: " + (n != graph->nodes.end() ? graph->where(*n) : graph->file) +
                         ": initializer '" + graph->values[id].name + "': " + without_model_prefix(e.what()));
      }
      ds->weight_bytes += min_numel[static_cast<std::size_t>(id)] > 0
                              ? static_cast<std::size_t>(c[id].gpu.numel()) * itemsize(c[id].gpu.dtype())
                              : c[id].gpu.impl()->storage->nbytes;
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  devices.push_back(std::move(ds));
  return *devices.back();
}

const std::vector<ValueInfo>& Model::inputs() const { return impl_->g.input_info; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->g.output_info; }
int Model::opset() const { return impl_->g.opset; }
RunStats Model::last_run() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last;
}
std::size_t Model::peak_bytes() const { return last_run().peak_bytes; }
std::size_t Model::total_intermediate_bytes() const { return last_run().total_intermediate_bytes; }
std::size_t Model::weight_bytes() const { return impl_->state_for(impl_->dev).weight_bytes; }
std::string Model::plan_summary() const {
  return std::to_string(impl_->running) + " nodes to run (of " + std::to_string(impl_->g.nodes.size()) + "); " +
         impl_->stats.summary();
}

void Model::release(const Device& dev) const {
  if (dev == impl_->dev) return;
  std::unique_ptr<DeviceState> gone;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& ds = impl_->devices;
  for (auto it = ds.begin(); it != ds.end(); ++it)
    if ((*it)->dev == dev) {
      gone = std::move(*it);
      ds.erase(it);
      break;
    }
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs, RunStats* stats) const {
  return impl_->run(inputs, stats);
}

std::map<std::string, Tensor> Model::Impl::run(const std::map<std::string, Tensor>& inputs, RunStats* stats) const {
  const Impl& m = *this;
  // The run's device: its inputs' (the model's for a graph without inputs).
  Device dev = m.dev;
  for (const auto& [name, t] : inputs)
    if (t.defined()) {
      dev = t.device();
      break;
    }
  std::vector<Tensor> given = m.check_inputs(inputs, dev);
  DeviceState& ds = m.state_for(dev);
  return counted(dev, stats, [&](RunState& rs) {
    return m.options.replay ? m.run_replayed(ds, given, rs) : m.execute(ds, given, rs);
  });
}

std::map<std::string, ModelValue> Model::run_values(const std::map<std::string, ModelValue>& inputs,
                                                    RunStats* stats) const {
  return impl_->run_values(inputs, stats);
}

std::map<std::string, ModelValue> Model::Impl::run_values(const std::map<std::string, ModelValue>& inputs,
                                                          RunStats* stats) const {
  // The run's device: its inputs' (the model's for a graph without inputs).
  Device d = dev;
  for (auto it = inputs.begin(); it != inputs.end() && d == dev; ++it)
    for (const Tensor& t : it->second.tensors)
      if (t.defined()) {
        d = t.device();
        break;
      }
  // Tensor inputs go through run()'s checks (unknown names included); the others are checked here.
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, v] : inputs) {
    const auto vi =
        std::find_if(g.input_info.begin(), g.input_info.end(), [&](const ValueInfo& i) { return i.name == name; });
    if (vi == g.input_info.end()) {
      tensors[name] = Tensor();
      continue;
    }
    if (v.kind != vi->kind)
      input_error(g,
                  "input '" + name + "' is given as " + kind_name(v.kind) + ", the graph takes " + kind_name(vi->kind));
    if (vi->kind != ValueKind::tensor) continue;
    if (v.none || v.tensors.size() != 1)
      input_error(g, "input '" + name + "' is a tensor; given " +
                         (v.none ? std::string("none") : std::to_string(v.tensors.size()) + " tensors"));
    tensors[name] = v.tensors[0];
  }
  const std::vector<Tensor> given = check_inputs(tensors, d, true);
  std::vector<RtValue> in(g.inputs.size());
  for (std::size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& vi = g.input_info[k];
    if (vi.kind == ValueKind::tensor) {
      in[k].gpu = given[k];
      continue;
    }
    auto it = inputs.find(vi.name);
    if (it == inputs.end()) input_error(g, "input '" + vi.name + "' (" + kind_name(vi.kind) + ") is missing");
    const ModelValue& v = it->second;
    const bool optional = vi.kind == ValueKind::optional_tensor || vi.kind == ValueKind::optional_sequence;
    if (v.none) {
      if (!optional)
        input_error(g, "input '" + vi.name + "' is " + kind_name(vi.kind) + ", not an optional: none given");
      in[k].none = true;
      continue;
    }
    if (vi.kind == ValueKind::optional_tensor && v.tensors.size() != 1)
      input_error(
          g, "input '" + vi.name + "' is an optional tensor; given " + std::to_string(v.tensors.size()) + " tensors");
    for (std::size_t i = 0; i < v.tensors.size(); ++i) {
      const Tensor& t = v.tensors[i];
      const std::string what = "input '" + vi.name + "' element " + std::to_string(i);
      if (!t.defined()) input_error(g, what + " is an undefined tensor");
      if (t.dtype() != vi.dtype)
        input_error(g, what + " has dtype " + dtype_name(t.dtype()) + ", expected " + dtype_name(vi.dtype));
      if (t.device().impl() != d.impl()) input_error(g, what + " lives on another device than the run's other inputs");
    }
    if (vi.kind == ValueKind::optional_tensor)
      in[k].gpu = v.tensors[0];
    else
      in[k].seq = std::make_shared<const std::vector<Tensor>>(v.tensors);
  }
  DeviceState& ds = state_for(d);
  std::vector<RtValue> outs = counted(d, stats, [&](RunState& rs) { return execute_values(ds, std::move(in), rs); });
  std::map<std::string, ModelValue> out;
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {
    ModelValue& mv = out[g.output_info[k].name];
    mv.kind = g.output_info[k].kind;
    mv.none = outs[k].none;
    if (outs[k].seq)
      mv.tensors = *outs[k].seq;
    else if (!outs[k].none)
      mv.tensors.push_back(gpu(d, outs[k]));
  }
  return out;
}

// The inputs in graph order, checked against the graph's declarations (all on device `d`).
// Without any_kind, a graph input or output that is not a tensor fails (run_values runs those);
// with it, those inputs are left undefined here (run_values checks them).
std::vector<Tensor> Model::Impl::check_inputs(const std::map<std::string, Tensor>& inputs, const Device& d,
                                              bool any_kind) const {
  if (!any_kind)
    for (const auto* infos : {&g.input_info, &g.output_info})
      for (const auto& vi : *infos)
        if (vi.kind != ValueKind::tensor)
          input_error(g, std::string(infos == &g.input_info ? "input" : "output") + " '" + vi.name + "' is " +
                             kind_name(vi.kind) + ": run the model with Model::run_values");
  for (const auto& [name, t] : inputs) {
    bool found = false;
    for (const auto& vi : g.input_info) found = found || vi.name == name;
    if (!found) {
      std::string names;
      for (const auto& vi : g.input_info) names += (names.empty() ? "'" : ", '") + vi.name + "'";
      input_error(g, "input '" + name + "' is not a graph input (inputs: " + names + ")");
    }
  }
  std::vector<Tensor> given;
  for (std::size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& vi = g.input_info[k];
    if (vi.kind != ValueKind::tensor) {
      given.emplace_back();
      continue;
    }
    auto it = inputs.find(vi.name);
    if (it == inputs.end()) input_error(g, "input '" + vi.name + "' " + to_string(vi.shape) + " is missing");
    const Tensor& t = it->second;
    if (!t.defined()) input_error(g, "input '" + vi.name + "' is an undefined tensor");
    bool ok = t.dim() == static_cast<std::int64_t>(vi.shape.size());
    for (std::size_t dim = 0; ok && dim < vi.shape.size(); ++dim)
      ok = vi.shape[dim] < 0 || vi.shape[dim] == t.shape()[dim];
    if (!ok)
      input_error(g, "input '" + vi.name + "' has shape " + to_string(t.shape()) + ", expected " + to_string(vi.shape) +
                         " (-1: any size)");
    if (t.dtype() != vi.dtype)
      input_error(g,
                  "input '" + vi.name + "' has dtype " + dtype_name(t.dtype()) + ", expected " + dtype_name(vi.dtype));
    if (t.device().impl() != d.impl())
      input_error(g, "input '" + vi.name + "' lives on another device than the run's other inputs");
    given.push_back(t);
  }
  return given;
}

// Runs the graph on checked inputs (in graph order).
std::map<std::string, Tensor> Model::Impl::execute(DeviceState& ds, const std::vector<Tensor>& given,
                                                   RunState& rs) const {
  std::vector<RtValue> in(given.size());
  for (std::size_t k = 0; k < given.size(); ++k) in[k].gpu = given[k];
  std::vector<RtValue> outs = execute_values(ds, std::move(in), rs);
  std::map<std::string, Tensor> out;
  for (std::size_t k = 0; k < g.outputs.size(); ++k) out[g.values[g.outputs[k]].name] = gpu(ds.dev, outs[k]);
  return out;
}

// Runs the graph on checked inputs of any kind (in graph order); returns the outputs in graph
// order (a constant output's upload kept in the device's constants).
std::vector<RtValue> Model::Impl::execute_values(DeviceState& ds, std::vector<RtValue> given, RunState& rs) const {
  std::vector<RtValue> vals(g.values.size());
  for (std::size_t k = 0; k < g.inputs.size(); ++k) vals[g.inputs[k]] = std::move(given[k]);
  exec(ds, g, vals, rs);
  std::vector<RtValue>& consts = ds.constants.at(&g);
  std::vector<RtValue> out;
  for (int o : g.outputs) {
    if (g.values[o].constant && !g.values[o].graph_input) gpu(ds.dev, consts[o]);
    out.push_back(g.values[o].constant && !g.values[o].graph_input ? consts[o] : vals[o]);
  }
  return out;
}

namespace {

// Whether a replay can read captured input k where the caller's tensor `given` lies instead of
// copying it into the recording's copy: the same layout (contiguous from element 0; dtype and
// shape were checked), a buffer no step writes (not one of the recording's own outputs), and
// no output sharing the captured copy's storage (an output that is the input, or a view of it).
bool rebindable(const detail::Capture& c, const Tensor& captured, const Tensor& given,
                const std::map<std::string, Tensor>& outputs) {
  const auto& st = captured.impl()->storage;
  if (!given.is_contiguous() || given.impl()->offset != 0 || c.writes(given.impl()->storage->buffer()) ||
      c.writes(st->buffer()))
    return false;
  for (const auto& [name, t] : outputs)
    if (t.impl()->storage == st) return false;
  return true;
}

// After a capture (Model::run_host's or run()'s): each output that the recording writes, up to
// Settings::host_output_bytes (GLTENSOR_HOST_OUTPUT_BYTES), moves into a host-visible buffer, so that replays write it
// where the host reads it (no copy before the read-back: run_host's read and to_vector wait for the fence, then copy
// from the mapping). Where the device has none (or GLTENSOR_HOST_IO=copy), it stays; so it does where the buffer would
// pass the device's memory limit (the move is an optimization: a run whose capture fitted must not fail for it,
// review18).
void outputs_to_host(const Device& dev, detail::Capture& c, const std::map<std::string, Tensor>& outputs) {
  for (const auto& [name, t] : outputs) {
    detail::Storage& st = *t.impl()->storage;
    if (st.block.host || st.nbytes > detail::settings().host_output_bytes || !c.writes(st.buffer())) continue;
    detail::Pool::Block b;
    try {
      b = dev.impl()->pool().acquire_host(st.nbytes, "Model::run");
    } catch (const OutOfMemory&) {
      return;
    }
    if (!b.buffer) return;
    if (!c.move_storage(st, b)) dev.impl()->pool().release(b);  // (not held: cannot happen after writes())
  }
}

}  // namespace

// ModelOptions::replay: the first run of a set of input shapes runs plain (a warm-up: kernels
// compiled, variants tuned, so that the recording holds no tuning runs), the second is captured
// (on copies of the inputs), later runs of those shapes replay it, each input read where the
// caller's tensor lies (a rebound replay; a copy into the captured one where that cannot be).
std::map<std::string, Tensor> Model::Impl::run_replayed(DeviceState& ds, const std::vector<Tensor>& given,
                                                        RunState& rs) const {
  using Replayed = DeviceState::Replayed;
  // Sequences and optionals are host-side lists the recording would not see: plain runs.
  if (seq_values) return execute(ds, given, rs);
  std::vector<Shape> shapes;
  for (const Tensor& t : given) shapes.push_back(t.shape());
  auto& replays = ds.replays;
  auto it = std::find_if(replays.begin(), replays.end(), [&](const Replayed& r) { return r.shapes == shapes; });
  if (it == replays.end()) {
    // The least recently run recordings' buffers go before a new capture takes its own.
    while (!replays.empty() && replays.size() >= static_cast<std::size_t>(std::max(1, options.replay_shapes)))
      replays.pop_front();
    replays.push_back(Replayed{shapes, {}, {}, {}, {}, {}, Replayed::warm});
    return execute(ds, given, rs);
  }
  Replayed& r = *it;
  if (r.state == Replayed::captured) {
    prepare_replay(ds, it, given);
    detail::RecordingAccess::replay(r.rec, r.rebinds);
    rs.stats = r.stats;
    return r.outputs;
  }
  replays.splice(replays.end(), replays, it);  // now the most recently run
  if (r.state == Replayed::refused) return execute(ds, given, rs);
  try {
    for (const Tensor& t : given) r.inputs.push_back(t.clone());
    r.rec = Recording::capture(ds.dev, [&] { r.outputs = execute(ds, r.inputs, rs); });
    // run() on tensors too: to_vector then reads them without a copy (issue 21's e2e path)
    detail::Enter guard(*ds.dev.impl(), "Model::run");
    outputs_to_host(ds.dev, *detail::RecordingAccess::capture(r.rec), r.outputs);
  } catch (const CaptureError& e) {
    // A read-back inside the run (control flow on values, data-dependent shapes): these shapes
    // run unrecorded.
    ds.dev.impl()->log(LogLevel::info,
                       std::string("gltensor::Model: ") + g.file + ": runs without replay: " + e.what());
    r = Replayed{shapes, {}, {}, {}, {}, {}, Replayed::refused};
    rs = RunState();
    return execute(ds, given, rs);
  } catch (...) {
    // Any other error (OutOfMemory inside the run): these shapes are warm again, without the
    // captured copies of the inputs (the next capture's execute would read this run's, review18).
    r = Replayed{shapes, {}, {}, {}, {}, {}, Replayed::warm};
    throw;
  }
  r.stats = rs.stats;
  r.state = Replayed::captured;
  return r.outputs;
}

std::list<DeviceState::Replayed>::iterator Model::Impl::captured_for(DeviceState& ds,
                                                                     const std::vector<Tensor>& given) {
  for (auto it = ds.replays.begin(); it != ds.replays.end(); ++it) {
    if (it->state != DeviceState::Replayed::captured || it->shapes.size() != given.size()) continue;
    bool same = true;
    for (std::size_t k = 0; same && k < given.size(); ++k) same = it->shapes[k] == given[k].shape();
    if (same) return it;
  }
  return ds.replays.end();
}

void Model::Impl::prepare_replay(DeviceState& ds, std::list<DeviceState::Replayed>::iterator it,
                                 const std::vector<Tensor>& given) const {
  ds.replays.splice(ds.replays.end(), ds.replays, it);  // now the most recently run (it stays valid)
  DeviceState::Replayed& r = *it;
  detail::Capture& c = *detail::RecordingAccess::capture(r.rec);
  r.rebinds.clear();
  for (std::size_t k = 0; k < given.size(); ++k) {
    if (rebindable(c, r.inputs[k], given[k], r.outputs))
      r.rebinds.push_back({r.inputs[k].impl()->storage->buffer(), given[k].impl()->storage.get()});
    else
      r.inputs[k].copy_(given[k]);
  }
}

std::vector<std::map<std::string, Tensor>> Model::run_many(
    const std::vector<std::map<std::string, Tensor>>& inputs) const {
  return impl_->run_many(inputs);
}

// Model::run_many: the entries with a captured recording gather in a group replayed together;
// any other entry (a warm-up or capture, which may drop a recording of the group, or one that
// replays a recording already in the group) replays the group first.
std::vector<std::map<std::string, Tensor>> Model::Impl::run_many(
    const std::vector<std::map<std::string, Tensor>>& inputs) const {
  using Replayed = DeviceState::Replayed;
  if (inputs.empty()) return {};  // no run: last_run() stays the previous run's
  std::vector<std::map<std::string, Tensor>> out(inputs.size());
  std::vector<const Replayed*> from(inputs.size(), nullptr);  // the recording whose outputs out[i] are
  std::vector<Replayed*> group;
  std::vector<std::size_t> members;
  const DeviceState* group_ds = nullptr;
  RunStats last_stats;
  const auto replay_group = [&] {
    if (group.empty()) return;
    std::vector<const Recording*> recs;
    std::vector<std::vector<detail::Rebind>> rebinds;
    for (Replayed* r : group) {
      recs.push_back(&r->rec);
      rebinds.push_back(r->rebinds);
    }
    detail::RecordingAccess::replay_together(recs, rebinds);
    for (std::size_t k = 0; k < group.size(); ++k) {
      out[members[k]] = group[k]->outputs;
      from[members[k]] = group[k];
    }
    group.clear();
    members.clear();
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!options.replay) {
      out[i] = run(inputs[i], &last_stats);
      continue;
    }
    Device dev = this->dev;
    for (const auto& [name, t] : inputs[i])
      if (t.defined()) {
        dev = t.device();
        break;
      }
    const std::vector<Tensor> given = check_inputs(inputs[i], dev);
    DeviceState& ds = state_for(dev);
    const auto found = captured_for(ds, given);
    Replayed* r = found == ds.replays.end() ? nullptr : &*found;
    if (!r || std::find(group.begin(), group.end(), r) != group.end() || group_ds != &ds) replay_group();
    group_ds = &ds;  // a group's recordings are of one device
    // Earlier outputs (of a capture or a replay of r) that this entry's replay of r overwrites:
    // copied out first. A run that does not replay makes new outputs.
    for (std::size_t j = 0; r && j < i; ++j)
      if (from[j] == r) {
        for (auto& [name, t] : out[j]) t = t.clone();
        from[j] = nullptr;
      }
    if (r) {
      prepare_replay(ds, found, given);
      group.push_back(r);
      members.push_back(i);
      // The captured run's byte counts; its dispatches and barriers are the recording's (those
      // of a replay alone: replayed together, the group's steps share their barriers).
      last_stats = r->stats;
      last_stats.dispatches = r->rec.dispatches();
      last_stats.barriers = r->rec.barriers();
      continue;
    }
    RunState rs;
    rs.live.reserve(64);
    out[i] = run_replayed(ds, given, rs);
    last_stats = rs.stats;
    if (!ds.replays.empty() && ds.replays.back().state == Replayed::captured) from[i] = &ds.replays.back();
  }
  replay_group();
  std::lock_guard<std::mutex> lock(mutex);
  last = last_stats;
  return out;
}

void Model::Impl::hold(RunState& rs, const Tensor& t) {
  if (!t.defined()) return;
  const auto& st = t.impl()->storage;
  for (auto& l : rs.live)
    if (l.storage == st.get()) {
      ++l.holders;
      return;
    }
  rs.live.push_back({st.get(), st->nbytes, 1});
  rs.live_bytes += st->nbytes;
  rs.stats.total_intermediate_bytes += st->nbytes;
}

void Model::Impl::drop(RunState& rs, const Tensor& t) {
  if (!t.defined()) return;
  const void* st = t.impl()->storage.get();
  for (std::size_t i = 0; i < rs.live.size(); ++i)
    if (rs.live[i].storage == st) {
      if (--rs.live[i].holders == 0) {
        rs.live_bytes -= rs.live[i].bytes;
        rs.live[i] = rs.live.back();
        rs.live.pop_back();
      }
      return;
    }
}

RtValue& Model::Impl::ref(DeviceState& ds, const Graph& g, std::vector<RtValue>& vals, int id) const {
  if (!g.values[id].constant) return vals[id];
  RtValue& c = ds.constants.at(&g)[id];
  if (!c.host) c.host = g.values[id].constant;
  return c;
}

Tensor Model::Impl::gpu(const Device& dev, RtValue& v) {
  if (!v.gpu.defined() && v.host) v.gpu = v.host->upload(dev);
  return v.gpu;
}

// The single value of a scalar (a condition, a trip count): on the host, or read back.
double Model::Impl::scalar(const Graph& g, const Node& n, RtValue& v, int elem) {
  if (!v.host) v.host = std::make_shared<HostTensor>(HostTensor::download(v.gpu, elem));
  if (v.host->v.size() != 1) g.fail(n, "expected a single value, got a tensor of shape " + to_string(v.host->shape));
  return v.host->v[0];
}

void Model::Impl::exec(DeviceState& ds, const Graph& g, std::vector<RtValue>& vals, RunState& rs) const {
  const GraphPlan& p = plans.at(&g);
  std::vector<RtValue>& consts = ds.constants.at(&g);
  const Device& dev = ds.dev;
  const std::size_t host_limit = 1 << 16;
  // GLTENSOR_MODEL_TRACE=1: wait for each node and print its wall time (debugging). With the
  // device's profiler on, each node's dispatches are attributed to a ProfileScope named after
  // its op type (ProfileReport::by_scope: GPU time per node type; per node under the trace).
  const bool trace = detail::settings().model_trace;
  std::vector<RtValue*> ptrs;
  for (const Step& st : p.steps) {
    const auto t0 = trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    const Node& n = g.nodes[static_cast<std::size_t>(st.node)];
    ptrs.clear();
    bool all_host = true;
    std::size_t host_elems = 0;
    for (int in : n.inputs) {
      RtValue* ptr = nullptr;
      if (in >= 0) {
        ptr = g.values[in].constant ? &consts[in] : &vals[in];
        if (ptr->defined()) {
          all_host = all_host && ptr->host != nullptr;
          if (ptr->host) host_elems += ptr->host->v.size();
        }
      }
      ptrs.push_back(ptr);
    }
    const OpDef* def = st.def;
    // Ops over sequences and optionals (ops_sequence.cpp), Identity of one.
    const bool whole = def && def->values &&
                       (!def->run || (!n.inputs.empty() && n.inputs[0] >= 0 &&
                                      g.values[static_cast<std::size_t>(n.inputs[0])].kind != ValueKind::tensor));
    const bool on_host = !whole && def && def->host && (def->shape_only || (all_host && host_elems <= host_limit));
    Args a(dev, g, n, ptrs, weight_dtype(options), &ds.node_cache);
    try {
      // (a scope only while the profiler is on: no copy of the op's name per node otherwise)
      // (with GLTENSOR_MODEL_TRACE=1 too: one scope per node, "#index op_type +fused", so that
      // the report gives each node's GPU time)
      std::optional<ProfileScope> scope;
      if (dev.impl()->profiler()) {
        std::string name;
        if (trace) name.append(1, '#').append(std::to_string(n.index)).append(1, ' ');
        name.append(n.op_type);
        if (trace && !n.fused.empty()) name.append(" +").append(n.fused);
        scope.emplace(dev, name);
      }
      if (!def) {
        run_control(ds, g, n, vals, rs);
      } else if (whole) {
        std::vector<RtValue> outs = def->values(a);
        for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
          if (n.outputs[k] >= 0) {
            vals[n.outputs[k]] = std::move(outs[k]);
            hold(rs, vals[n.outputs[k]].gpu);
          }
      } else if (on_host) {
        Hs outs = def->host(a);
        for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
          if (n.outputs[k] >= 0) {
            outs[k].elem = g.values[n.outputs[k]].elem;
            vals[n.outputs[k]].host = std::make_shared<HostTensor>(std::move(outs[k]));
          }
      } else {
        Ts outs = def->run(a);
        for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
          if (n.outputs[k] >= 0) {
            vals[n.outputs[k]].gpu = std::move(outs[k]);
            hold(rs, vals[n.outputs[k]].gpu);
          }
      }
    } catch (const ModelError&) {
      throw;
    } catch (const LimitError&) {
      throw;
    } catch (const OutOfMemory&) {
      throw;
    } catch (const DeviceError&) {
      throw;
    } catch (const ThreadError&) {
      throw;
    } catch (const CaptureError&) {  // ModelOptions::replay: the run cannot be captured
      throw;
    } catch (const Error& e) {
      // Shapes or values the graph cannot take (known only at run time): name the node.
      g.fail(n, e.what());
    }
    for (int o : n.outputs)
      if (o >= 0 && !vals[o].defined()) g.fail(n, "output '" + g.values[o].name + "' was not produced");
    rs.stats.peak_bytes = std::max(rs.stats.peak_bytes, rs.live_bytes);
    if (trace) {
      ds.dev.synchronize();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      Shape s0 =
          n.inputs.empty() || n.inputs[0] < 0 || g.values[n.inputs[0]].kind != ValueKind::tensor ? Shape{} : a.shape(0);
      std::fprintf(stderr, "trace %4d %-22s %-10s %9.3f ms %s%s\n", n.index, n.op_type.c_str(),
                   !def      ? "control"
                   : whole   ? "values"
                   : on_host ? "host"
                             : "gpu",
                   ms, to_string(s0).c_str(),
                   n.fused.empty() ? "" : (" +" + n.fused + " " + n.epilogue.name()).c_str());
    }
    // The values this node read last, and its outputs nothing reads (the plan's liveness).
    for (int v : st.release) {
      drop(rs, vals[v].gpu);
      vals[v] = RtValue();
    }
    for (int o : st.unread) {
      drop(rs, vals[o].gpu);
      vals[o] = RtValue();
    }
  }
}

// ---- control flow ----

// Runs subgraph `sub` of a node of graph `outer`: its outer values read by name from
// `outer_vals`, `inputs` bound to its inputs; returns its outputs. Outputs computed inside stay
// held (the caller's graph releases them).
std::vector<RtValue> Model::Impl::run_sub(DeviceState& ds, const Graph& outer, std::vector<RtValue>& outer_vals,
                                          const Graph& sub, std::vector<RtValue> inputs, RunState& rs) const {
  std::vector<RtValue> sv(sub.values.size());
  for (int o : sub.outer) {
    if (sub.values[o].constant) continue;
    auto it = outer.ids.find(sub.values[o].name);
    if (it == outer.ids.end())
      throw ModelError("gltensor::Model: " + sub.file + ": a subgraph reads '" + sub.values[o].name +
                           "', which its enclosing graph does not have",
                       "a subgraph reads '" + sub.values[o].name + "', which its enclosing graph does not have");
    sv[o] = ref(ds, outer, outer_vals, it->second);
  }
  for (std::size_t k = 0; k < sub.inputs.size() && k < inputs.size(); ++k) sv[sub.inputs[k]] = std::move(inputs[k]);
  exec(ds, sub, sv, rs);
  std::vector<RtValue> out;
  for (int o : sub.outputs) out.push_back(ref(ds, sub, sv, o));
  return out;
}

void Model::Impl::run_control(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals,
                              RunState& rs) const {
  if (n.op_type == "If")
    run_if(ds, g, n, vals, rs);
  else if (n.op_type == "Loop")
    run_loop(ds, g, n, vals, rs);
  else
    run_scan(ds, g, n, vals, rs);
}

void Model::Impl::run_if(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals,
                         RunState& rs) const {
  const bool cond = scalar(g, n, ref(ds, g, vals, n.inputs[0]), kBool) != 0;
  const Graph& b = *n.attrs.get(cond ? "then_branch" : "else_branch")->g;
  std::vector<RtValue> outs = run_sub(ds, g, vals, b, {}, rs);
  for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
    if (n.outputs[k] >= 0) vals[n.outputs[k]] = outs[k];
}

namespace {

// Slice i of x along axis, without the axis.
Tensor select_axis(const Tensor& x, std::int64_t axis, std::int64_t i) {
  Shape s = x.shape();
  s.erase(s.begin() + axis);
  return x.narrow(axis, i, 1).contiguous().reshape(s);
}

}  // namespace

void Model::Impl::run_loop(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals,
                           RunState& rs) const {
  const Graph& b = *n.attrs.get("body")->g;
  auto has = [&](std::size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0; };
  const double max_trip = has(0) ? scalar(g, n, ref(ds, g, vals, n.inputs[0]), kInt64) : 0;
  bool cond = has(1) ? scalar(g, n, ref(ds, g, vals, n.inputs[1]), kBool) != 0 : true;
  const std::size_t N = n.inputs.size() - 2;
  const std::size_t K = b.outputs.size() - 1 - N;
  std::vector<RtValue> carried;
  for (std::size_t k = 0; k < N; ++k)
    carried.push_back(n.inputs[2 + k] >= 0 ? ref(ds, g, vals, n.inputs[2 + k]) : RtValue());
  std::vector<std::vector<Tensor>> scans(K);
  // The condition is read back only when the body computes it (not when it passes it through).
  const bool cond_passthrough = b.outputs[0] == b.inputs[1];
  std::vector<Tensor> previous;  // carried values the last iteration computed (held until replaced)
  for (std::int64_t i = 0; (!has(0) || static_cast<double>(i) < max_trip) && cond; ++i) {
    std::vector<RtValue> in(2 + N);
    in[0].host = std::make_shared<HostTensor>(HostTensor::scalar(static_cast<double>(i), kInt64));
    in[1].host = std::make_shared<HostTensor>(HostTensor::scalar(cond ? 1 : 0, kBool));
    for (std::size_t k = 0; k < N; ++k) in[2 + k] = carried[k];
    std::vector<RtValue> out = run_sub(ds, g, vals, b, std::move(in), rs);
    // Without the cond input, the body's condition is ignored (ONNX: a for loop).
    if (has(1) && !cond_passthrough) cond = scalar(b, n, out[0], kBool) != 0;
    for (const Tensor& t : previous) drop(rs, t);
    previous.clear();
    for (std::size_t k = 0; k < N; ++k) {
      carried[k] = out[1 + k];
      previous.push_back(carried[k].gpu);
    }
    for (std::size_t k = 0; k < K; ++k) {
      scans[k].push_back(gpu(ds.dev, out[1 + N + k]));
      if (!out[1 + N + k].host) previous.push_back(out[1 + N + k].gpu);  // dropped after stacking
    }
  }
  for (std::size_t k = 0; k < N; ++k)
    if (k < n.outputs.size() && n.outputs[k] >= 0) {
      // Loop-16: an optional carried in may come out as what it holds; after no iteration the
      // value is the one given, which must then hold something.
      if (carried[k].none && g.values[n.outputs[k]].kind != ValueKind::optional_tensor &&
          g.values[n.outputs[k]].kind != ValueKind::optional_sequence)
        g.fail(n, "the loop ran no iteration and its carried optional '" + g.values[n.inputs[2 + k]].name +
                      "' is empty (the output '" + g.values[n.outputs[k]].name + "' is " +
                      kind_name(g.values[n.outputs[k]].kind) + ")");
      vals[n.outputs[k]] = carried[k];
    }
  for (std::size_t k = 0; k < K; ++k) {
    if (N + k >= n.outputs.size() || n.outputs[N + k] < 0) continue;
    Tensor t;
    if (scans[k].empty()) {  // no iteration: [0, dims of the body's output as declared]
      Shape s{0};
      for (auto d : b.output_info[1 + N + k].shape) {
        if (d < 0)
          g.fail(n, "no iteration ran and the body's scan output " + std::to_string(k) + " has no fixed shape");
        s.push_back(d);
      }
      t = zeros(ds.dev, s, elem_dtype(g.values[n.outputs[N + k]].elem));
    } else {
      t = stack(scans[k], 0);
    }
    hold(rs, t);
    vals[n.outputs[N + k]].gpu = t;
  }
  // The carried outputs stay held (by the values they became); per-iteration scan slices go.
  for (const Tensor& t : previous) {
    bool carried_out = false;
    for (const auto& c : carried) carried_out = carried_out || (c.gpu.defined() && c.gpu.impl() == t.impl());
    if (!carried_out) drop(rs, t);
  }
}

void Model::Impl::run_scan(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals,
                           RunState& rs) const {
  const Graph& b = *n.attrs.get("body")->g;
  const Attrs& at = n.attrs;
  const bool v8 = g.opset < 9;  // Scan-8: a batch axis 0, sequence_lens first, scan axis 1
  const std::size_t first = v8 ? 1 : 0;
  const std::size_t M = static_cast<std::size_t>(at.i("num_scan_inputs", 0));
  const std::size_t N = n.inputs.size() - first - M;
  const std::size_t K = b.outputs.size() - N;
  std::vector<Tensor> states, xs;
  for (std::size_t k = 0; k < N; ++k) states.push_back(gpu(ds.dev, ref(ds, g, vals, n.inputs[first + k])));
  for (std::size_t k = 0; k < M; ++k) xs.push_back(gpu(ds.dev, ref(ds, g, vals, n.inputs[first + N + k])));
  const auto in_axes = at.ints("scan_input_axes", std::vector<std::int64_t>(M, 0));
  const auto in_dirs = at.ints(v8 ? "directions" : "scan_input_directions", std::vector<std::int64_t>(M, 0));
  const auto out_axes = at.ints("scan_output_axes", std::vector<std::int64_t>(K, 0));
  const auto out_dirs = at.ints("scan_output_directions", std::vector<std::int64_t>(K, 0));
  auto norm = [&](std::int64_t a, std::int64_t rank) {
    const std::int64_t r = a < 0 ? a + rank : a;
    if (r < 0 || r >= rank)
      g.fail(n, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return r;
  };
  // One scan over `st` and `x` (no batch axis); returns the final states, then the scan outputs.
  auto scan = [&](std::vector<Tensor> st, const std::vector<Tensor>& x) {
    std::int64_t T = -1;
    std::vector<std::int64_t> ax(M);
    for (std::size_t k = 0; k < M; ++k) {
      ax[k] = norm(k < in_axes.size() ? in_axes[k] : 0, x[k].dim());
      const std::int64_t len = x[k].shape()[ax[k]];
      if (T >= 0 && len != T) g.fail(n, "the scan inputs have different lengths");
      T = len;
    }
    std::vector<std::vector<Tensor>> outs(K);
    std::vector<Tensor> previous;
    for (std::int64_t s = 0; s < std::max<std::int64_t>(T, 0); ++s) {
      std::vector<RtValue> in(N + M);
      for (std::size_t k = 0; k < N; ++k) in[k].gpu = st[k];
      for (std::size_t k = 0; k < M; ++k)
        in[N + k].gpu = select_axis(x[k], ax[k], k < in_dirs.size() && in_dirs[k] ? T - 1 - s : s);
      std::vector<RtValue> out = run_sub(ds, g, vals, b, std::move(in), rs);
      for (const Tensor& t : previous) drop(rs, t);
      previous.clear();
      for (std::size_t k = 0; k < N; ++k) {
        st[k] = gpu(ds.dev, out[k]);
        previous.push_back(st[k]);
      }
      for (std::size_t k = 0; k < K; ++k) {
        outs[k].push_back(gpu(ds.dev, out[N + k]));
        previous.push_back(outs[k].back());
      }
    }
    for (const Tensor& t : previous) drop(rs, t);
    std::vector<Tensor> r = st;
    for (std::size_t k = 0; k < K; ++k) {
      if (k < out_dirs.size() && out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
      if (outs[k].empty()) g.fail(n, "a scan of length 0 is not supported");
      r.push_back(stack(outs[k], norm(k < out_axes.size() ? out_axes[k] : 0, outs[k][0].dim() + 1)));
    }
    return r;
  };
  std::vector<Tensor> r;
  if (!v8) {
    r = scan(states, xs);
  } else {
    const std::int64_t B = xs.empty() ? 0 : xs[0].shape()[0];
    std::vector<std::vector<Tensor>> per(N + K);
    for (std::int64_t bi = 0; bi < B; ++bi) {
      std::vector<Tensor> st, x;
      for (const auto& t : states) st.push_back(select_axis(t, 0, bi));
      for (const auto& t : xs) x.push_back(select_axis(t, 0, bi));
      std::vector<Tensor> one = scan(st, x);
      for (std::size_t k = 0; k < N + K; ++k) per[k].push_back(one[k]);
    }
    for (auto& v : per) r.push_back(stack(v, 0));
  }
  for (std::size_t k = 0; k < r.size() && k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) {
      hold(rs, r[k]);
      vals[n.outputs[k]].gpu = r[k];
    }
}

}  // namespace gltensor
