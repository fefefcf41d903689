// Reductions: Reduce*, ArgMax/ArgMin, CumSum.
#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "model/ops.hpp"

namespace gltensor::model {

namespace {

Tensor as(const Tensor& r, DType d) { return r.dtype() == d ? r : r.to(d); }

// The axes come from the attribute (ReduceSum before 13, the others before 18) or from the
// optional input 1 (later versions); none or an empty list: every axis, or the identity with
// noop_with_empty_axes.
Ts reduce(Args& a, const std::string& kind) {
  Dims axes;
  if (a.attrs.has("axes"))
    axes = a.attrs.ints("axes");
  else if (a.present(1))
    axes = a.ints(1);
  const bool keep = a.attrs.i("keepdims", 1) != 0;
  const Tensor& t = a.t(0);
  if (axes.empty() && a.attrs.i("noop_with_empty_axes", 0)) return Ts{t};
  if (axes.empty())
    for (std::int64_t d = 0; d < t.dim(); ++d) axes.push_back(d);
  for (auto& ax : axes) ax = norm_axis(a, ax, t.dim());
  const DType dt = t.dtype();
  if (dt == DType::bool_ && (kind == "max" || kind == "min"))  // ReduceMax/Min-20 on bool: any/all
    return Ts{kind == "max" ? any(t, axes, keep) : all(t, axes, keep)};
  if (kind == "sum") return Ts{as(sum(t, axes, keep), dt)};
  if (kind == "mean") return Ts{mean(t, axes, keep)};
  if (kind == "max") return Ts{amax(t, axes, keep)};
  if (kind == "min") return Ts{amin(t, axes, keep)};
  if (kind == "prod") return Ts{as(prod(t, axes, keep), dt)};
  if (kind == "l1") return Ts{as(norm(t, 1, axes, keep), dt)};
  if (kind == "l2") return Ts{as(norm(t, 2, axes, keep), dt)};
  if (kind == "logsumexp") return Ts{logsumexp(t, axes, keep)};
  if (kind == "logsum") return Ts{log(sum(t, axes, keep))};
  return Ts{as(sum(mul(t, t), axes, keep), dt)};  // sumsquare
}

void reduce_op(Registry& m, const std::string& op, const std::string& kind, bool float_only) {
  OpDef d;
  d.attrs = {"axes", "keepdims", "noop_with_empty_axes"};
  // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
  const int input_axes_from = op == "ReduceSum" ? 13 : 18;
  d.check = [float_only, input_axes_from](const CheckCtx& c) {
    if (float_only) c.need_float(0);
    if (c.opset() >= input_axes_from && c.attrs().has("axes"))
      c.fail_attr("axes", "an attribute only before opset " + std::to_string(input_axes_from) + " (an input since)");
    if (c.opset() < input_axes_from && c.has_input(1))
      c.fail("the axes input needs opset " + std::to_string(input_axes_from));
  };
  d.run = [kind](Args& a) { return reduce(a, kind); };
  if (op != "ReduceSum") d.versions = {18};                   // ReduceSum's axes input came in 13
  if (kind == "max" || kind == "min") d.versions = {18, 20};  // 20: bool inputs
  m[op] = std::move(d);
}

OpDef arg_op(bool is_max) {
  OpDef d;
  d.attrs = {"axis", "keepdims", "select_last_index"};
  d.types = [](const CheckCtx&) { return std::vector<int>{kInt64}; };
  d.run = [is_max](Args& a) {
    const Tensor& x = a.t(0);
    const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), x.dim());
    const bool keep = a.attrs.i("keepdims", 1) != 0;
    if (a.attrs.i("select_last_index", 0)) {  // the last extremum = the first one of the flipped dim
      Tensor f = flip(x, {axis});
      Tensor i = is_max ? argmax(f, axis, keep) : argmin(f, axis, keep);
      return Ts{sub(static_cast<double>(x.size(axis) - 1), i)};
    }
    return Ts{is_max ? argmax(x, axis, keep) : argmin(x, axis, keep)};
  };
  return d;
}

}  // namespace

void register_reduce_ops(Registry& m) {
  reduce_op(m, "ReduceSum", "sum", false);
  reduce_op(m, "ReduceMean", "mean", true);
  reduce_op(m, "ReduceMax", "max", false);
  reduce_op(m, "ReduceMin", "min", false);
  reduce_op(m, "ReduceProd", "prod", false);
  reduce_op(m, "ReduceL1", "l1", false);
  reduce_op(m, "ReduceL2", "l2", false);
  reduce_op(m, "ReduceLogSumExp", "logsumexp", true);
  reduce_op(m, "ReduceLogSum", "logsum", true);
  reduce_op(m, "ReduceSumSquare", "sumsquare", false);
  m["ArgMax"] = arg_op(true);
  m["ArgMin"] = arg_op(false);
  m["CumSum"] = OpDef{{"exclusive", "reverse"}, nullptr, nullptr, [](Args& a) {
                        const Tensor& x = a.t(0);
                        const std::int64_t axis = norm_axis(a, a.ints(1).at(0), x.dim());
                        const bool rev = a.attrs.i("reverse", 0) != 0;
                        Tensor in = rev ? flip(x, {axis}) : x;
                        Tensor r = as(cumsum(in, axis), x.dtype());
                        if (a.attrs.i("exclusive", 0)) r = as(sub(r, in), x.dtype());
                        return Ts{rev ? flip(r, {axis}) : r};
                      }};
}

}  // namespace gltensor::model
