// gltensor::Model's internals (internal): the run plan, the per-run and per-device state, and
// Model::Impl, shared by the executor (model.cpp) and the host-data entry (host_io.cpp).
#pragma once
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gltensor/model.hpp"
#include "gltensor/recording.hpp"
#include "model/graph.hpp"
#include "model/ops.hpp"
#include "model/planner.hpp"
#include "runtime/queue.hpp"

namespace gltensor {

using namespace model;

// What the executor keeps per graph (the main graph and every subgraph), built once at load: the
// run plan. Each step names its node, its resolved op mapping (no lookup by name at run time)
// and the values whose last reader it is (liveness: dropped after it without a per-run scan).
struct Step {
  int node = 0;                // index in Graph::nodes
  const OpDef* def = nullptr;  // null for control flow (If, Loop, Scan)
  std::vector<int> release;    // values this step reads last (not constants, outputs, outer values)
  std::vector<int> unread;     // outputs nothing reads (optional outputs the graph ignores)
};

struct GraphPlan {
  std::vector<Step> steps;
  std::vector<int> uploads;    // constants uploaded to each device the model runs on (weights)
  std::vector<int> constants;  // every constant a step reads or the graph returns
};

// What a run changes: the liveness accounting and the statistics of that run (one per call, so
// that calls on several threads share nothing mutable).
struct RunState {
  // Storages of the intermediates alive: a flat list (a few dozen at most; no allocation per node).
  struct Live {
    const void* storage;
    std::size_t bytes;
    int holders;
  };
  std::vector<Live> live;
  std::size_t live_bytes = 0;
  RunStats stats;
};

// What the model keeps per device it runs on: the constants' GPU copies (uploaded once per
// device, lazily completed by the ops: only that device's thread touches them) and the recording
// of ModelOptions::replay.
struct DeviceState {
  Device dev;
  std::map<const Graph*, std::vector<RtValue>> constants;  // by value id
  std::size_t weight_bytes = 0;
  // ModelOptions::replay: the recordings of the last replay_shapes sets of input shapes, the
  // least recently run first.
  struct Replayed {
    std::vector<Shape> shapes;
    std::vector<Tensor> inputs;  // the captured copies of the inputs
    std::map<std::string, Tensor> outputs;
    Recording rec;
    std::vector<detail::Rebind> rebinds;  // a replay's inputs read in place (scratch, kept)
    RunStats stats;                       // of the captured run (its peak and totals are a replay's)
    // warm: run once (the next run is captured); refused: the run cannot be captured, these
    // shapes run unrecorded.
    enum State { warm, captured, refused } state = warm;
  };
  std::list<Replayed> replays;
  // Model::run_host: each input's host-visible tensor, reused while its shape and dtype stay.
  std::map<std::string, Tensor> host_inputs;
  // What ops keep per node across runs (Args::cache: DFT's and STFT's DFT matrices).
  NodeCaches node_cache;
};

struct Model::Impl {
  Impl(const Device& d, Graph graph, const ModelOptions& o) : dev(d), g(std::move(graph)), options(o) {}
  Device dev;  // the device the model was loaded on
  Graph g;
  ModelOptions options;
  PlanStats stats;
  std::map<const Graph*, GraphPlan> plans;  // written at load only
  int running = 0;                          // nodes to run, subgraphs included
  bool seq_values = false;                  // a value of a graph is a sequence or optional: no replay
  // Per-device state, created at the first run on a device; the list is guarded by `mutex`, each
  // entry is used by its device's thread only. `last` is the last completed run's statistics.
  mutable std::mutex mutex;
  mutable std::vector<std::unique_ptr<DeviceState>> devices;
  mutable RunStats last;

  void plan(Graph& g, const Graph* parent);
  DeviceState& state_for(const Device& d) const;
  std::vector<Tensor> check_inputs(const std::map<std::string, Tensor>& inputs, const Device& d,
                                   bool any_kind = false) const;
  std::map<std::string, Tensor> execute(DeviceState& ds, const std::vector<Tensor>& given, RunState& rs) const;
  std::vector<RtValue> execute_values(DeviceState& ds, std::vector<RtValue> given, RunState& rs) const;
  std::map<std::string, ModelValue> run_values(const std::map<std::string, ModelValue>& inputs, RunStats* stats) const;
  // Runs f(RunState&) on `d`, counting its dispatches and barriers into the run's statistics
  // (last_run(), *stats).
  template <class F>
  auto counted(const Device& d, RunStats* stats, F&& f) const {
    RunState rs;
    rs.live.reserve(64);
    const auto d0 = d.dispatch_count(), b0 = d.barrier_count();
    auto out = f(rs);
    rs.stats.dispatches = d.dispatch_count() - d0;
    rs.stats.barriers = d.barrier_count() - b0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      last = rs.stats;
    }
    if (stats) *stats = rs.stats;
    return out;
  }
  // Model::run (and run_host's run); with replay a captured run's outputs of up to
  // kDirectHostBytes go to host-visible buffers.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, RunStats* stats) const;
  std::map<std::string, Tensor> run_replayed(DeviceState& ds, const std::vector<Tensor>& given, RunState& rs) const;
  // The recording of these input shapes if it is captured (replayable), else ds.replays.end().
  static std::list<DeviceState::Replayed>::iterator captured_for(DeviceState& ds, const std::vector<Tensor>& given);
  // Before replaying *r (an entry of ds.replays, found by the caller): it is made the most
  // recently run, the inputs rebound in r->rebinds or copied into the captured ones.
  void prepare_replay(DeviceState& ds, std::list<DeviceState::Replayed>::iterator r,
                      const std::vector<Tensor>& given) const;
  std::vector<std::map<std::string, Tensor>> run_many(const std::vector<std::map<std::string, Tensor>>& inputs) const;
  void exec(DeviceState& ds, const Graph& g, std::vector<RtValue>& vals, RunState& rs) const;
  static void hold(RunState& rs, const Tensor& t);
  static void drop(RunState& rs, const Tensor& t);
  RtValue& ref(DeviceState& ds, const Graph& g, std::vector<RtValue>& vals, int id) const;
  static Tensor gpu(const Device& dev, RtValue& v);
  static double scalar(const Graph& g, const Node& n, RtValue& v, int elem);
  std::vector<RtValue> run_sub(DeviceState& ds, const Graph& outer, std::vector<RtValue>& outer_vals, const Graph& sub,
                               std::vector<RtValue> inputs, RunState& rs) const;
  void run_control(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals, RunState& rs) const;
  void run_if(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals, RunState& rs) const;
  void run_loop(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals, RunState& rs) const;
  void run_scan(DeviceState& ds, const Graph& g, const Node& n, std::vector<RtValue>& vals, RunState& rs) const;
};

}  // namespace gltensor
