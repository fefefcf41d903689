// Data movement and indexing against host references (exact: these ops move values).
#include "ops/index.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
Tensor host(const std::vector<float>& v, const Shape& s) { return Tensor::from_host(device(), v, s); }
Tensor ihost(const std::vector<std::int32_t>& v, const Shape& s) {
  return Tensor::from_host(device(), std::span<const std::int32_t>(v), s);
}
}  // namespace

TEST(Indexing, ConcatStackSplitChunk) {
  GLT_RNG(rng);
  auto a = uniform(rng, 6), b = uniform(rng, 9);
  Tensor ta = host(a, {2, 3}), tb = host(b, {3, 3});
  auto c = concat({ta, tb}, 0).to_vector();
  std::vector<float> want(a);
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(c, want);
  auto c1 = concat({ta.t(), tb.t()}, 1);  // [3, 5]
  EXPECT_EQ(c1.shape(), (Shape{3, 5}));
  auto v1 = c1.to_vector();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) ASSERT_EQ(v1[i * 5 + j], j < 2 ? a[j * 3 + i] : b[(j - 2) * 3 + i]);
  Tensor st = stack({ta, ta * 2.0}, 1);
  EXPECT_EQ(st.shape(), (Shape{2, 2, 3}));
  auto sv = st.to_vector();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      ASSERT_EQ(sv[i * 6 + j], a[i * 3 + j]);
      ASSERT_EQ(sv[i * 6 + 3 + j], 2 * a[i * 3 + j]);
    }
  auto parts = split(tb, 2, 0);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].shape(), (Shape{1, 3}));
  EXPECT_EQ(parts[1].to_vector(), std::vector<float>(b.begin() + 6, b.end()));
  auto p2 = split(tb, std::vector<std::int64_t>{1, 2}, 1);
  EXPECT_EQ(p2[1].to_vector(), (std::vector<float>{b[1], b[2], b[4], b[5], b[7], b[8]}));
  EXPECT_EQ(chunk(tb, 2, 1).size(), 2u);
  EXPECT_EQ(concat({ta, zeros(device(), {0, 3})}, 0).to_vector(), a);
  EXPECT_EQ(concat({ta, arange(device(), 0, 3, 1, DType::i32).unsqueeze(0)}, 0).dtype(), DType::f32);
  EXPECT_THROW(concat({ta, tb}, 1), ShapeError);
  EXPECT_THROW(concat({}, 0), ValueError);
  EXPECT_THROW(split(tb, std::vector<std::int64_t>{1, 1}, 0), ShapeError);
}

TEST(Indexing, PadModes) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  Tensor t = host(x, {2, 3});
  EXPECT_EQ(pad(t, {1, 2}, PadMode::constant, -1).to_vector(),
            (std::vector<float>{-1, 1, 2, 3, -1, -1, -1, 4, 5, 6, -1, -1}));
  EXPECT_EQ(pad(t, {2, 1}, PadMode::reflect).to_vector(), (std::vector<float>{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
  EXPECT_EQ(pad(t, {1, 1, 1, 0}, PadMode::replicate).to_vector(),
            (std::vector<float>{1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6}));
  EXPECT_EQ(pad(t, {-1, 0}).to_vector(), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(pad(t.t(), {0, 0, 1, 0}).to_vector(), (std::vector<float>{0, 0, 1, 4, 2, 5, 3, 6}));
  EXPECT_THROW(pad(t, {3, 0}, PadMode::reflect), ValueError);
  EXPECT_THROW(pad(t, {1}), ValueError);
}

TEST(Indexing, RepeatTileFlipRoll) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  Tensor t = host(x, {2, 3});
  EXPECT_EQ(repeat(t, {2, 1}).to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(repeat(t, {1, 2}).to_vector(), (std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(repeat(t, {2, 1, 1}).shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(tile(t, {2}).shape(), (Shape{2, 6}));
  EXPECT_EQ(flip(t, {1}).to_vector(), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(flip(t, {0, 1}).to_vector(), (std::vector<float>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(roll(t, 1, 1).to_vector(), (std::vector<float>{3, 1, 2, 6, 4, 5}));
  EXPECT_EQ(roll(t, -4, 1).to_vector(), (std::vector<float>{2, 3, 1, 5, 6, 4}));
  EXPECT_EQ(flip(t.t(), {0}).to_vector(), (std::vector<float>{3, 6, 2, 5, 1, 4}));
}

TEST(Indexing, GatherIndexSelectScatter) {
  GLT_RNG(rng);
  const int R = 5, C = 7;
  auto x = uniform(rng, R * C);
  Tensor t = host(x, {R, C});
  auto idx = uniform_int(rng, R * 3, -C, C - 1);
  Tensor g = gather(t, 1, ihost(idx, {R, 3}));
  auto gv = g.to_vector();
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < 3; ++j) {
      int k = idx[i * 3 + j];
      if (k < 0) k += C;
      ASSERT_EQ(gv[i * 3 + j], x[i * C + k]);
    }
  auto sel = uniform_int(rng, 9, 0, R - 1);
  auto sv = index_select(t, 0, ihost(sel, {9})).to_vector();
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < C; ++j) ASSERT_EQ(sv[i * C + j], x[sel[i] * C + j]);
  auto sv2 = index_select(t.t(), 1, ihost(sel, {9}));  // non-contiguous source
  EXPECT_EQ(sv2.shape(), (Shape{C, 9}));
  // scatter / scatter_add along dim 0
  auto src = uniform(rng, 3 * C);
  std::vector<std::int32_t> si = {0, 4, 2, 1, 1, 1, 3, 2, 0, 4, 4, 4, 0, 1, 3, 3, 3, 3, 2, 2, 2};
  Tensor ts = host(src, {3, C});
  auto sc = scatter(t, 0, ihost(si, {3, C}), ts).to_vector();
  auto sa = scatter_add(t, 0, ihost(si, {3, C}), ts).to_vector();
  std::vector<double> want_add(x.begin(), x.end());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < C; ++j) want_add[si[i * C + j] * C + j] += src[i * C + j];
  EXPECT_TRUE(close(sa, want_add, 1e-6, 1e-6));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < C; ++j) {
      // unique targets per column in this index, so scatter is deterministic here
      ASSERT_EQ(sc[si[i * C + j] * C + j], src[i * C + j]) << i << "," << j;
    }
  // embedding and one_hot
  auto w = uniform(rng, 10 * 4);
  std::vector<std::int32_t> ids = {3, 0, 9, 3, 7, 1};
  Tensor e = embedding(host(w, {10, 4}), ihost(ids, {2, 3}));
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  auto ev = e.to_vector();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) ASSERT_EQ(ev[i * 4 + j], w[ids[i] * 4 + j]);
  Tensor oh = one_hot(ihost({2, 0, 1}, {3}), 4);
  EXPECT_EQ(oh.dtype(), DType::i32);
  EXPECT_EQ(oh.to_int_vector(), (std::vector<int>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
}

// int32 scatter_add is exact (atomic integer adds): many sources per target, negative indices,
// a non-contiguous src; a float src into an int32 output is a DTypeError (no silent truncation).
TEST(Indexing, ScatterAddInt32) {
  GLT_RNG(rng);
  const int R = 3, C = 5, N = 3001;
  auto x = uniform_int(rng, R * C, -1000, 1000);
  auto idx = uniform_int(rng, N * C, -R, R - 1);
  auto src = uniform_int(rng, C * N, -100000, 100000);  // stored [C, N], used as its transpose
  Tensor srct = ihost(src, {C, N}).t();                 // [N, C], non-contiguous
  Tensor r = scatter_add(ihost(x, {R, C}), 0, ihost(idx, {N, C}), srct);
  ASSERT_EQ(r.dtype(), DType::i32);
  std::vector<std::int64_t> want(x.begin(), x.end());
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < C; ++j) {
      const int k = idx[i * C + j] < 0 ? idx[i * C + j] + R : idx[i * C + j];
      want[k * C + j] += src[j * N + i];
    }
  auto got = r.to_int_vector();
  for (int i = 0; i < R * C; ++i) ASSERT_EQ(got[i], want[i]) << i;
  EXPECT_THROW(scatter_add(ihost(x, {R, C}), 0, ihost(idx, {N, C}), ones(device(), {N, C})), DTypeError);
  EXPECT_THROW(scatter_add(ones(device(), {R, C}, DType::f16), 0, ihost(idx, {N, C}), ones(device(), {N, C})),
               DTypeError);
}

// float32 scatter_add under contention (thousands of sources per target, as an embedding's
// gradient: NVIDIA's float atomicAdd, else the compare-and-swap loop) against float64 sums, with
// an Inf and a NaN reaching one target each.
TEST(Indexing, ScatterAddFloatContention) {
  GLT_RNG(rng);
  const int R = 7, C = 33, N = 20011;
  auto x = uniform(rng, R * C);
  auto idx = uniform_int(rng, N * C, -R, R - 1);
  auto src = uniform(rng, N * C);
  src[5 * C + 3] = INFINITY;
  src[9 * C + 4] = NAN;
  Tensor r = scatter_add(host(x, {R, C}), 0, ihost(idx, {N, C}), host(src, {N, C}));
  std::vector<double> want(x.begin(), x.end());
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < C; ++j) {
      const int k = idx[i * C + j] < 0 ? idx[i * C + j] + R : idx[i * C + j];
      want[k * C + j] += src[i * C + j];
    }
  EXPECT_TRUE(close(r.to_vector(), want, 1e-5, 1e-4 * std::sqrt(static_cast<double>(N))));
}

// detail::scatter_reduce (ONNX ScatterElements/ScatterND reductions): many sources per target
// through compare-and-swap loops; products of powers of two and max/min are exact in any order.
TEST(Indexing, ScatterReduceProdMaxMin) {
  GLT_RNG(rng);
  using R = detail::ScatterReduce;
  const int Rw = 4, C = 3, N = 2001;
  auto idx = uniform_int(rng, N * C, -Rw, Rw - 1);
  auto xi = uniform_int(rng, Rw * C, -50, 50), si = uniform_int(rng, N * C, -100000, 100000);
  auto ex = uniform_int(rng, N * C, -1, 1);  // float sources 2^e (products stay exact)
  std::vector<float> sf(ex.size());
  for (std::size_t i = 0; i < ex.size(); ++i) sf[i] = std::ldexp(i % 7 == 0 ? -1.0f : 1.0f, ex[i]);
  std::vector<float> xf(static_cast<std::size_t>(Rw * C), 1.0f);
  for (R red : {R::max, R::min, R::prod, R::sum}) {
    std::vector<double> want_i(xi.begin(), xi.end()), want_f(xf.begin(), xf.end());
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < C; ++j) {
        const int k = (idx[i * C + j] + Rw) % Rw;
        double& wi = want_i[k * C + j];
        double& wf = want_f[k * C + j];
        const double vi = si[i * C + j], vf = sf[i * C + j];
        if (red == R::max) wi = std::max(wi, vi), wf = std::max(wf, vf);
        if (red == R::min) wi = std::min(wi, vi), wf = std::min(wf, vf);
        if (red == R::sum) wi += vi, wf += vf;
        if (red == R::prod) wf *= vf;
      }
    Tensor rf = detail::scatter_reduce(host(xf, {Rw, C}), 0, ihost(idx, {N, C}), host(sf, {N, C}), red);
    EXPECT_TRUE(close(rf.to_vector(), want_f, 0, 0)) << int(red);
    if (red == R::prod) continue;  // int32 products of these would wrap
    Tensor ri = detail::scatter_reduce(ihost(xi, {Rw, C}), 0, ihost(idx, {N, C}), ihost(si, {N, C}), red);
    ASSERT_EQ(ri.dtype(), DType::i32);
    auto got = ri.to_int_vector();
    for (int i = 0; i < Rw * C; ++i) ASSERT_EQ(got[i], want_i[i]) << int(red) << " " << i;
  }
  EXPECT_THROW(detail::scatter_reduce(ones(device(), {Rw, C}, DType::f16), 0, ihost(idx, {N, C}),
                                      ones(device(), {N, C}, DType::f16), R::max),
               DTypeError);
}

TEST(Indexing, OutOfRangeIndexIsIndexErrorAtTheNextRead) {
  Tensor t = ones(device(), {4, 3});
  Tensor g = index_select(t, 0, ihost({0, 4}, {2}));
  try {
    g.to_vector();
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index_select"), std::string::npos) << e.what();
  }
  // the flag is reset: later ops work
  EXPECT_EQ(index_select(t, 0, ihost({3, -4}, {2})).to_vector(), std::vector<float>(6, 1.0f));
  EXPECT_THROW(gather(t, 1, ihost({0, 1}, {2})), ShapeError);
  EXPECT_THROW(gather(t, 0, host({0.0f}, {1, 1})), DTypeError);
}

// one_hot takes class indices in [0, num_classes) (torch): -1 or num_classes is IndexError.
TEST(Indexing, OneHotOutOfRangeIsIndexError) {
  for (auto bad : {std::vector<std::int32_t>{-1, 2}, {0, 3}, {-4, 0}}) {
    try {
      one_hot(ihost(bad, {2}), 3).to_int_vector();
      ADD_FAILURE() << "one_hot accepted " << bad[0] << ", " << bad[1];
    } catch (const IndexError& e) {
      EXPECT_NE(std::string(e.what()).find("one_hot"), std::string::npos) << e.what();
    }
  }
  Tensor oh = one_hot(ihost({2, 0, 1, 2, 1, 0}, {2, 3}), 3);
  EXPECT_EQ(oh.shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(oh.to_int_vector(), (std::vector<int>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(one_hot(ihost({}, {0}), 3).shape(), (Shape{0, 3}));
}

TEST(Indexing, TrilTriu) {
  GLT_RNG(rng);
  auto x = uniform(rng, 2 * 4 * 5);
  Tensor t = host(x, {2, 4, 5});
  for (int k : {-1, 0, 2}) {
    auto lo = tril(t, k).to_vector(), up = triu(t, k).to_vector();
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 5; ++j) {
          const int e = b * 20 + i * 5 + j;
          ASSERT_EQ(lo[e], j - i <= k ? x[e] : 0.0f);
          ASSERT_EQ(up[e], j - i >= k ? x[e] : 0.0f);
        }
  }
}

TEST(Indexing, SortArgsortTopk) {
  GLT_RNG(rng);
  const int rows = 6, L = 37;
  auto x = uniform(rng, rows * L);
  for (int i = 0; i < rows * L; i += 5) x[i] = std::round(x[i] * 3);  // ties
  x[3] = NAN;
  Tensor t = host(x, {rows, L});
  for (bool desc : {false, true}) {
    auto s = sort(t, desc);
    auto sv = s.values.to_vector();
    auto si = s.indices.to_int_vector();
    for (int r = 0; r < rows; ++r) {
      std::vector<int> order(L);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const float va = x[r * L + a], vb = x[r * L + b];
        if (std::isnan(va)) return desc && !std::isnan(vb);
        if (std::isnan(vb)) return !desc;
        return desc ? va > vb : va < vb;
      });
      for (int i = 0; i < L; ++i) {
        ASSERT_EQ(si[r * L + i], order[i]) << "row " << r << " pos " << i << (desc ? " desc" : " asc");
        const float want = x[r * L + order[i]];
        if (std::isnan(want))
          ASSERT_TRUE(std::isnan(sv[r * L + i]));
        else
          ASSERT_EQ(sv[r * L + i], want);
      }
    }
  }
  auto tk = topk(t.t(), 3, false);  // non-contiguous, along the last dim of [L, rows]
  EXPECT_EQ(tk.values.shape(), (Shape{L, 3}));
  auto tv = tk.values.to_vector();
  for (int c = 0; c < L; ++c) {
    std::vector<float> col;
    for (int r = 0; r < rows; ++r) col.push_back(x[r * L + c]);
    std::stable_sort(col.begin(), col.end(), [](float a, float b) { return std::isnan(b) ? !std::isnan(a) : a < b; });
    for (int i = 0; i < 3; ++i) {
      if (std::isnan(col[i]))
        ASSERT_TRUE(std::isnan(tv[c * 3 + i]));
      else
        ASSERT_EQ(tv[c * 3 + i], col[i]);
    }
  }
  EXPECT_THROW(topk(t, L + 1), IndexError);
}

namespace {
// torch.sort's stable order of one row: NaN last ascending, first descending; ties (including
// -0 and +0) in their original order.
std::vector<std::int32_t> ref_order(const double* row, std::int64_t L, bool desc) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(L));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const double va = row[a], vb = row[b];
    if (std::isnan(va)) return desc && !std::isnan(vb);
    if (std::isnan(vb)) return !desc;
    return desc ? va > vb : va < vb;
  });
  return order;
}

// sort (ascending and descending), argsort and topk of t ([rows, L] logically; `v` its values
// row-major as stored in its dtype) against the stable float64 order: indices exact, values
// the input's at those indices.
::testing::AssertionResult check_sort(const Tensor& t, const std::vector<double>& v, std::int64_t k) {
  const std::int64_t L = t.size(-1), rows = t.numel() / L;
  for (bool desc : {false, true}) {
    SortResult s = sort(t, desc);
    if (s.values.dtype() != t.dtype() || s.values.shape() != t.shape() || s.indices.shape() != t.shape())
      return ::testing::AssertionFailure() << "sort result shapes or dtype";
    const auto si = s.indices.to_int_vector(), ai = argsort(t, desc).to_int_vector();
    const auto sv = s.values.to_vector();
    SortResult tk = topk(t, k, desc);
    const auto ti = tk.indices.to_int_vector();
    const auto tv = tk.values.to_vector();
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto order = ref_order(&v[r * L], L, desc);
      for (std::int64_t i = 0; i < L; ++i) {
        const std::size_t e = r * L + i;
        const double want = v[r * L + order[i]];
        const bool value_ok = std::isnan(want) ? std::isnan(sv[e]) : sv[e] == static_cast<float>(want);
        if (si[e] != order[i] || ai[e] != order[i] || !value_ok)
          return ::testing::AssertionFailure()
                 << (desc ? "descending" : "ascending") << " row " << r << " position " << i << ": index " << si[e]
                 << " (argsort " << ai[e] << "), value " << sv[e] << "; want index " << order[i] << ", value " << want;
        if (i < k) {
          const std::size_t f = r * k + i;
          const bool top_ok = ti[f] == order[i] && (std::isnan(want) ? std::isnan(tv[f]) : tv[f] == float(want));
          if (!top_ok)
            return ::testing::AssertionFailure() << "topk(" << k << ", largest=" << desc << ") row " << r << " [" << i
                                                 << "]: " << ti[f] << " / " << tv[f] << ", want " << order[i];
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> sort_input(std::mt19937_64& rng, std::int64_t n) {
  auto x = uniform(rng, static_cast<std::size_t>(n), -4, 4);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = std::round(x[i]);  // ties
  for (std::size_t i = 1; i < x.size(); i += 97) x[i] = NAN;
  for (std::size_t i = 2; i < x.size(); i += 101) x[i] = (i / 101) % 2 ? INFINITY : -INFINITY;
  for (std::size_t i = 5; i < x.size(); i += 89) x[i] = (i / 89) % 2 ? 0.0f : -0.0f;
  return x;
}
}  // namespace

// Rows past llvmpipe's loop limit (the issue "Correctness on llvmpipe": rows longer than 65535
// got zeros that were not in the input, and a 100000-long row took 51 s), segment and merge
// edges (segments of up to 1024, partial runs), many short rows, ties, NaN, +-Inf, -0/+0.
TEST(Sort, LongRowsAndEdges) {
  GLT_RNG(rng);
  {
    // The case: positive values only, so a zero is a defect.
    auto x = uniform(rng, 100000, 1, 2);
    Tensor t = host(x, {100000});
    auto sv = sort(t).values.to_vector();
    EXPECT_EQ(std::count(sv.begin(), sv.end(), 0.0f), 0);
    auto xs = x;
    std::sort(xs.begin(), xs.end());
    EXPECT_EQ(sv, xs);
  }
  for (auto [rows, L] : std::vector<std::array<std::int64_t, 2>>{
           {1, 100000}, {2, 70001}, {3, 3000}, {2, 1023}, {2, 1024}, {2, 1025}, {3000, 7}, {700, 2}, {5, 1}}) {
    auto x = sort_input(rng, rows * L);
    EXPECT_TRUE(check_sort(host(x, {rows, L}), to_double(x), std::min<std::int64_t>(L, 10))) << rows << "x" << L;
  }
}

// Dtypes (f16/bf16 with many ties, int32 beyond 2^24 where floats could not tell values apart,
// u8, bool), views (a transposed [L, 3] and a strided slice), more than two dims, 0-size and
// 0-dim tensors.
TEST(Sort, DtypesViewsAndShapes) {
  GLT_RNG(rng);
  auto x = sort_input(rng, 4 * 2500);
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor t = host(x, {4, 2500}).to(dt);
    const auto stored = t.to(DType::f32).to_vector();
    EXPECT_TRUE(check_sort(t, to_double(stored), 7)) << dtype_name(dt);
  }
  auto xi = uniform_int(rng, 3 * 5000, -3, 3);
  for (std::size_t i = 0; i < xi.size(); ++i) xi[i] += (i % 2 ? 16777216 : -2147483000);
  EXPECT_TRUE(check_sort(ihost(xi, {3, 5000}), {xi.begin(), xi.end()}, 5)) << "int32";
  auto xu = uniform_int(rng, 2 * 3000, 0, 255);
  Tensor tu = ihost(xu, {2, 3000}).to(DType::u8);
  EXPECT_TRUE(check_sort(tu, {xu.begin(), xu.end()}, 4)) << "u8";
  Tensor tb = gt(tu, 127.0);
  std::vector<double> xb;
  for (int v : xu) xb.push_back(v > 127);
  EXPECT_TRUE(check_sort(tb, xb, 4)) << "bool";
  // [3, L] stored transposed: rows of step 3; then every other column of a [2, 2L] tensor.
  const std::int64_t L = 4000;
  auto xv = sort_input(rng, 3 * L);
  Tensor tt = host(xv, {L, 3}).t();
  EXPECT_TRUE(check_sort(tt, to_double(gather_view(xv, tt)), 3)) << "transposed";
  auto xw = sort_input(rng, 2 * 2 * L);
  Tensor ts = host(xw, {2, 2 * L}).slice(1, 1, 2 * L, 2);
  EXPECT_TRUE(check_sort(ts, to_double(gather_view(xw, ts)), 3)) << "strided slice";
  auto x3 = sort_input(rng, 2 * 3 * 1500);
  EXPECT_TRUE(check_sort(host(x3, {2, 3, 1500}), to_double(x3), 2)) << "3 dims";
  EXPECT_EQ(sort(Tensor::empty(device(), {3, 0})).indices.shape(), (Shape{3, 0}));
  EXPECT_EQ(topk(Tensor::empty(device(), {0, 5}), 2).values.shape(), (Shape{0, 2}));
  EXPECT_EQ(topk(host(x, {4, 2500}), 0).values.shape(), (Shape{4, 0}));
  SortResult s0 = sort(full(device(), {}, 3.0));
  EXPECT_EQ(s0.values.shape(), Shape{});
  EXPECT_EQ(s0.values.item(), 3.0f);
  EXPECT_EQ(s0.indices.to_int_vector(), std::vector<std::int32_t>{0});
}

// Under a lowered loop limit (so that any device runs them on small rows): segments of 8, so
// that a row of 1000 takes seven merge passes, and runs of every length at the row's end.
TEST(Sort, ShortSegmentsUnderALoweredLoopLimit) {
  GLT_RNG(rng);
  ScopedLoopLimit limit(60);
  for (auto [rows, L] : std::vector<std::array<std::int64_t, 2>>{{3, 1000}, {5, 77}, {40, 9}, {2, 8}}) {
    auto x = sort_input(rng, rows * L);
    EXPECT_TRUE(check_sort(host(x, {rows, L}), to_double(x), std::min<std::int64_t>(L, 5))) << rows << "x" << L;
  }
}
