// gltensor-info: lists EGL adapters and their compute capabilities, and runs an
// upload -> kernel -> readback self-check on each (like vulkaninfo). --json for machines.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gltensor/gltensor.hpp"

namespace {

using nlohmann::json;

// Uploads, runs add and mul with broadcasting, reads back and compares with the host.
std::string self_check(gltensor::Device& dev) {
  try {
    const int n = 1000;
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = 0.5f * i - 7.0f;
      b[i] = 3.0f - 0.25f * i;
    }
    auto ta = gltensor::Tensor::from_host(dev, a, {10, 100});
    auto tb = gltensor::Tensor::from_host(dev, std::span<const float>(b).subspan(0, 100), {100});
    auto out = gltensor::mul(gltensor::add(ta, tb), 2.0).to_vector();
    for (int i = 0; i < n; ++i) {
      const float want = 2.0f * (a[i] + b[i % 100]);
      if (std::fabs(out[i] - want) > 1e-5f * std::fabs(want) + 1e-6f)
        return "FAIL: element " + std::to_string(i) + " = " + std::to_string(out[i]) + ", want " + std::to_string(want);
    }
    return "PASS";
  } catch (const std::exception& e) {
    return std::string("FAIL: ") + e.what();
  }
}

json describe(gltensor::Device& dev) {
  const auto& c = dev.caps();
  json j;
  j["gl_version"] = c.version;
  j["glsl_version"] = c.glsl_version;
  j["renderer"] = c.renderer;
  j["vendor"] = c.vendor;
  j["max_ssbo_block_size"] = c.max_ssbo_block_size;
  j["max_ssbo_bindings"] = c.max_ssbo_bindings;
  j["max_workgroup_size"] = {c.max_workgroup_size[0], c.max_workgroup_size[1], c.max_workgroup_size[2]};
  j["max_workgroup_count"] = {c.max_workgroup_count[0], c.max_workgroup_count[1], c.max_workgroup_count[2]};
  j["max_workgroup_invocations"] = c.max_workgroup_invocations;
  j["max_shared_memory"] = c.max_shared_memory;
  j["subgroup"] = c.subgroup;
  j["subgroup_size"] = c.subgroup_size;
  j["subgroup_features"] = c.subgroup_features;
  j["fp16_arithmetic"] = c.fp16_arithmetic;
  j["timer_query"] = c.timer_query;
  j["program_binary"] = c.program_binary;
  j["debug_output"] = c.debug_output;
  j["extensions"] = c.extensions;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gltensor-info: EGL/GLES compute devices, capabilities and a self-check"};
  bool as_json = false, show_ext = false;
  app.add_flag("--json", as_json, "print JSON");
  app.add_flag("--extensions", show_ext, "list GL extensions");
  CLI11_PARSE(app, argc, argv);

  json all = json::array();
  int failures = 0;
  const auto adapters = gltensor::Device::list();
  for (const auto& a : adapters) {
    json j{{"index", a.index},       {"platform", a.platform}, {"node", a.node},        {"vendor", a.vendor},
           {"renderer", a.renderer}, {"version", a.version},   {"software", a.software}};
    try {
      gltensor::OpenOptions o;
      o.index = a.index;
      auto dev = gltensor::Device::open(o);
      j["capabilities"] = describe(dev);
      j["self_check"] = self_check(dev);
    } catch (const std::exception& e) {
      j["self_check"] = std::string("FAIL: ") + e.what();
    }
    if (j["self_check"].get<std::string>() != "PASS") ++failures;
    all.push_back(j);
  }
  if (as_json) {
    std::printf("%s\n", all.dump(2).c_str());
    return failures || adapters.empty() ? 1 : 0;
  }
  if (adapters.empty()) {
    std::printf("no EGL device found (need libegl-mesa0 + libgl1-mesa-dri for llvmpipe, or a GPU driver)\n");
    return 1;
  }
  for (const auto& j : all) {
    std::printf("Device %d: %s\n", j["index"].get<int>(), j["renderer"].get<std::string>().c_str());
    std::printf("  platform            %s%s\n", j["platform"].get<std::string>().c_str(),
                j["node"].get<std::string>().empty() ? "" : (" " + j["node"].get<std::string>()).c_str());
    std::printf("  vendor              %s\n", j["vendor"].get<std::string>().c_str());
    std::printf("  version             %s\n", j["version"].get<std::string>().c_str());
    std::printf("  type                %s\n", j["software"].get<bool>() ? "software" : "hardware");
    if (j.contains("capabilities")) {
      const auto& c = j["capabilities"];
      std::printf("  GLSL                %s\n", c["glsl_version"].get<std::string>().c_str());
      std::printf("  max SSBO block      %lld bytes\n", c["max_ssbo_block_size"].get<long long>());
      std::printf("  SSBO bindings       %d\n", c["max_ssbo_bindings"].get<int>());
      std::printf("  workgroup size      %d x %d x %d (%d invocations)\n", c["max_workgroup_size"][0].get<int>(),
                  c["max_workgroup_size"][1].get<int>(), c["max_workgroup_size"][2].get<int>(),
                  c["max_workgroup_invocations"].get<int>());
      std::printf("  workgroup count     %d x %d x %d\n", c["max_workgroup_count"][0].get<int>(),
                  c["max_workgroup_count"][1].get<int>(), c["max_workgroup_count"][2].get<int>());
      std::printf("  shared memory       %d bytes\n", c["max_shared_memory"].get<int>());
      std::printf("  subgroups           %s", c["subgroup"].get<bool>() ? "yes" : "no");
      if (c["subgroup"].get<bool>())
        std::printf(" (size %d, features 0x%x)", c["subgroup_size"].get<int>(), c["subgroup_features"].get<unsigned>());
      std::printf("\n  fp16 arithmetic     %s\n", c["fp16_arithmetic"].get<bool>() ? "yes" : "no");
      std::printf("  timer query         %s\n", c["timer_query"].get<bool>() ? "yes" : "no");
      std::printf("  program binary      %s\n", c["program_binary"].get<bool>() ? "yes" : "no");
      std::printf("  KHR_debug           %s\n", c["debug_output"].get<bool>() ? "yes" : "no");
      if (show_ext)
        for (const auto& e : c["extensions"]) std::printf("    %s\n", e.get<std::string>().c_str());
    }
    std::printf("  self-check          %s\n\n", j["self_check"].get<std::string>().c_str());
  }
  return failures ? 1 : 0;
}
