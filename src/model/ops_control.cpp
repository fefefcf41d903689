// Control-flow ONNX ops: If, Loop, Scan (Scan-8 with its batch axis, Scan-9 and later). Their
// load-time checks type the subgraphs (outer values from the enclosing graph, undeclared input
// types from the node) and check the subgraphs' nodes; the executor (model.cpp) runs them: If
// reads its condition (on the host when a shape subgraph computed it, else one read-back) and
// runs the branch, Loop and Scan run their body per iteration. An If whose condition is a
// constant is replaced by its branch at load (planner.cpp, inline_ifs).
#include "model/ops.hpp"
#include "model/planner.hpp"

namespace gltensor::model {

namespace {

// Types subgraph `attr` of the node and checks its nodes; `in_elems` are the element types of
// its inputs where the subgraph leaves them undeclared, `in_kinds` their kinds (a declared kind
// must match: a sequence carried by a Loop is a sequence in its body).
Graph& type_subgraph(const CheckCtx& c, const char* attr, const std::vector<int>& in_elems,
                     const std::vector<ValueKind>& in_kinds) {
  const Attr* a = c.attrs().get(attr);
  if (!a || !a->g) c.fail_attr(attr, "expected a graph");
  Graph& sg = *a->g;
  for (int o : sg.outer) {
    auto it = c.g.ids.find(sg.values[o].name);
    if (it == c.g.ids.end())
      c.fail("subgraph " + std::string(attr) + " reads '" + sg.values[o].name + "', which is not defined");
    sg.values[o].elem = c.g.values[it->second].elem;
    sg.values[o].kind = c.g.values[it->second].kind;
  }
  if (in_elems.size() != sg.inputs.size())
    c.fail_attr(attr, "the subgraph has " + std::to_string(sg.inputs.size()) + " inputs, expected " +
                          std::to_string(in_elems.size()));
  for (std::size_t k = 0; k < sg.inputs.size(); ++k) {
    Value& v = sg.values[sg.inputs[k]];
    if (v.elem == kUndefined) {
      v.elem = in_elems[k];
      v.kind = in_kinds[k];
    } else if (v.kind != in_kinds[k]) {
      c.fail_attr(attr, "subgraph input '" + v.name + "' is declared " + kind_name(v.kind) + ", the node gives " +
                            kind_name(in_kinds[k]));
    }
    if (!elem_supported(v.elem)) c.fail_attr(attr, "subgraph input '" + v.name + "': dtype " + elem_name(v.elem));
    sg.input_info[k].dtype = elem_dtype(v.elem);
    sg.input_info[k].kind = v.kind;
  }
  try {
    check_and_type(sg);
  } catch (const ModelError& e) {
    // "gltensor::Model: FILE: node ...: reason" -> "subgraph ATTR: node ...: reason"
    std::string w = e.what();
    const std::string prefix = "gltensor::Model: " + c.g.file + ": ";
    if (w.rfind(prefix, 0) == 0) w = w.substr(prefix.size());
    c.fail("subgraph " + std::string(attr) + ": " + w);
  }
  for (int o : sg.outputs)
    if (sg.values[o].elem == kUndefined) c.fail_attr(attr, "the type of output '" + sg.values[o].name + "' is unknown");
  return sg;
}

std::vector<int> out_elems(const Graph& sg, std::size_t from) {
  std::vector<int> r;
  for (std::size_t k = from; k < sg.outputs.size(); ++k) r.push_back(sg.values[sg.outputs[k]].elem);
  return r;
}

std::vector<ValueKind> out_kinds(const Graph& sg, std::size_t from) {
  std::vector<ValueKind> r;
  for (std::size_t k = from; k < sg.outputs.size(); ++k) r.push_back(sg.values[sg.outputs[k]].kind);
  return r;
}

void check_if(const CheckCtx& c) {
  if ((c.elem(0) != kBool && c.elem(0) != kUndefined) || c.kind(0) != ValueKind::tensor)
    c.fail("the condition must be a bool tensor");
  for (const char* b : {"then_branch", "else_branch"}) {
    const Graph& sg = type_subgraph(c, b, {}, {});
    if (sg.outputs.size() != c.n.outputs.size())
      c.fail_attr(b, "the branch has " + std::to_string(sg.outputs.size()) + " outputs, the node " +
                         std::to_string(c.n.outputs.size()));
  }
  const auto then_kinds = out_kinds(*c.attrs().get("then_branch")->g, 0);
  const auto else_kinds = out_kinds(*c.attrs().get("else_branch")->g, 0);
  for (std::size_t k = 0; k < then_kinds.size(); ++k)
    if (then_kinds[k] != else_kinds[k])
      c.fail("output " + std::to_string(k) + " is " + kind_name(then_kinds[k]) + " in then_branch, " +
             kind_name(else_kinds[k]) + " in else_branch");
}

void check_loop(const CheckCtx& c) {
  if (c.n.inputs.size() < 2) c.fail("Loop needs the inputs M and cond (either may be empty)");
  if (!c.has_input(0) && !c.has_input(1)) c.fail("a Loop without a trip count M and a condition never ends");
  if (c.kind(0) != ValueKind::tensor || c.kind(1) != ValueKind::tensor)
    c.fail("the trip count M and the condition must be tensors");
  std::vector<int> in{kInt64, kBool};
  std::vector<ValueKind> kinds(2, ValueKind::tensor);
  for (std::size_t k = 2; k < c.n.inputs.size(); ++k) {
    if (!c.has_input(k)) c.fail("an omitted loop-carried input is not supported");
    in.push_back(c.elem(k));
    kinds.push_back(c.kind(k));
  }
  const Graph& sg = type_subgraph(c, "body", in, kinds);
  const std::size_t N = c.n.inputs.size() - 2;
  if (sg.outputs.size() < 1 + N) c.fail_attr("body", "the body has fewer outputs than 1 + loop-carried values");
  // (Loop-16: an optional carried in may come out as what it holds, as exporters write it)
  const auto holds = [](ValueKind opt, ValueKind k) {
    return (opt == ValueKind::optional_tensor && k == ValueKind::tensor) ||
           (opt == ValueKind::optional_sequence && k == ValueKind::sequence);
  };
  for (std::size_t k = 0; k < N; ++k)
    if (sg.values[sg.outputs[1 + k]].kind != kinds[2 + k] && !holds(kinds[2 + k], sg.values[sg.outputs[1 + k]].kind))
      c.fail_attr("body", "loop-carried value " + std::to_string(k) + " goes in as " + kind_name(kinds[2 + k]) +
                              " and comes out as " + kind_name(sg.values[sg.outputs[1 + k]].kind));
  for (std::size_t k = 1 + N; k < sg.outputs.size(); ++k)
    if (sg.values[sg.outputs[k]].kind != ValueKind::tensor)
      c.fail_attr("body", "scan output '" + sg.values[sg.outputs[k]].name + "' is " +
                              kind_name(sg.values[sg.outputs[k]].kind) + " (scan outputs stack tensors)");
  if (c.n.outputs.size() != sg.outputs.size() - 1)
    c.fail_attr("body", "the body has " + std::to_string(sg.outputs.size()) + " outputs, expected the node's " +
                            std::to_string(c.n.outputs.size()) + " + 1");
}

void check_scan(const CheckCtx& c) {
  const bool v8 = c.opset() < 9;
  const std::size_t first = v8 ? 1 : 0;
  const std::int64_t M = c.attrs().i("num_scan_inputs", 0);
  if (M < 1 || static_cast<std::size_t>(M) + first > c.n.inputs.size())
    c.fail_attr("num_scan_inputs", "expected 1 to the number of inputs");
  std::vector<int> in;
  for (std::size_t k = first; k < c.n.inputs.size(); ++k) {
    if (!c.has_input(k)) c.fail("an omitted state or scan input is not supported");
    in.push_back(c.elem(k));
  }
  const Graph& sg = type_subgraph(c, "body", in, std::vector<ValueKind>(in.size(), ValueKind::tensor));
  for (int o : sg.outputs)
    if (sg.values[o].kind != ValueKind::tensor)
      c.fail_attr("body",
                  "output '" + sg.values[o].name + "' is " + kind_name(sg.values[o].kind) + " (Scan takes tensors)");
  const std::size_t N = in.size() - static_cast<std::size_t>(M);
  if (sg.outputs.size() < N || c.n.outputs.size() != sg.outputs.size())
    c.fail_attr("body", "the body's outputs do not match the node's");
  if (v8 && c.has_input(0)) c.fail("Scan-8 with sequence_lens is not supported");
  if (v8 && (c.attrs().has("scan_input_axes") || c.attrs().has("scan_output_axes")))
    c.fail("Scan-8 has no scan axes attributes");
}

}  // namespace

void register_control_ops(Registry& m) {
  m["If"] = OpDef{{"then_branch", "else_branch"},
                  check_if,
                  [](const CheckCtx& c) { return out_elems(*c.attrs().get("then_branch")->g, 0); },
                  nullptr};
  m["If"].kinds = [](const CheckCtx& c) { return out_kinds(*c.attrs().get("then_branch")->g, 0); };
  m["Loop"] =
      OpDef{{"body"}, check_loop, [](const CheckCtx& c) { return out_elems(*c.attrs().get("body")->g, 1); }, nullptr};
  m["Loop"].kinds = [](const CheckCtx& c) { return out_kinds(*c.attrs().get("body")->g, 1); };
  m["Scan"] = OpDef{{"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
                     "scan_output_directions", "directions"},
                    check_scan,
                    [](const CheckCtx& c) { return out_elems(*c.attrs().get("body")->g, 0); },
                    nullptr};
}

}  // namespace gltensor::model
