// Recurrent ONNX ops: LSTM, GRU, RNN (every attribute of the spec: direction, activations with
// activation_alpha/activation_beta, clip, sequence_lens, initial_h/initial_c, peepholes, layout,
// input_forget, linear_before_reset), on the GPU through detail::rnn_forward (src/nn/rnn.hpp):
// X @ W^T of all steps in one matmul, then the time loop: one dispatch per chunk of steps (the
// sequence kernel) for small layers, else per step one fused dispatch (GPUs: the recurrent GEMV
// and the cell) or a batched matmul and a gate kernel (nn/rnn_plan.hpp chooses).
#include "model/ops.hpp"
#include "nn/rnn.hpp"

namespace gltensor::model {

namespace {

using detail::RnnCell;

std::size_t acts_per_direction(RnnCell cell) { return cell == RnnCell::lstm ? 3 : cell == RnnCell::gru ? 2 : 1; }

int directions(const Attrs& at) { return at.s("direction", "forward") == "bidirectional" ? 2 : 1; }

// The activations of every direction with their alpha and beta (consumed in order by the
// activations that take them, as ONNX Runtime reads activation_alpha / activation_beta).
std::vector<detail::RnnActivation> activations(const Attrs& at, RnnCell cell) {
  const std::size_t per = acts_per_direction(cell);
  const int D = directions(at);
  std::vector<std::string> names;
  if (const Attr* a = at.get("activations")) {
    names = a->strings;
  } else {
    const std::vector<std::string> def = cell == RnnCell::lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                         : cell == RnnCell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string>{"Tanh"};
    for (int d = 0; d < D; ++d) names.insert(names.end(), def.begin(), def.end());
  }
  if (names.size() == per && D == 2) names.insert(names.end(), names.begin(), names.end());
  const std::vector<double> alphas = at.floats("activation_alpha"), betas = at.floats("activation_beta");
  std::size_t ia = 0, ib = 0;
  std::vector<detail::RnnActivation> out;
  for (const auto& n : names) {
    detail::RnnActivation a{n, 0, 0};
    bool ua = false, ub = false;
    detail::rnn_activation_defaults(n, a.alpha, a.beta, ua, ub);
    if (ua && ia < alphas.size()) a.alpha = alphas[ia++];
    if (ub && ib < betas.size()) a.beta = betas[ib++];
    out.push_back(a);
  }
  return out;
}

void check_rnn(const CheckCtx& c, RnnCell cell) {
  c.need_float(0);
  const Attrs& at = c.attrs();
  const std::string dir = at.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    c.fail_attr("direction", "expected forward, reverse or bidirectional");
  if (const Attr* a = at.get("activations")) {
    if (a->type != Attr::kStrings) c.fail_attr("activations", "expected a list of strings");
    const std::size_t per = acts_per_direction(cell);
    if (a->strings.size() != per && a->strings.size() != per * directions(at))
      c.fail_attr("activations", "expected " + std::to_string(per * directions(at)) + " activations");
    for (const auto& n : a->strings)
      if (!detail::rnn_activation_known(n)) c.fail_attr("activations", "activation '" + n + "' is not supported");
  }
  const std::int64_t layout = at.i("layout", 0);
  if (layout != 0 && layout != 1) c.fail_attr("layout", "expected 0 or 1");
  if (c.has_input(4) && c.elem(4) != kInt32 && c.elem(4) != kInt64) c.fail("sequence_lens must be int32");
}

Ts run_rnn(Args& a, RnnCell cell) {
  const Attrs& at = a.attrs;
  detail::RnnSpec s;
  s.cell = cell;
  s.directions = directions(at);
  s.reverse0 = at.s("direction", "forward") == "reverse";
  s.acts = activations(at, cell);
  s.has_clip = at.has("clip");
  s.clip = at.f("clip", 0);
  s.input_forget = at.i("input_forget", 0) != 0;
  s.linear_before_reset = at.i("linear_before_reset", 0) != 0;
  s.layout1 = at.i("layout", 0) != 0;
  const Tensor& r = a.t(2);
  if (at.has("hidden_size") && r.dim() == 3 && r.shape()[2] != at.i("hidden_size", 0))
    a.fail("R has shape " + to_string(r.shape()) +
           ", which does not fit hidden_size=" + std::to_string(at.i("hidden_size", 0)));
  const bool lstm = cell == RnnCell::lstm;
  detail::RnnOutputs o = detail::rnn_forward(s, a.t(0), a.t(1), r, a.opt(3), a.opt(4), a.opt(5),
                                             lstm ? a.opt(6) : Tensor(), lstm ? a.opt(7) : Tensor());
  const DType dt = a.dtype(0);
  auto cast = [&](const Tensor& t) { return t.defined() && t.dtype() != dt ? t.to(dt) : t; };
  Ts out{cast(o.y), cast(o.y_h)};
  if (lstm) out.push_back(cast(o.y_c));
  return out;
}

}  // namespace

void register_rnn_ops(Registry& m) {
  const std::vector<std::string> common{"activation_alpha", "activation_beta", "activations", "clip",
                                        "direction",        "hidden_size",     "layout"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  m["LSTM"] = OpDef{with({"input_forget"}), [](const CheckCtx& c) { check_rnn(c, RnnCell::lstm); }, nullptr,
                    [](Args& a) { return run_rnn(a, RnnCell::lstm); }};
  m["GRU"] = OpDef{with({"linear_before_reset"}), [](const CheckCtx& c) { check_rnn(c, RnnCell::gru); }, nullptr,
                   [](Args& a) { return run_rnn(a, RnnCell::gru); }};
  m["RNN"] = OpDef{with({}), [](const CheckCtx& c) { check_rnn(c, RnnCell::rnn); }, nullptr,
                   [](Args& a) { return run_rnn(a, RnnCell::rnn); }};
}

}  // namespace gltensor::model
