// gltensor-onnx-test DIR...: runs ONNX backend test cases (model.onnx + test_data_set_*/) through
// gltensor::Model (the library's ONNX runtime: a case whose model it refuses at load, with a
// ModelError, is skipped with that reason), compares each output with the expected one (rtol 1e-3,
// atol 1e-5 for floats, exact for integers and bools; f16/bf16 outputs rtol 1e-2), prints a
// line per case and the summary "N passed, N failed, N skipped". Exit status 1 if any failed.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "onnx_io.hpp"

namespace fs = std::filesystem;
using namespace gltensor;
using namespace onnx_test;

namespace {

enum class Outcome { pass, fail, skip };
struct Result {
  Outcome outcome;
  std::string reason;
};

std::string compare(const Tensor& got, const onnx::TensorProto& want_p, const Device& dev) {
  Tensor want = from_proto(dev, want_p);
  if (got.shape() != want.shape()) return "shape " + to_string(got.shape()) + ", expected " + to_string(want.shape());
  auto g = got.to_vector(), w = want.to_vector();
  const bool exact = !is_floating(want.dtype());
  const double rtol = (want.dtype() == DType::f32) ? 1e-3 : 1e-2, atol = want.dtype() == DType::f32 ? 1e-5 : 1e-3;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double a = g[i], b = w[i];
    bool ok;
    if (std::isnan(b))
      ok = std::isnan(a);
    else if (std::isinf(b))
      ok = a == b;
    else
      ok = exact ? a == b : std::fabs(a - b) <= atol + rtol * std::fabs(b);
    if (!ok) return "element " + std::to_string(i) + ": " + std::to_string(a) + ", expected " + std::to_string(b);
  }
  return "";
}

Result run_case(const fs::path& dir, const Device& dev) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::skip, "no test_data_set"};
  std::optional<Model> model;
  try {
    model.emplace(Model::load(dev, (dir / "model.onnx").string()));
  } catch (const ModelError& e) {
    return {Outcome::skip, e.reason().empty() ? e.what() : e.reason()};
  }
  // Models with sequence or optional inputs or outputs run through Model::run_values.
  bool values = false;
  for (const auto* infos : {&model->inputs(), &model->outputs()})
    for (const auto& vi : *infos) values = values || vi.kind != ValueKind::tensor;
  try {
    for (const auto& set : values ? sets : std::vector<fs::path>{}) {
      std::map<std::string, ModelValue> inputs;
      int k = 0;
      for (const auto& vi : model->inputs()) {
        const fs::path f = set / ("input_" + std::to_string(k++) + ".pb");
        if (!fs::exists(f)) return {Outcome::skip, "optional graph input without data"};
        ProtoValue p = read_value_file(f.string(), vi.kind);
        ModelValue& v = inputs[vi.name];
        v.kind = vi.kind;
        v.none = p.none;
        for (const auto& t : p.tensors) v.tensors.push_back(from_proto(dev, t));
      }
      auto outputs = model->run_values(inputs);
      for (std::size_t i = 0; i < model->outputs().size(); ++i) {
        const fs::path f = set / ("output_" + std::to_string(i) + ".pb");
        const ProtoValue want = read_value_file(f.string(), model->outputs()[i].kind);
        const ModelValue& got = outputs.at(model->outputs()[i].name);
        const std::string where = set.filename().string() + " output " + std::to_string(i);
        if (got.none != want.none)
          return {Outcome::fail, where + (got.none ? ": empty, expected a value" : ": a value, expected empty")};
        if (got.tensors.size() != want.tensors.size())
          return {Outcome::fail, where + ": " + std::to_string(got.tensors.size()) + " tensors, expected " +
                                     std::to_string(want.tensors.size())};
        for (std::size_t j = 0; j < got.tensors.size(); ++j) {
          const std::string diff = compare(got.tensors[j], want.tensors[j], dev);
          if (!diff.empty()) return {Outcome::fail, where + " element " + std::to_string(j) + ": " + diff};
        }
      }
    }
    for (const auto& set : values ? std::vector<fs::path>{} : sets) {
      std::map<std::string, Tensor> inputs;
      int k = 0;
      for (const auto& vi : model->inputs()) {
        const fs::path f = set / ("input_" + std::to_string(k++) + ".pb");
        if (!fs::exists(f)) return {Outcome::skip, "optional graph input without data"};
        inputs[vi.name] = from_proto(dev, read_tensor_file(f.string()));
      }
      auto outputs = model->run(inputs);
      for (std::size_t i = 0; i < model->outputs().size(); ++i) {
        const fs::path f = set / ("output_" + std::to_string(i) + ".pb");
        const std::string diff = compare(outputs.at(model->outputs()[i].name), read_tensor_file(f.string()), dev);
        if (!diff.empty())
          return {Outcome::fail, set.filename().string() + " output " + std::to_string(i) + ": " + diff};
      }
    }
  } catch (const Unsupported& e) {
    return {Outcome::skip, e.what()};
  } catch (const ModelError& e) {
    // Unsupported forms found only once shapes are known (e.g. a 3-D convolution) are skips.
    if (e.reason().find("not supported") != std::string::npos) return {Outcome::skip, e.reason()};
    return {Outcome::fail, e.what()};
  } catch (const gltensor::Error& e) {
    return {Outcome::fail, e.what()};
  }
  return {Outcome::pass, ""};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run ONNX backend test cases (model.onnx + test_data_set_*) through gltensor"};
  std::vector<std::string> dirs;
  std::string skips_md, filter;
  bool quiet = false;
  app.add_option("dirs", dirs, "case folders, or folders of case folders")->required();
  app.add_option("--skips", skips_md, "write the skip list (grouped by reason) as Markdown");
  app.add_option("--filter", filter, "only cases whose name contains this");
  app.add_flag("--quiet", quiet, "print only failures and the summary");
  CLI11_PARSE(app, argc, argv);
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  try {
    Device dev = Device::open();
    std::vector<fs::path> cases;
    for (const auto& d : dirs) {
      if (fs::exists(fs::path(d) / "model.onnx"))
        cases.push_back(d);
      else if (fs::is_directory(d))
        for (const auto& e : fs::directory_iterator(d))
          if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    }
    std::sort(cases.begin(), cases.end());
    int passed = 0, failed = 0, skipped = 0;
    std::map<std::string, std::vector<std::string>> by_reason;
    for (const auto& c : cases) {
      const std::string name = c.filename().string();
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      Result r;
      try {
        r = run_case(c, dev);
      } catch (const std::exception& e) {
        r = {Outcome::fail, e.what()};
      }
      if (r.outcome == Outcome::pass) {
        ++passed;
        if (!quiet) std::printf("PASS %s\n", name.c_str());
      } else if (r.outcome == Outcome::fail) {
        ++failed;
        std::printf("FAIL %s: %s\n", name.c_str(), r.reason.c_str());
      } else {
        ++skipped;
        if (!quiet) std::printf("SKIP %s: %s\n", name.c_str(), r.reason.c_str());
        by_reason[r.reason].push_back(name);
      }
    }
    if (!skips_md.empty()) {
      std::ofstream f(skips_md);
      f << "| reason | cases |\n|---|---|\n";
      for (const auto& [reason, names] : by_reason) {
        f << "| " << reason << " | ";
        for (std::size_t i = 0; i < names.size(); ++i) f << (i ? ", " : "") << names[i];
        f << " |\n";
      }
    }
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gltensor-onnx-test: %s\n", e.what());
    return 2;
  }
}
