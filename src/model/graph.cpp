#include "model/graph.hpp"

namespace gltensor::model {

std::string Attr::text() const {
  auto list = [](const auto& v) {
    std::string s = "[";
    for (std::size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
    return s + "]";
  };
  switch (type) {
    case kFloat:
      return std::to_string(f);
    case kInt:
      return std::to_string(i);
    case kString:
      return s;
    case kFloats:
      return list(floats);
    case kInts:
      return list(ints);
    case kStrings: {
      std::string r = "[";
      for (std::size_t k = 0; k < strings.size(); ++k) r += (k ? ", " : "") + strings[k];
      return r + "]";
    }
    case kTensor:
      return t ? "tensor " + to_string(t->shape) : "tensor";
    case kGraph:
      return "graph";
    default:
      return "?";
  }
}

int Graph::value(const std::string& name) {
  auto it = ids.find(name);
  if (it != ids.end()) return it->second;
  const int id = static_cast<int>(values.size());
  Value v;
  v.name = name;
  values.push_back(std::move(v));
  ids[name] = id;
  return id;
}

void Graph::recount() {
  for (auto& v : values) {
    v.uses = 0;
    v.producer = -1;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].removed) continue;
    for (int in : nodes[i].inputs)
      if (in >= 0) ++values[in].uses;
    for (int in : nodes[i].implicit) ++values[in].uses;
    for (int o : nodes[i].outputs)
      if (o >= 0) values[o].producer = static_cast<int>(i);
  }
}

std::string Graph::where(const Node& n) const {
  return file + ": node " + std::to_string(n.index) + " '" + n.name + "' (" + n.op_type + ")";
}

void Graph::fail(const Node& n, const std::string& reason) const {
  throw ModelError("gltensor::Model: " + where(n) + ": " + reason, reason);
}

void Graph::fail_attr(const Node& n, const std::string& attr, const std::string& why) const {
  const Attr* a = n.attrs.get(attr);
  fail(n, "attribute " + attr + (a ? "=" + a->text() : "") + ": " + why);
}

}  // namespace gltensor::model
