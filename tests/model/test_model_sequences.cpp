// ONNX sequences and optionals through gltensor::Model (issue #22): the Sequence* and Optional*
// ops, If and Loop carrying them, Model::run_values, against references written here from the
// ONNX spec (host lists of the random tensors: the ops only move data, so the values must match
// exactly), with fresh random inputs (the seed is printed on failure), edge cases (empty
// sequences, length 1, negative positions, a Loop of 0 iterations carrying a sequence) and the
// ModelErrors of bad input. No new kernel: the ops reuse concat, stack, split and copies.
#include <algorithm>

#include "onnx_builder.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

constexpr int kF32 = onnx::TensorProto::FLOAT, kI64 = onnx::TensorProto::INT64, kBool = onnx::TensorProto::BOOL;

// A host tensor: the reference's values.
struct Ref {
  Shape shape;
  std::vector<float> v;
};

Ref random_ref(std::mt19937_64& rng, Shape shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return {shape, uniform(rng, static_cast<std::size_t>(n))};
}

Tensor gpu(const Ref& r) { return Tensor::from_host(device(), r.v, r.shape); }
Tensor scalar_i(std::int32_t v) { return Tensor::from_host(device(), std::span<const std::int32_t>(&v, 1), {}); }
Tensor scalar_b(bool b) {
  const std::uint8_t v = b;
  return Tensor::from_host(device(), std::span<const std::uint8_t>(&v, 1), {}, DType::bool_);
}

ModelValue seq(const std::vector<Ref>& rs) {
  ModelValue m;
  m.kind = ValueKind::sequence;
  for (const auto& r : rs) m.tensors.push_back(gpu(r));
  return m;
}
ModelValue tensor(const Tensor& t) {
  ModelValue m;
  m.tensors.push_back(t);
  return m;
}

::testing::AssertionResult same(const Tensor& got, const Ref& want) {
  if (got.shape() != want.shape)
    return ::testing::AssertionFailure() << "shape " << to_string(got.shape()) << ", expected "
                                         << to_string(want.shape);
  const auto g = got.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i)
    if (g[i] != want.v[i])
      return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs " << want.v[i];
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_seq(const ModelValue& got, const std::vector<Ref>& want) {
  if (got.kind != ValueKind::sequence || got.none) return ::testing::AssertionFailure() << "not a sequence";
  if (got.tensors.size() != want.size())
    return ::testing::AssertionFailure() << "length " << got.tensors.size() << ", expected " << want.size();
  for (std::size_t i = 0; i < want.size(); ++i)
    if (auto r = same(got.tensors[i], want[i]); !r) return r << " (element " << i << ")";
  return ::testing::AssertionSuccess();
}

// The ModelError's message of f(), or "" if it throws none.
template <class F>
std::string model_error(F&& f) {
  try {
    f();
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

// Slice [lo, hi) of r along axis (the reference of a split piece).
Ref slice(const Ref& r, std::int64_t axis, std::int64_t lo, std::int64_t hi) {
  Ref o;
  o.shape = r.shape;
  o.shape[axis] = hi - lo;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= r.shape[d];
  for (std::size_t d = axis + 1; d < r.shape.size(); ++d) inner *= r.shape[d];
  const std::int64_t len = r.shape[axis];
  for (std::int64_t a = 0; a < outer; ++a)
    for (std::int64_t k = lo; k < hi; ++k)
      for (std::int64_t b = 0; b < inner; ++b) o.v.push_back(r.v[(a * len + k) * inner + b]);
  return o;
}

}  // namespace

// SequenceInsert (at a position, negative too, and appended), SequenceAt, SequenceErase (at a
// position and the last), SequenceLength on sequences of 0, 1 and 3 tensors of different shapes.
TEST(Sequences, InsertAtEraseLengthMatchReference) {
  GLT_RNG(rng);
  B m(13);
  m.input_kind("S", "seq").input("x", {-1, -1}).input("p", {}, kI64).input("q", {}, kI64).input("r", {}, kI64);
  m.node("SequenceInsert", {"S", "x", "p"}, {"s1"}, "insert");
  m.node("SequenceLength", {"s1"}, {"len"});
  m.node("SequenceAt", {"s1", "q"}, {"at"}, "at");
  m.node("SequenceErase", {"s1", "r"}, {"s2"}, "erase");
  m.node("SequenceInsert", {"S", "x"}, {"s3"});
  m.node("SequenceErase", {"s3"}, {"s4"});
  m.output_kind("s1", "seq").output_kind("s2", "seq").output("len", {}, kI64).output_any("at");
  m.output_kind("s3", "seq").output_kind("s4", "seq");
  Model model = Model::load(device(), m.save("seq_insert_at_erase"));
  EXPECT_EQ(model.outputs()[0].kind, ValueKind::sequence);
  EXPECT_EQ(model.outputs()[2].kind, ValueKind::tensor);
  for (int L : {0, 1, 3}) {
    std::vector<Ref> S;
    for (int i = 0; i < L; ++i) S.push_back(random_ref(rng, {1 + static_cast<std::int64_t>(rng() % 3), 2}));
    const Ref x = random_ref(rng, {2, 1 + static_cast<std::int64_t>(rng() % 3)});
    // every insert position, negative ones included
    for (int p = -L; p <= L; ++p) {
      std::vector<Ref> s1 = S;
      s1.insert(s1.begin() + (p < 0 ? p + L : p), x);
      const int n1 = L + 1;
      const int q = static_cast<int>(rng() % (2 * n1)) - n1, r = static_cast<int>(rng() % (2 * n1)) - n1;
      std::vector<Ref> s2 = s1;
      s2.erase(s2.begin() + (r < 0 ? r + n1 : r));
      std::vector<Ref> s3 = S;
      s3.push_back(x);
      SCOPED_TRACE("L " + std::to_string(L) + " p " + std::to_string(p) + " q " + std::to_string(q) + " r " +
                   std::to_string(r));
      auto out = model.run_values({{"S", seq(S)},
                                   {"x", tensor(gpu(x))},
                                   {"p", tensor(scalar_i(p))},
                                   {"q", tensor(scalar_i(q))},
                                   {"r", tensor(scalar_i(r))}});
      EXPECT_TRUE(same_seq(out.at("s1"), s1));
      EXPECT_TRUE(same_seq(out.at("s2"), s2));
      EXPECT_TRUE(same_seq(out.at("s3"), s3));
      EXPECT_TRUE(same_seq(out.at("s4"), S));
      ASSERT_EQ(out.at("len").tensors.size(), 1u);
      EXPECT_EQ(out.at("len").tensors[0].to_vector(), std::vector<float>{static_cast<float>(n1)});
      ASSERT_EQ(out.at("at").tensors.size(), 1u);
      EXPECT_TRUE(same(out.at("at").tensors[0], s1[static_cast<std::size_t>(q < 0 ? q + n1 : q)]));
    }
  }
  // Positions out of range: a ModelError naming the node, the position and the sequence.
  const Ref x = random_ref(rng, {2, 2});
  auto run = [&](int p, int q, int r) {
    return model_error([&] {
      model.run_values({{"S", seq({x})},
                        {"x", tensor(gpu(x))},
                        {"p", tensor(scalar_i(p))},
                        {"q", tensor(scalar_i(q))},
                        {"r", tensor(scalar_i(r))}});
    });
  };
  std::string e = run(2, 0, 0);  // insert into a length-1 sequence: [-1, 1]
  EXPECT_NE(e.find("'insert'"), std::string::npos) << e;
  EXPECT_NE(e.find("position 2 is out of range [-1, 1]"), std::string::npos) << e;
  EXPECT_NE(e.find("'S'"), std::string::npos) << e;
  e = run(0, -3, 0);  // at in a length-2 sequence: [-2, 1]
  EXPECT_NE(e.find("'at'"), std::string::npos) << e;
  EXPECT_NE(e.find("position -3 is out of range [-2, 1]"), std::string::npos) << e;
  e = run(0, 0, 2);
  EXPECT_NE(e.find("'erase'"), std::string::npos) << e;
  EXPECT_NE(e.find("position 2 is out of range [-2, 1]"), std::string::npos) << e;
}

// SplitToSequence (no split with keepdims 0 / 1, a scalar split, a list) and ConcatFromSequence
// (axis, new_axis, negative axes) against the slices of a random 3-D tensor.
TEST(Sequences, SplitAndConcatMatchReference) {
  GLT_RNG(rng);
  for (std::int64_t axis : {0, 1, -1})
    for (int keepdims : {0, 1}) {
      const Ref x =
          random_ref(rng, {2 + static_cast<std::int64_t>(rng() % 3), 3, 1 + static_cast<std::int64_t>(rng() % 4)});
      const std::int64_t ax = axis < 0 ? axis + 3 : axis, len = x.shape[ax];
      const std::int64_t chunk = 1 + static_cast<std::int64_t>(rng() % len);
      std::vector<std::int64_t> sizes{len - 1, 0, 1};  // a zero-size piece too
      SCOPED_TRACE("x " + to_string(x.shape) + " axis " + std::to_string(axis) + " keepdims " +
                   std::to_string(keepdims) + " chunk " + std::to_string(chunk));
      B m(13);
      m.input("x", {-1, -1, -1}).init_i64("chunk", {}, {chunk}).init_i64("sizes", {3}, sizes);
      auto& a = m.node("SplitToSequence", {"x"}, {"ones"});
      B::attr_i(a, "axis", axis);
      B::attr_i(a, "keepdims", keepdims);
      auto& b = m.node("SplitToSequence", {"x", "chunk"}, {"chunks"});
      B::attr_i(b, "axis", axis);
      auto& c = m.node("SplitToSequence", {"x", "sizes"}, {"parts"});
      B::attr_i(c, "axis", axis);
      auto& d = m.node("ConcatFromSequence", {"chunks"}, {"y"});
      B::attr_i(d, "axis", axis);
      auto& e = m.node("ConcatFromSequence", {"ones"}, {"z"});  // stacks the pieces back when keepdims=0
      B::attr_i(e, "axis", axis);
      B::attr_i(e, "new_axis", keepdims ? 0 : 1);
      m.output_kind("ones", "seq").output_kind("chunks", "seq").output_kind("parts", "seq");
      m.output_any("y").output_any("z");
      Model model = Model::load(device(), m.save("seq_split_concat"));
      auto out = model.run_values({{"x", tensor(gpu(x))}});
      std::vector<Ref> ones, chunks, parts;
      for (std::int64_t k = 0; k < len; ++k) {
        Ref s = slice(x, ax, k, k + 1);
        if (!keepdims) s.shape.erase(s.shape.begin() + ax);
        ones.push_back(s);
      }
      for (std::int64_t k = 0; k < len; k += chunk) chunks.push_back(slice(x, ax, k, std::min(len, k + chunk)));
      for (std::int64_t k = 0, at = 0; k < 3; at += sizes[k++]) parts.push_back(slice(x, ax, at, at + sizes[k]));
      EXPECT_TRUE(same_seq(out.at("ones"), ones));
      EXPECT_TRUE(same_seq(out.at("chunks"), chunks));
      EXPECT_TRUE(same_seq(out.at("parts"), parts));
      EXPECT_TRUE(same(out.at("y").tensors.at(0), x));
      EXPECT_TRUE(same(out.at("z").tensors.at(0), x));
    }
}

// A Loop carrying a sequence (as exporters write sequence decoding): each iteration appends
// x[:i + 1]; 0 iterations return the sequence given (empty or not), SequenceLength after it.
TEST(Sequences, LoopCarriesASequence) {
  GLT_RNG(rng);
  B body;
  body.input("i", {}, kI64).input("c", {}, kBool).input_kind("s_in", "seq");
  body.output("c_out", {}, kBool).output_kind("s_out", "seq");
  body.node("Identity", {"c"}, {"c_out"});
  body.node("Add", {"i", "one"}, {"end"});
  body.node("Unsqueeze", {"end", "axes"}, {"end1"});
  body.node("Slice", {"x", "zero", "end1"}, {"piece"});
  body.node("SequenceInsert", {"s_in", "piece"}, {"s_out"});
  B m(13);
  m.input("M", {}, kI64).input("x", {-1}).input_kind("S", "seq").init_i64("one", {}, {1}).init_i64("zero", {1}, {0});
  m.init_i64("axes", {1}, {0});
  auto& n = m.node("Loop", {"M", "", "S"}, {"s"});
  B::attr_graph(n, "body", body);
  m.node("SequenceLength", {"s"}, {"len"});
  m.output_kind("s", "seq").output("len", {}, kI64);
  Model model = Model::load(device(), m.save("seq_loop"));
  const Ref x = random_ref(rng, {6});
  for (int trips : {0, 1, 4})
    for (int given : {0, 1}) {
      SCOPED_TRACE("trips " + std::to_string(trips) + " given " + std::to_string(given));
      std::vector<Ref> S;
      if (given) S.push_back(random_ref(rng, {2, 2}));
      std::vector<Ref> want = S;
      for (int i = 0; i < trips; ++i) want.push_back(slice(x, 0, 0, i + 1));
      auto out = model.run_values({{"M", tensor(scalar_i(trips))}, {"x", tensor(gpu(x))}, {"S", seq(S)}});
      EXPECT_TRUE(same_seq(out.at("s"), want));
      EXPECT_EQ(out.at("len").tensors.at(0).to_vector(), std::vector<float>{static_cast<float>(want.size())});
    }
}

// Loop-16's optional carried in, coming out as the tensor it holds (review19): after no
// iteration the Loop's output is the optional given, which must hold a tensor (else a ModelError
// naming the node and the value, never a null dereference in the Add that reads it).
TEST(Sequences, LoopUnwrapsACarriedOptional) {
  GLT_RNG(rng);
  for (bool empty : {false, true}) {
    B m(16);
    m.input("M", {}, kI64).input("x", {-1});
    auto& o = m.node("Optional", empty ? std::vector<std::string>{} : std::vector<std::string>{"x"}, {"o"});
    if (empty) {
      auto* a = o.add_attribute();
      a->set_name("type");
      a->set_type(onnx::AttributeProto::TYPE_PROTO);
      a->mutable_tp()->mutable_tensor_type()->set_elem_type(kF32);
    }
    B body;
    body.input("i", {}, kI64).input("c", {}, kBool).input_kind("o_in", "opt");
    body.output("c_out", {}, kBool).output_any("t_out");
    body.node("Identity", {"c"}, {"c_out"});
    body.node("OptionalGetElement", {"o_in"}, {"t_out"}, "get");
    auto& n = m.node("Loop", {"M", "", "o"}, {"t"}, "loop");
    B::attr_graph(n, "body", body);
    m.node("Add", {"t", "x"}, {"y"});
    m.output_any("y");
    Model model = Model::load(device(), m.save(empty ? "seq_loop_opt_empty" : "seq_loop_opt"));
    const Ref x = random_ref(rng, {3});
    Ref twice = x;
    for (auto& v : twice.v) v += v;
    for (int trips : {0, 2}) {
      SCOPED_TRACE("empty " + std::to_string(empty) + " trips " + std::to_string(trips));
      if (!empty) {
        EXPECT_TRUE(same(model.run({{"M", scalar_i(trips)}, {"x", gpu(x)}}).at("y"), twice));
        continue;
      }
      const std::string e = model_error([&] { model.run({{"M", scalar_i(trips)}, {"x", gpu(x)}}); });
      if (trips == 0) {
        EXPECT_NE(e.find("'loop'"), std::string::npos) << e;
        EXPECT_NE(e.find("the loop ran no iteration and its carried optional 'o' is empty"), std::string::npos) << e;
      } else {
        EXPECT_NE(e.find("'get'"), std::string::npos) << e;
        EXPECT_NE(e.find("the optional 'o_in' is empty"), std::string::npos) << e;
      }
    }
  }
}

// If returning optionals (Optional with the `type` attribute: empty; Optional(x)),
// OptionalHasElement, OptionalGetElement, Identity of an optional; reading an empty one fails
// naming the node and the value.
TEST(Sequences, IfSelectsOptionals) {
  GLT_RNG(rng);
  B m(16);
  m.input("cond", {}, kBool).input("x", {-1});
  B then_b, else_b;
  auto& e = then_b.node("Optional", {}, {"none"});
  {
    auto* a = e.add_attribute();
    a->set_name("type");
    a->set_type(onnx::AttributeProto::TYPE_PROTO);
    a->mutable_tp()->mutable_tensor_type()->set_elem_type(kF32);
  }
  then_b.output_kind("none", "opt");
  else_b.node("Optional", {"x"}, {"some"});
  else_b.output_kind("some", "opt");
  auto& n = m.node("If", {"cond"}, {"opt"});
  B::attr_graph(n, "then_branch", then_b);
  B::attr_graph(n, "else_branch", else_b);
  m.node("Identity", {"opt"}, {"opt2"});
  m.node("OptionalHasElement", {"opt2"}, {"has"});
  m.node("OptionalGetElement", {"opt2"}, {"got"}, "get");
  m.output_kind("opt", "opt").output("has", {}, kBool).output_any("got");
  Model model = Model::load(device(), m.save("seq_if_optional"));
  EXPECT_EQ(model.outputs()[0].kind, ValueKind::optional_tensor);
  const Ref x = random_ref(rng, {5});
  auto out = model.run_values({{"cond", tensor(scalar_b(false))}, {"x", tensor(gpu(x))}});
  EXPECT_FALSE(out.at("opt").none);
  EXPECT_TRUE(same(out.at("opt").tensors.at(0), x));
  EXPECT_EQ(out.at("has").tensors.at(0).to_vector(), std::vector<float>{1});
  EXPECT_TRUE(same(out.at("got").tensors.at(0), x));
  const std::string err = model_error([&] {
    model.run_values({{"cond", tensor(scalar_b(true))}, {"x", tensor(gpu(x))}});
  });
  EXPECT_NE(err.find("'get'"), std::string::npos) << err;
  EXPECT_NE(err.find("the optional 'opt2' is empty"), std::string::npos) << err;

  // Without OptionalGetElement: the empty optional comes out as none.
  B m2(16);
  m2.input("cond", {}, kBool).input("x", {-1});
  auto& n2 = m2.node("If", {"cond"}, {"opt"});
  B::attr_graph(n2, "then_branch", then_b);
  B::attr_graph(n2, "else_branch", else_b);
  m2.node("OptionalHasElement", {"opt"}, {"has"});
  m2.output_kind("opt", "opt").output("has", {}, kBool);
  Model model2 = Model::load(device(), m2.save("seq_if_optional_none"));
  out = model2.run_values({{"cond", tensor(scalar_b(true))}, {"x", tensor(gpu(x))}});
  EXPECT_TRUE(out.at("opt").none);
  EXPECT_TRUE(out.at("opt").tensors.empty());
  EXPECT_EQ(out.at("has").tensors.at(0).to_vector(), std::vector<float>{0});
}

// Typed errors: mixed element types at load, sequences given to run(), kinds and dtypes that do
// not match in run_values.
TEST(Sequences, BadInputsAreModelErrors) {
  {
    B m(13);
    m.input("x", {2}).input("i", {2}, kI64).output_kind("s", "seq");
    m.node("SequenceConstruct", {"x", "i"}, {"s"}, "construct");
    const std::string e = model_error([&] { Model::load(device(), m.save("seq_mixed")); });
    EXPECT_NE(e.find("'construct'"), std::string::npos) << e;
    EXPECT_NE(e.find("mixed element types: 'x' is float, 'i' is int64"), std::string::npos) << e;
  }
  {
    B m(13);
    m.input_kind("S", "seq").input("i", {2}, kI64).output_kind("s", "seq");
    m.node("SequenceInsert", {"S", "i"}, {"s"}, "ins");
    const std::string e = model_error([&] { Model::load(device(), m.save("seq_insert_mixed")); });
    EXPECT_NE(e.find("the tensor 'i' is int64, the sequence 'S' holds float"), std::string::npos) << e;
  }
  {
    B m(13);
    m.input_kind("S", "seq").output("y", {});
    m.node("Relu", {"S"}, {"y"}, "relu");
    const std::string e = model_error([&] { Model::load(device(), m.save("seq_into_relu")); });
    EXPECT_NE(e.find("input 'S' is a sequence; op Relu takes tensors"), std::string::npos) << e;
  }
  B m(13);
  m.input_kind("S", "seq").input("x", {-1});
  m.node("SequenceInsert", {"S", "x"}, {"s"});
  m.output_kind("s", "seq");
  Model model = Model::load(device(), m.save("seq_run_errors"));
  const Tensor x = Tensor::from_host(device(), std::vector<float>{1, 2}, {2});
  std::string e = model_error([&] { model.run({{"x", x}}); });
  EXPECT_NE(e.find("input 'S' is a sequence: run the model with Model::run_values"), std::string::npos) << e;
  e = model_error([&] { model.run_values({{"S", tensor(x)}, {"x", tensor(x)}}); });
  EXPECT_NE(e.find("input 'S' is given as a tensor, the graph takes a sequence"), std::string::npos) << e;
  ModelValue ints = seq({});
  ints.tensors.push_back(scalar_i(1));
  e = model_error([&] { model.run_values({{"S", ints}, {"x", tensor(x)}}); });
  EXPECT_NE(e.find("input 'S' element 0 has dtype int32, expected float32"), std::string::npos) << e;
  e = model_error([&] { model.run_values({{"x", tensor(x)}}); });
  EXPECT_NE(e.find("input 'S' (a sequence) is missing"), std::string::npos) << e;
}

// ModelOptions::replay on a model whose sequences are internal: the runs are plain (never a
// stale recording), each matching its own input.
TEST(Sequences, ReplayRunsSequenceGraphsPlainly) {
  GLT_RNG(rng);
  B m(13);
  m.input("x", {4, 3}).init_i64("zero", {}, {0}).output("y", {3, 3});
  m.node("SplitToSequence", {"x"}, {"rows"});
  m.node("SequenceErase", {"rows", "zero"}, {"tail"});
  auto& c = m.node("ConcatFromSequence", {"tail"}, {"y"});
  B::attr_i(c, "axis", 0);
  ModelOptions o;
  o.replay = true;
  Model model = Model::load(device(), m.save("seq_replay"), o);
  for (int run = 0; run < 4; ++run) {
    const Ref x = random_ref(rng, {4, 3});
    auto out = model.run({{"x", gpu(x)}});
    EXPECT_TRUE(same(out.at("y"), slice(x, 0, 1, 4))) << "run " << run;
  }
}
