// Views share storage and copy nothing; their values are checked against host-side indexing.
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
struct Base {
  std::vector<float> host;
  Tensor t;
};
Base make(std::mt19937_64& rng, const Shape& shape) {
  Base b;
  b.host = uniform(rng, static_cast<std::size_t>(numel_of(shape)));
  b.t = Tensor::from_host(device(), b.host, shape);
  return b;
}
void expect_view(const Base& b, const Tensor& v) {
  EXPECT_TRUE(v.shares_storage(b.t));
  auto want = gather_view(b.host, v);
  EXPECT_EQ(v.to_vector(), want) << v.repr();
  EXPECT_EQ(v.contiguous().to_vector(), want);
}
}  // namespace

TEST(Views, PermuteTransposeT) {
  GLT_RNG(rng);
  auto b = make(rng, {3, 4, 5});
  auto p = b.t.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{5, 3, 4}));
  EXPECT_EQ(p.strides(), (Shape{1, 20, 5}));
  EXPECT_FALSE(p.is_contiguous());
  expect_view(b, p);
  expect_view(b, b.t.transpose(0, -1));
  auto m = make(rng, {7, 3});
  expect_view(m, m.t.t());
  EXPECT_THROW(b.t.t(), ShapeError);
  EXPECT_THROW(b.t.permute({0, 0, 1}), ValueError);
  EXPECT_THROW(b.t.permute({0, 1}), ShapeError);
  EXPECT_THROW(b.t.permute({0, 1, 3}), IndexError);
}

TEST(Views, SliceSelectNarrow) {
  GLT_RNG(rng);
  auto b = make(rng, {6, 9});
  expect_view(b, b.t.slice(1, 1, 8, 3));
  expect_view(b, b.t.slice(0, -4, -1));
  expect_view(b, b.t.slice(1, 2, 100, 2));
  EXPECT_EQ(b.t.slice(1, 5, 2).numel(), 0);
  expect_view(b, b.t.select(0, -1));
  expect_view(b, b.t.select(1, 4));
  expect_view(b, b.t.narrow(1, 3, 4).slice(0, 1, 6, 2));
  EXPECT_THROW(b.t.slice(1, 0, 4, 0), ValueError);
  EXPECT_THROW(b.t.select(0, 6), IndexError);
  EXPECT_THROW(b.t.narrow(1, 7, 3), IndexError);
  EXPECT_THROW(b.t.slice(2, 0, 1), IndexError);
}

TEST(Views, ExpandSqueezeUnsqueeze) {
  GLT_RNG(rng);
  auto b = make(rng, {3, 1});
  auto e = b.t.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  expect_view(b, e);
  expect_view(b, b.t.expand({-1, 5}));
  EXPECT_THROW(b.t.expand({3, 2, 4}), ShapeError);
  EXPECT_THROW(b.t.expand({4}), ShapeError);
  auto s = make(rng, {1, 4, 1, 2});
  EXPECT_EQ(s.t.squeeze().shape(), (Shape{4, 2}));
  EXPECT_EQ(s.t.squeeze(2).shape(), (Shape{1, 4, 2}));
  EXPECT_EQ(s.t.squeeze(1).shape(), (Shape{1, 4, 1, 2}));
  EXPECT_EQ(s.t.unsqueeze(-1).shape(), (Shape{1, 4, 1, 2, 1}));
  EXPECT_EQ(s.t.unsqueeze(0).shape(), (Shape{1, 1, 4, 1, 2}));
  expect_view(s, s.t.squeeze().unsqueeze(1));
}

TEST(Views, ViewAndReshape) {
  GLT_RNG(rng);
  auto b = make(rng, {4, 6});
  auto v = b.t.view({2, -1, 3});
  EXPECT_EQ(v.shape(), (Shape{2, 4, 3}));
  expect_view(b, v);
  expect_view(b, b.t.flatten());
  // A transposed tensor cannot be viewed flat, but can be reshaped (with a copy).
  auto tt = b.t.t();
  EXPECT_THROW(tt.view({24}), ShapeError);
  auto r = tt.reshape({24});
  EXPECT_FALSE(r.shares_storage(b.t));
  EXPECT_EQ(r.to_vector(), gather_view(b.host, tt));
  // A view that splits a non-contiguous dim is still possible without a copy.
  auto sl = b.t.slice(1, 0, 6, 2);  // [4, 3] strides [6, 2]
  expect_view(b, sl.view({2, 2, 3}));
  EXPECT_THROW(b.t.view({5, -1}), ShapeError);
  EXPECT_THROW(b.t.view({-1, -1}), ShapeError);
  auto z = Tensor::empty(device(), {0, 4});
  EXPECT_EQ(z.view({4, 0, 2}).shape(), (Shape{4, 0, 2}));
}

TEST(Views, ZeroDimAndItem) {
  Tensor s = full(device(), {}, 3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 3.5f);
  EXPECT_EQ(s.unsqueeze(0).shape(), (Shape{1}));
  EXPECT_EQ(s.reshape({1, 1}).item(), 3.5f);
  EXPECT_THROW(ones(device(), {2}).item(), ShapeError);
}

TEST(Views, WritesThroughViews) {
  GLT_RNG(rng);
  auto b = make(rng, {5, 6});
  Tensor v = b.t.slice(1, 1, 6, 2);  // non-contiguous
  v.fill_(-3.0);
  auto want = b.host;
  for (auto o : view_offsets(v)) want[o] = -3.0f;
  EXPECT_EQ(b.t.to_vector(), want);
  Tensor col = b.t.select(1, 0);
  auto src = uniform(rng, 5);
  col.copy_(Tensor::from_host(device(), src, {5}));
  for (int i = 0; i < 5; ++i) want[i * 6] = src[i];
  EXPECT_EQ(b.t.to_vector(), want);
}
