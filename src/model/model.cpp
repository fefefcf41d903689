// gltensor::Model: load (read, check, plan, upload constants) and run (executor with liveness).
#include "gltensor/model.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "model/graph.hpp"
#include "model/ops.hpp"
#include "model/planner.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {

using namespace model;

struct Model::Impl {
  Device dev;
  Graph g;
  ModelOptions options;
  PlanStats stats;
  std::vector<RtValue> constants;  // by value id: host constants, uploaded once
  std::vector<int> last_use;       // by value id: index of the last node reading it
  std::vector<int> order;          // indices of the nodes to run
  std::size_t peak = 0, total = 0, weights = 0;
};

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
  auto m = std::make_unique<Impl>(Impl{dev, read_graph(path), options, {}, {}, {}, {}, 0, 0, 0});
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
  fold_constants(g, dev, m->stats);
  fold_batchnorm(g, m->stats);
  fold_affine(g, m->stats);
  fuse_hardswish(g, m->stats);
  fuse_epilogues(g, m->stats);
  fuse_muladd(g, m->stats);
  remove_dead(g, m->stats);
  // Constants read by nodes that run: upload floating ones and large ones now (once).
  m->constants.resize(g.values.size());
  m->last_use.assign(g.values.size(), -1);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.removed) continue;
    m->order.push_back(static_cast<int>(i));
    for (int in : n.inputs) {
      if (in < 0) continue;
      m->last_use[in] = static_cast<int>(i);
      const Value& v = g.values[in];
      if (!v.constant || m->constants[in].host) continue;
      m->constants[in].host = v.constant;
      if (elem_is_float(v.constant->elem) || v.constant->numel() > 16) {
        m->constants[in].gpu = v.constant->upload(dev, weight_dtype(options));
        m->weights += m->constants[in].gpu.impl()->storage->nbytes;
      }
    }
  }
  for (int o : g.outputs)
    if (g.values[o].constant && !m->constants[o].host) m->constants[o].host = g.values[o].constant;
  return Model(std::move(m));
}

const std::vector<ValueInfo>& Model::inputs() const { return impl_->g.input_info; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->g.output_info; }
int Model::opset() const { return impl_->g.opset; }
std::size_t Model::peak_bytes() const { return impl_->peak; }
std::size_t Model::total_intermediate_bytes() const { return impl_->total; }
std::size_t Model::weight_bytes() const { return impl_->weights; }
std::string Model::plan_summary() const {
  int running = static_cast<int>(impl_->order.size());
  return std::to_string(running) + " nodes to run (of " + std::to_string(impl_->g.nodes.size()) + "); " +
         impl_->stats.summary();
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) {
  Impl& m = *impl_;
  const Graph& g = m.g;
  // ---- check the inputs ----
  for (const auto& [name, t] : inputs) {
    bool found = false;
    for (const auto& vi : g.input_info) found = found || vi.name == name;
    if (!found) {
      std::string names;
      for (const auto& vi : g.input_info) names += (names.empty() ? "'" : ", '") + vi.name + "'";
      input_error(g, "input '" + name + "' is not a graph input (inputs: " + names + ")");
    }
  }
  std::vector<RtValue> vals(g.values.size());
  for (std::size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& vi = g.input_info[k];
    auto it = inputs.find(vi.name);
    if (it == inputs.end()) input_error(g, "input '" + vi.name + "' " + to_string(vi.shape) + " is missing");
    const Tensor& t = it->second;
    if (!t.defined()) input_error(g, "input '" + vi.name + "' is an undefined tensor");
    bool ok = t.dim() == static_cast<std::int64_t>(vi.shape.size());
    for (std::size_t d = 0; ok && d < vi.shape.size(); ++d) ok = vi.shape[d] < 0 || vi.shape[d] == t.shape()[d];
    if (!ok)
      input_error(g, "input '" + vi.name + "' has shape " + to_string(t.shape()) + ", expected " + to_string(vi.shape) +
                         " (-1: any size)");
    if (t.dtype() != vi.dtype)
      input_error(g,
                  "input '" + vi.name + "' has dtype " + dtype_name(t.dtype()) + ", expected " + dtype_name(vi.dtype));
    if (t.device().impl() != m.dev.impl())
      input_error(g, "input '" + vi.name + "' lives on another device than the model");
    vals[g.inputs[k]].gpu = t;
  }
  // ---- run the nodes in order, releasing values after their last use ----
  const Registry& reg = registry();
  std::unordered_map<const void*, std::pair<std::size_t, int>> live;  // storage -> (bytes, holders)
  std::size_t live_bytes = 0;
  m.peak = 0;
  m.total = 0;
  auto hold = [&](const Tensor& t) {
    if (!t.defined()) return;
    auto& st = t.impl()->storage;
    auto [it, fresh] = live.try_emplace(st.get(), st->nbytes, 0);
    if (fresh) {
      live_bytes += st->nbytes;
      m.total += st->nbytes;
    }
    ++it->second.second;
  };
  auto drop = [&](const Tensor& t) {
    if (!t.defined()) return;
    auto it = live.find(t.impl()->storage.get());
    if (it == live.end()) return;
    if (--it->second.second == 0) {
      live_bytes -= it->second.first;
      live.erase(it);
    }
  };
  const std::size_t host_limit = 1 << 16;
  // One node: on the host (shape subgraphs, small constants) or as gltensor ops on the GPU.
  auto run_node = [&](Args& a, const OpDef& def, const Node& n, bool on_host) {
    if (on_host) {
      Hs outs = def.host(a);
      for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
        if (n.outputs[k] >= 0) {
          outs[k].elem = g.values[n.outputs[k]].elem;
          vals[n.outputs[k]].host = std::make_shared<HostTensor>(std::move(outs[k]));
        }
      return;
    }
    Ts outs = def.run(a);
    for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (n.outputs[k] >= 0) {
        vals[n.outputs[k]].gpu = outs[k];
        hold(outs[k]);
      }
  };
  // GLTENSOR_MODEL_TRACE=1: wait for each node and print its wall time (debugging). With the
  // device's profiler on, each node's dispatches are attributed to a ProfileScope named after
  // its op type (ProfileReport::by_scope: GPU time per node type).
  const bool trace = detail::settings().model_trace;
  for (int ni : m.order) {
    const auto t0 = std::chrono::steady_clock::now();
    const Node& n = g.nodes[ni];
    const OpDef& def = reg.at(n.op_type);
    std::vector<RtValue*> ptrs;
    bool all_host = true;
    std::size_t host_elems = 0;
    for (int in : n.inputs) {
      RtValue* p = in < 0 ? nullptr : (g.values[in].constant ? &m.constants[in] : &vals[in]);
      if (p && g.values[in].constant && !p->host) p->host = g.values[in].constant;
      ptrs.push_back(p);
      if (p && p->defined()) {
        all_host = all_host && p->host != nullptr;
        if (p->host) host_elems += p->host->v.size();
      }
    }
    Args a(m.dev, g, n, ptrs, weight_dtype(m.options));
    const bool on_host = def.host && (def.shape_only || (all_host && host_elems <= host_limit));
    try {
      ProfileScope scope(m.dev, n.op_type);
      run_node(a, def, n, on_host);
    } catch (const ModelError&) {
      throw;
    } catch (const LimitError&) {
      throw;
    } catch (const OutOfMemory&) {
      throw;
    } catch (const DeviceError&) {
      throw;
    } catch (const Error& e) {
      // Shapes or values the graph cannot take (known only at run time): name the node.
      g.fail(n, e.what());
    }
    for (int o : n.outputs)
      if (o >= 0 && !vals[o].defined()) g.fail(n, "output '" + g.values[o].name + "' was not produced");
    m.peak = std::max(m.peak, live_bytes);
    if (trace) {
      m.dev.synchronize();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      Shape s0 = n.inputs.empty() || n.inputs[0] < 0 ? Shape{} : a.shape(0);
      std::fprintf(stderr, "trace %4d %-22s %-10s %9.3f ms %s%s\n", n.index, n.op_type.c_str(),
                   on_host ? "host" : "gpu", ms, to_string(s0).c_str(),
                   n.fused.empty() ? "" : (" +" + n.fused + " " + n.epilogue.name()).c_str());
    }
    for (int in : n.inputs) {
      if (in < 0 || g.values[in].constant || g.values[in].graph_output || m.last_use[in] != ni) continue;
      drop(vals[in].gpu);
      vals[in] = RtValue();
    }
    // Outputs nothing reads (optional outputs the graph ignores) go at once.
    for (int o : n.outputs)
      if (o >= 0 && m.last_use[o] < 0 && !g.values[o].graph_output) {
        drop(vals[o].gpu);
        vals[o] = RtValue();
      }
  }
  std::map<std::string, Tensor> out;
  for (int o : g.outputs) {
    RtValue& v = g.values[o].constant ? m.constants[o] : vals[o];
    if (g.values[o].graph_input) v = vals[o];
    if (!v.gpu.defined() && v.host) v.gpu = v.host->upload(m.dev);
    out[g.values[o].name] = v.gpu;
  }
  return out;
}

}  // namespace gltensor
