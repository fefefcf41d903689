// Model::run_host (model.hpp): a run from host data to host data, the small inputs written by the
// host into host-visible buffers that the kernels read in place, and (with ModelOptions::replay)
// the outputs written by the recording into host-visible buffers read back after one fence.
#include "model/model_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {

namespace {

[[noreturn]] void host_input_error(const Graph& g, const std::string& reason) {
  throw ModelError("gltensor::Model::run_host: " + g.file + ": " + reason, reason);
}

}  // namespace

std::map<std::string, HostOutput> Model::run_host(const Device& dev, const std::map<std::string, HostInput>& inputs,
                                                  RunStats* stats) const {
  const Impl& m = *impl_;
  if (!dev.impl()) throw ValueError("gltensor::Model::run_host: the device is not open");
  detail::Enter guard(*dev.impl(), "Model::run_host");
  DeviceState& ds = m.state_for(dev);
  std::map<std::string, Tensor> given;
  for (const auto& [name, h] : inputs) {
    std::int64_t n = 1;
    bool negative = false;
    for (auto d : h.shape) {
      negative = negative || d < 0;
      n *= d;
    }
    const std::size_t want = negative ? 0 : static_cast<std::size_t>(n) * itemsize(h.dtype);
    if (negative) host_input_error(m.g, "input '" + name + "' has a negative size in shape " + to_string(h.shape));
    if (h.nbytes != want || (h.nbytes > 0 && !h.data))
      host_input_error(m.g, "input '" + name + "' of shape " + to_string(h.shape) + " and dtype " +
                                dtype_name(h.dtype) + " needs " + std::to_string(want) + " bytes; given " +
                                std::to_string(h.nbytes) + (h.data ? "" : " at a null pointer"));
    bool known = false;  // an unknown name gets run()'s error
    for (const auto& vi : m.g.input_info) known = known || vi.name == name;
    if (!known) {
      given[name] = Tensor::from_bytes(dev, h.data, h.nbytes, h.shape, h.dtype);
      continue;
    }
    // A host-visible tensor per input, kept while its shape and dtype stay; written in place once
    // the work that read it last is done (Storage::upload).
    Tensor& t = ds.host_inputs[name];
    if (t.defined() && (t.shape() != h.shape || t.dtype() != h.dtype)) t = Tensor();
    if (!t.defined() && h.nbytes <= kDirectHostBytes)
      t = detail::alloc_host(*dev.impl(), h.shape, h.dtype, "Model::run_host");
    if (t.defined()) {
      t.impl()->storage->upload(h.data, h.nbytes);
      given[name] = t;
    } else {
      given[name] = Tensor::from_bytes(dev, h.data, h.nbytes, h.shape, h.dtype);
    }
  }
  std::map<std::string, HostOutput> out;
  for (auto& [name, t] : m.run(given, stats)) out[name] = HostOutput{t.shape(), t.dtype(), t.to_bytes()};
  return out;
}

}  // namespace gltensor
