// safetensors checkpoints (https://github.com/huggingface/safetensors format description):
// u64 little-endian header size N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets"}},
// then the raw little-endian tensor data.
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gltensor/autograd.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/nn.hpp"

namespace gltensor::nn {

namespace {
const char* st_dtype(DType d) {
  switch (d) {
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::i32:
      return "I32";
    case DType::u8:
      return "U8";
    case DType::bool_:
      return "BOOL";
  }
  return "F32";
}
DType from_st(const std::string& s, const std::string& path) {
  if (s == "F32") return DType::f32;
  if (s == "F16") return DType::f16;
  if (s == "BF16") return DType::bf16;
  if (s == "I32") return DType::i32;
  if (s == "U8") return DType::u8;
  if (s == "BOOL") return DType::bool_;
  throw DTypeError("gltensor::load_safetensors: " + path + ": unsupported dtype " + s);
}
}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  std::vector<std::vector<std::uint8_t>> blobs;
  std::size_t off = 0;
  for (const auto& [name, t] : tensors) {
    auto bytes = detach(t).to_bytes();
    h[name] = {{"dtype", st_dtype(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {off, off + bytes.size()}}};
    off += bytes.size();
    blobs.push_back(std::move(bytes));
  }
  std::string js = h.dump();
  while (js.size() % 8) js += ' ';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw ValueError("gltensor::save_safetensors: cannot open " + path + " for writing");
  const std::uint64_t n = js.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(js.data(), static_cast<std::streamsize>(js.size()));
  for (const auto& b : blobs) f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!f) throw ValueError("gltensor::save_safetensors: write to " + path + " failed");
}

std::map<std::string, Tensor> load_safetensors(const std::string& path, const Device& dev) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError("gltensor::load_safetensors: cannot open " + path);
  std::uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  if (!f || n == 0 || n > (100u << 20)) throw ValueError("gltensor::load_safetensors: " + path + ": bad header size");
  std::string js(n, '\0');
  f.read(js.data(), static_cast<std::streamsize>(n));
  if (!f) throw ValueError("gltensor::load_safetensors: " + path + ": truncated header");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(js);
  } catch (const std::exception& e) {
    throw ValueError("gltensor::load_safetensors: " + path + ": malformed JSON header: " + e.what());
  }
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<std::string, Tensor> out;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    try {
      const DType dt = from_st(it.value().at("dtype").get<std::string>(), path);
      const Shape shape = it.value().at("shape").get<Shape>();
      const auto offs = it.value().at("data_offsets").get<std::vector<std::size_t>>();
      if (offs.size() != 2 || offs[1] < offs[0] || offs[1] > data.size())
        throw ValueError("gltensor::load_safetensors: " + path + ": tensor '" + it.key() + "' lies outside the file");
      out[it.key()] = Tensor::from_bytes(dev, data.data() + offs[0], offs[1] - offs[0], shape, dt);
    } catch (const nlohmann::json::exception& e) {
      throw ValueError("gltensor::load_safetensors: " + path + ": bad entry '" + it.key() + "': " + e.what());
    }
  }
  return out;
}

std::map<std::string, Tensor> state_dict(Module& m) {
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : m.named_parameters()) out[n] = *t;
  for (auto& [n, t] : m.named_buffers()) out[n] = *t;
  return out;
}

void load_state_dict(Module& m, const std::map<std::string, Tensor>& tensors) {
  NoGradGuard ng;
  auto all = m.named_parameters();
  auto bufs = m.named_buffers();
  all.insert(all.end(), bufs.begin(), bufs.end());
  for (auto& [n, t] : all) {
    auto it = tensors.find(n);
    if (it == tensors.end()) throw ValueError("gltensor::load_state_dict: missing tensor '" + n + "'");
    if (it->second.shape() != t->shape())
      throw ShapeError("gltensor::load_state_dict: '" + n + "' has shape " + to_string(it->second.shape()) +
                       ", the module expects " + to_string(t->shape()));
    t->copy_(it->second);
  }
}

}  // namespace gltensor::nn
