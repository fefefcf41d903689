// ONNX sequences and optionals (opsets 11 to 21): SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceAt, SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence, Optional,
// OptionalHasElement, OptionalGetElement, and Identity over them. A sequence is a host-side list
// of GPU tensors (RtValue::seq: each of its own shape, all of the value's element type), an
// optional either empty (RtValue::none) or the tensor / sequence it holds. The ops only rearrange
// the list; ConcatFromSequence and SplitToSequence run the existing concat / stack / split (no
// kernel of their own). Load-time checks type the values (Value::kind, Value::elem) and refuse
// mixed element types; run-time positions out of range and empty optionals read fail naming the
// node and the value. SequenceMap is not mapped (a ModelError at load).
#include "gltensor/indexing.hpp"
#include "model/ops.hpp"

namespace gltensor::model {

namespace {

using Kinds = std::vector<ValueKind>;
using Vals = std::vector<RtValue>;
using I64s = std::vector<std::int64_t>;

// "'name'" of input i of the node.
std::string in_name(const Graph& g, const Node& n, std::size_t i) {
  return i < n.inputs.size() && n.inputs[i] >= 0 ? "'" + g.values[n.inputs[i]].name + "'" : "(omitted)";
}

// Fails unless input i has kind k.
void need_kind(const CheckCtx& c, std::size_t i, ValueKind k) {
  if (!c.has_input(i)) c.fail("input " + std::to_string(i) + " is missing");
  if (c.kind(i) != k)
    c.fail("input " + in_name(c.g, c.n, i) + " is " + kind_name(c.kind(i)) + ", expected " + kind_name(k));
}

// Sequence ops: opset 11 on; input 0 a sequence (when `seq0`); a position input p (-1: none)
// of int32 / int64.
void check_seq(const CheckCtx& c, bool seq0, int p) {
  if (c.opset() < 11)
    c.fail("op " + c.n.op_type + " needs opset 11 or later (the model imports " + std::to_string(c.opset()) + ")");
  if (seq0) need_kind(c, 0, ValueKind::sequence);
  if (p >= 0 && c.has_input(static_cast<std::size_t>(p))) {
    need_kind(c, static_cast<std::size_t>(p), ValueKind::tensor);
    const int e = c.elem(static_cast<std::size_t>(p));
    if (e != kInt64 && e != kInt32 && e != kUndefined)
      c.fail("position " + in_name(c.g, c.n, static_cast<std::size_t>(p)) + " must be int32 or int64, not " +
             elem_name(e));
  }
}

// Input 1 (a tensor) must have the element type of the sequence, input 0.
void check_same_elem(const CheckCtx& c) {
  need_kind(c, 1, ValueKind::tensor);
  if (c.elem(0) != kUndefined && c.elem(1) != kUndefined && c.elem(0) != c.elem(1))
    c.fail("the tensor " + in_name(c.g, c.n, 1) + " is " + elem_name(c.elem(1)) + ", the sequence " +
           in_name(c.g, c.n, 0) + " holds " + elem_name(c.elem(0)));
}

// The sequence of input i.
const std::vector<Tensor>& seq_of(Args& a, std::size_t i) {
  const RtValue& v = a.value(i);
  if (!v.seq) a.fail("input " + in_name(a.g, a.node, i) + " is not a sequence");
  return *v.seq;
}

RtValue make_seq(std::vector<Tensor> ts) {
  RtValue r;
  r.seq = std::make_shared<const std::vector<Tensor>>(std::move(ts));
  return r;
}

RtValue host_scalar(double x, int elem) {
  RtValue r;
  r.host = std::make_shared<HostTensor>(HostTensor::scalar(x, elem));
  return r;
}

// The position of input p (default `def` when omitted) in a sequence of n, in [-n, hi]: made
// non-negative; out of range fails naming the node, the position and the sequence.
std::int64_t position(Args& a, std::size_t p, std::int64_t n, std::int64_t hi, std::int64_t def) {
  std::int64_t pos = def;
  if (a.present(p)) {
    const HostTensor& h = a.h(p);
    if (h.v.size() != 1)
      a.fail("position " + in_name(a.g, a.node, p) + " must be a scalar, got shape " + to_string(h.shape));
    pos = static_cast<std::int64_t>(h.v[0]);
  }
  if (pos < -n || pos > hi)
    a.fail("position " + std::to_string(pos) + " is out of range [" + std::to_string(-n) + ", " + std::to_string(hi) +
           "] for the sequence " + in_name(a.g, a.node, 0) + " of length " + std::to_string(n));
  return pos < 0 ? pos + n : pos;
}

std::vector<Tensor> split_to_sequence(Args& a) {
  const Tensor x = a.t(0);
  if (x.dim() == 0) a.fail("input " + in_name(a.g, a.node, 0) + " is a scalar (nothing to split)");
  const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), x.dim());
  const std::int64_t len = x.size(axis);
  std::vector<Tensor> parts;
  if (a.present(1)) {
    const HostTensor& s = a.h(1);
    const I64s sizes = s.ints();
    if (s.shape.empty()) {  // one size: pieces of it, the last one smaller
      if (sizes[0] <= 0) a.fail("split " + std::to_string(sizes[0]) + " must be positive");
      if (len > 0) parts = split(x, sizes[0], axis);
    } else {
      std::int64_t sum = 0;
      for (auto v : sizes) {
        if (v < 0) a.fail("split sizes must not be negative: " + to_string(Shape(sizes)));
        sum += v;
      }
      if (sum != len)
        a.fail("split sizes " + to_string(Shape(sizes)) + " sum to " + std::to_string(sum) + ", dim " +
               std::to_string(axis) + " of " + to_string(x.shape()) + " is " + std::to_string(len));
      parts = split(x, sizes, axis);
    }
  } else if (len > 0) {  // pieces of one, the axis dropped unless keepdims
    parts = split(x, std::int64_t{1}, axis);
    if (a.attrs.i("keepdims", 1) == 0) {
      Shape s = x.shape();
      s.erase(s.begin() + axis);
      for (auto& p : parts) p = p.contiguous().reshape(s);
    }
  }
  for (auto& p : parts) p = p.contiguous();
  return parts;
}

Tensor concat_from_sequence(Args& a) {
  const std::vector<Tensor>& ts = seq_of(a, 0);
  if (!a.attrs.has("axis")) a.fail("attribute axis is required");
  if (ts.empty()) a.fail("the sequence " + in_name(a.g, a.node, 0) + " is empty (nothing to concatenate)");
  const bool new_axis = a.attrs.i("new_axis", 0) != 0;
  const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), ts[0].dim() + (new_axis ? 1 : 0));
  return new_axis ? stack(ts, axis) : concat(ts, axis);
}

}  // namespace

std::string kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::tensor:
      return "a tensor";
    case ValueKind::sequence:
      return "a sequence";
    case ValueKind::optional_tensor:
      return "an optional tensor";
    case ValueKind::optional_sequence:
      return "an optional sequence";
  }
  return "?";
}

void register_sequence_ops(Registry& m) {
  const auto seq_kind = [](const CheckCtx&) { return Kinds{ValueKind::sequence}; };
  const auto tensor_kind = [](const CheckCtx&) { return Kinds{ValueKind::tensor}; };
  m["SequenceEmpty"] =
      OpDef{{"dtype"},
            [](const CheckCtx& c) {
              check_seq(c, false, -1);
              const int e = static_cast<int>(c.attrs().i("dtype", kFloat));
              if (!elem_supported(e)) c.fail_attr("dtype", "dtype " + elem_name(e) + " is not supported");
            },
            [](const CheckCtx& c) { return std::vector<int>{static_cast<int>(c.attrs().i("dtype", kFloat))}; },
            nullptr};
  m["SequenceEmpty"].values = [](Args&) { return Vals{make_seq({})}; };
  m["SequenceConstruct"] =
      OpDef{{},
            [](const CheckCtx& c) {
              check_seq(c, false, -1);
              if (c.n.inputs.empty()) c.fail("SequenceConstruct needs at least one input");
              for (std::size_t i = 0; i < c.n.inputs.size(); ++i) {
                need_kind(c, i, ValueKind::tensor);
                if (c.elem(i) != c.elem(0))
                  c.fail("inputs of mixed element types: " + in_name(c.g, c.n, 0) + " is " + elem_name(c.elem(0)) +
                         ", " + in_name(c.g, c.n, i) + " is " + elem_name(c.elem(i)));
              }
            },
            nullptr,
            nullptr};
  m["SequenceConstruct"].values = [](Args& a) {
    std::vector<Tensor> ts;
    for (std::size_t i = 0; i < a.size(); ++i) ts.push_back(a.t(i));
    return Vals{make_seq(std::move(ts))};
  };
  m["SequenceInsert"] = OpDef{{},
                              [](const CheckCtx& c) {
                                check_seq(c, true, 2);
                                check_same_elem(c);
                              },
                              nullptr,
                              nullptr};
  m["SequenceInsert"].values = [](Args& a) {
    std::vector<Tensor> ts = seq_of(a, 0);
    const auto n = static_cast<std::int64_t>(ts.size());
    const std::int64_t pos = position(a, 2, n, n, n);
    ts.insert(ts.begin() + pos, a.t(1));
    return Vals{make_seq(std::move(ts))};
  };
  m["SequenceAt"] = OpDef{{}, [](const CheckCtx& c) { check_seq(c, true, 1); }, nullptr, nullptr};
  m["SequenceAt"].values = [](Args& a) {
    const std::vector<Tensor>& ts = seq_of(a, 0);
    const auto n = static_cast<std::int64_t>(ts.size());
    if (!a.present(1)) a.fail("the position input is missing");
    RtValue r;
    r.gpu = ts[static_cast<std::size_t>(position(a, 1, n, n - 1, 0))];
    return Vals{r};
  };
  m["SequenceErase"] = OpDef{{}, [](const CheckCtx& c) { check_seq(c, true, 1); }, nullptr, nullptr};
  m["SequenceErase"].values = [](Args& a) {
    std::vector<Tensor> ts = seq_of(a, 0);
    const auto n = static_cast<std::int64_t>(ts.size());
    ts.erase(ts.begin() + position(a, 1, n, n - 1, n - 1));
    return Vals{make_seq(std::move(ts))};
  };
  m["SequenceLength"] = OpDef{{},
                              [](const CheckCtx& c) { check_seq(c, true, -1); },
                              [](const CheckCtx&) { return std::vector<int>{kInt64}; },
                              nullptr};
  m["SequenceLength"].values = [](Args& a) {
    return Vals{host_scalar(static_cast<double>(seq_of(a, 0).size()), kInt64)};
  };
  m["ConcatFromSequence"] = OpDef{{"axis", "new_axis"},
                                  [](const CheckCtx& c) {
                                    check_seq(c, true, -1);
                                    if (!c.attrs().has("axis")) c.fail_attr("axis", "required");
                                  },
                                  nullptr,
                                  nullptr};
  m["ConcatFromSequence"].values = [](Args& a) {
    RtValue r;
    r.gpu = concat_from_sequence(a);
    return Vals{r};
  };
  m["SplitToSequence"] = OpDef{{"axis", "keepdims"},
                               [](const CheckCtx& c) {
                                 check_seq(c, false, 1);
                                 need_kind(c, 0, ValueKind::tensor);
                               },
                               nullptr,
                               nullptr};
  m["SplitToSequence"].values = [](Args& a) { return Vals{make_seq(split_to_sequence(a))}; };
  for (const char* op : {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SplitToSequence"})
    m[op].kinds = seq_kind;
  for (const char* op : {"SequenceAt", "SequenceLength", "ConcatFromSequence"}) m[op].kinds = tensor_kind;

  // Optionals (opset 15 on).
  const auto check_opt = [](const CheckCtx& c) {
    if (c.opset() < 15)
      c.fail("op " + c.n.op_type + " needs opset 15 or later (the model imports " + std::to_string(c.opset()) + ")");
  };
  m["Optional"] = OpDef{
      {"type"},
      [check_opt](const CheckCtx& c) {
        check_opt(c);
        if (c.has_input(0)) {
          if (c.kind(0) != ValueKind::tensor && c.kind(0) != ValueKind::sequence)
            c.fail("input " + in_name(c.g, c.n, 0) + " is " + kind_name(c.kind(0)) +
                   " (an optional of an optional is not supported)");
          return;
        }
        const Attr* t = c.attrs().get("type");
        if (!t) c.fail("an Optional without an input needs the attribute type");
        if (!t->tp_error.empty()) c.fail_attr("type", t->tp_error);
        if (t->tp_kind != ValueKind::tensor && t->tp_kind != ValueKind::sequence)
          c.fail_attr("type", "an optional of an optional is not supported");
      },
      [](const CheckCtx& c) { return std::vector<int>{c.has_input(0) ? c.elem(0) : c.attrs().get("type")->tp_elem}; },
      nullptr};
  m["Optional"].kinds = [](const CheckCtx& c) {
    const ValueKind k = c.has_input(0) ? c.kind(0) : c.attrs().get("type")->tp_kind;
    return Kinds{k == ValueKind::sequence ? ValueKind::optional_sequence : ValueKind::optional_tensor};
  };
  m["Optional"].values = [](Args& a) {
    RtValue r;
    if (a.present(0))
      r = a.value(0);
    else
      r.none = true;
    return Vals{r};
  };
  // Opset 15 to 17: an optional input; 18 on: a tensor or a sequence too (or none: false).
  const auto check_opt_in = [check_opt](const CheckCtx& c) {
    check_opt(c);
    const bool v18 = c.version() >= 18;
    if (!c.has_input(0)) {
      if (!v18 || c.n.op_type == "OptionalGetElement") c.fail("input 0 is missing");
      return;
    }
    const ValueKind k = c.kind(0);
    if (!v18 && k != ValueKind::optional_tensor && k != ValueKind::optional_sequence)
      c.fail("input " + in_name(c.g, c.n, 0) + " is " + kind_name(k) + ", expected an optional (opset " +
             std::to_string(c.opset()) + ")");
  };
  m["OptionalHasElement"] = OpDef{{}, check_opt_in, [](const CheckCtx&) { return std::vector<int>{kBool}; }, nullptr};
  m["OptionalHasElement"].kinds = tensor_kind;
  m["OptionalHasElement"].values = [](Args& a) {
    return Vals{host_scalar(a.present(0) && !a.value(0).none ? 1 : 0, kBool)};
  };
  m["OptionalGetElement"] = OpDef{{}, check_opt_in, nullptr, nullptr};
  m["OptionalGetElement"].kinds = [](const CheckCtx& c) {
    const ValueKind k = c.kind(0);
    return Kinds{k == ValueKind::optional_sequence ? ValueKind::sequence
                 : k == ValueKind::sequence        ? ValueKind::sequence
                                                   : ValueKind::tensor};
  };
  m["OptionalGetElement"].values = [](Args& a) {
    RtValue r = a.value(0);
    if (r.none) a.fail("the optional " + in_name(a.g, a.node, 0) + " is empty");
    return Vals{r};
  };
  for (const char* op : {"OptionalHasElement", "OptionalGetElement"}) m[op].versions = {18};

  // Identity passes any kind through (its tensor form stays ops_elementwise.cpp's).
  m["Identity"].kinds = [](const CheckCtx& c) { return Kinds{c.kind(0)}; };
  m["Identity"].values = [](Args& a) { return Vals{a.value(0)}; };
}

}  // namespace gltensor::model
