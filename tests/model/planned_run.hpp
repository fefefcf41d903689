// A model run with one of the planner's passes on or off (tests of the passes): its output, plan
// summary and the dispatches of a warm run.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "test_util.hpp"

namespace glt_test {

struct PlannedRun {
  std::vector<float> y;  ///< the output `output`
  std::string plan;
  std::uint64_t dispatches = 0;
};

/// Loads `path` with the pass's setting (Settings::fuse_layernorm, ...) `on` or off for the load,
/// runs it once to compile the kernels and again counting the dispatches.
inline PlannedRun run_planned(const std::string& path, const std::map<std::string, gltensor::Tensor>& feeds,
                              const std::string& output, bool gltensor::detail::Settings::*pass, bool on) {
  gltensor::Model model = [&] {
    ScopedSettings s;
    s.operator->()->*pass = on;
    return gltensor::Model::load(device(), path);
  }();
  model.run(feeds);  // kernels compiled
  device().synchronize();
  const std::uint64_t d0 = device().dispatch_count();
  auto out = model.run(feeds);
  device().synchronize();
  return {out.at(output).to_vector(), model.plan_summary(), device().dispatch_count() - d0};
}

}  // namespace glt_test
