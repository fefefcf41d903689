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
    case DType::i8:
      return "I8";
    case DType::bool_:
      return "BOOL";
  }
  return "F32";
}
DType from_st(const std::string& s, const std::string& what) {
  if (s == "F32") return DType::f32;
  if (s == "F16") return DType::f16;
  if (s == "BF16") return DType::bf16;
  if (s == "I32") return DType::i32;
  if (s == "U8") return DType::u8;
  if (s == "I8") return DType::i8;
  if (s == "BOOL") return DType::bool_;
  throw DTypeError(what + "unsupported dtype " + s + " (F32, F16, BF16, I32, U8, I8, BOOL)");
}

using Json = nlohmann::json;

std::string excerpt(const Json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

const Json& field(const Json& entry, const char* name, const std::string& what) {
  const auto it = entry.find(name);
  if (it == entry.end()) throw ValueError(what + "missing \"" + name + "\"");
  return *it;
}

// A JSON list of non-negative integers (floats such as 2.5 are not silently truncated).
std::vector<std::int64_t> uint_list(const Json& v, const char* name, const std::string& what) {
  std::vector<std::int64_t> out;
  if (v.is_array())
    for (const Json& x : v) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 0) break;
      out.push_back(x.get<std::int64_t>());
    }
  if (!v.is_array() || out.size() != v.size())
    throw ValueError(what + "\"" + name + "\" must be a list of non-negative integers, got " + excerpt(v));
  return out;
}

// Rethrows the current gltensor error with `prefix` (file and tensor) before its message, same type.
[[noreturn]] void rethrow_with(const std::string& prefix) {
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const LimitError& e) {
    throw LimitError(prefix + e.what());
  } catch (const DTypeError& e) {
    throw DTypeError(prefix + e.what());
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  } catch (const Error& e) {
    throw ValueError(prefix + e.what());
  }
}

Tensor load_entry(const Device& dev, const Json& entry, const std::vector<char>& data, const std::string& what) {
  if (!entry.is_object()) throw ValueError(what + "the entry must be a JSON object, got " + excerpt(entry));
  const Json& dt = field(entry, "dtype", what);
  if (!dt.is_string()) throw ValueError(what + "\"dtype\" must be a string, got " + excerpt(dt));
  const DType dtype = from_st(dt.get<std::string>(), what);
  const std::vector<std::int64_t> shape = uint_list(field(entry, "shape", what), "shape", what);
  const std::vector<std::int64_t> offs = uint_list(field(entry, "data_offsets", what), "data_offsets", what);
  if (offs.size() != 2 || offs[1] < offs[0] || static_cast<std::uint64_t>(offs[1]) > data.size())
    throw ValueError(what + "data_offsets " + excerpt(field(entry, "data_offsets", what)) +
                     " must be [begin, end] with begin <= end <= " + std::to_string(data.size()) +
                     " (the data's size)");
  try {
    return Tensor::from_bytes(dev, data.data() + offs[0], static_cast<std::size_t>(offs[1] - offs[0]), shape, dtype);
  } catch (const Error&) {
    rethrow_with(what);
  }
}
}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  save_safetensors(path, tensors, {});
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
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

namespace {
// Opens `path` and parses its JSON header; f is left at the start of the data.
Json read_header(const std::string& path, std::ifstream& f) {
  const std::string where = "gltensor::load_safetensors: " + path + ": ";
  f.open(path, std::ios::binary | std::ios::ate);
  if (!f) throw ValueError("gltensor::load_safetensors: cannot open " + path);
  const auto file_size = static_cast<std::uint64_t>(f.tellg());
  f.seekg(0);
  std::uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  if (!f || n == 0 || n > (100u << 20) || n > file_size - 8)
    throw ValueError(where + "bad header size " + std::to_string(n) + " (file of " + std::to_string(file_size) +
                     " bytes, at most 100 MiB of header)");
  std::string js(n, '\0');
  f.read(js.data(), static_cast<std::streamsize>(n));
  if (!f) throw ValueError(where + "truncated header");
  Json h;
  try {
    h = Json::parse(js);
  } catch (const std::exception& e) {
    throw ValueError(where + "malformed JSON header: " + e.what());
  }
  if (!h.is_object()) throw ValueError(where + "the header must be a JSON object, got " + excerpt(h));
  return h;
}
}  // namespace

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  std::ifstream f;
  const Json h = read_header(path, f);
  std::map<std::string, std::string> out;
  const auto it = h.find("__metadata__");
  if (it == h.end()) return out;
  if (!it->is_object())
    throw ValueError("gltensor::load_safetensors: " + path + ": __metadata__ must be an object, got " + excerpt(*it));
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string())
      throw ValueError("gltensor::load_safetensors: " + path + ": __metadata__ \"" + k + "\" must be a string, got " +
                       excerpt(v));
    out[k] = v.get<std::string>();
  }
  return out;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path, const Device& dev) {
  const std::string where = "gltensor::load_safetensors: " + path + ": ";
  std::ifstream f;
  const Json h = read_header(path, f);
  const std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<std::string, Tensor> out;
  for (const auto& [name, entry] : h.items()) {
    if (name == "__metadata__") continue;
    out[name] = load_entry(dev, entry, data, where + "tensor '" + name + "': ");
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
