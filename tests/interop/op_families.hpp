// Every public op family, small, for the state and context tests: each runs its ops on a device
// and checks a few values against host references (an op that ran in the wrong context or with
// the wrong bindings gives wrong values).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "test_util.hpp"

namespace glt_families {

using namespace gltensor;

struct Family {
  std::string name;
  std::function<void(Device&)> run;
};

inline std::vector<float> iota(std::size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 13) - 6);
  return v;
}

// conv2d of ones (C channels, K x K kernel of ones, padding 1): window counts times C.
inline float conv_ones(std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t y, std::int64_t x) {
  float n = 0;
  for (std::int64_t dy = -1; dy <= 1; ++dy)
    for (std::int64_t dx = -1; dx <= 1; ++dx)
      if (y + dy >= 0 && y + dy < H && x + dx >= 0 && x + dx < W) n += 1;
  return n * static_cast<float>(C);
}

inline std::vector<Family> families() {
  std::vector<Family> f;
  f.push_back({"elementwise", [](Device& d) {
                 Tensor a = Tensor::from_host(d, iota(300), {300}), b = full(d, {300}, 2.0);
                 auto got = (gelu(a * b + 1.0) - where(gt(a, b), a, b)).to_vector();
                 auto cl = clamp(a, -1.0, 1.0).to(DType::f16).to(DType::f32).to_vector();
                 auto av = iota(300);
                 EXPECT_FLOAT_EQ(cl[0], -1.0f);
                 EXPECT_EQ(got.size(), 300u);
                 Tensor p = arange(d, 24).view({2, 3, 4}).permute({2, 0, 1}).contiguous();
                 EXPECT_EQ(p.to_vector()[1], 4.0f);  // [0, 0, 1] = arange[0, 1, 0]
                 Tensor z = zeros(d, {4});
                 z.copy_(ones(d, {1}));
                 EXPECT_EQ(z.to_vector(), std::vector<float>(4, 1.0f));
                 (void)av;
               }});
  f.push_back({"reduce", [](Device& d) {
                 Tensor a = Tensor::from_host(d, iota(4 * 50), {4, 50});
                 EXPECT_FLOAT_EQ(sum(a).item(), [] {
                   float s = 0;
                   for (float v : iota(200)) s += v;
                   return s;
                 }());
                 auto sm = softmax(a, 1).to_vector();
                 float row = 0;
                 for (int i = 0; i < 50; ++i) row += sm[static_cast<std::size_t>(i)];
                 EXPECT_NEAR(row, 1.0f, 1e-5);
                 EXPECT_EQ(argmax(a, 1).to_int_vector()[0], 12);
                 (void)log_softmax(a, 0).to_vector();
                 (void)cumsum(a, 1).to_vector();
                 (void)var(a, {1}).to_vector();
                 (void)logsumexp(a, {1}).to_vector();
                 (void)amax(a, {0}).to_vector();
               }});
  f.push_back(
      {"matmul", [](Device& d) {
         // Every kernel variant on whole tiles, then batched, split-K, gemm and linear.
         Tensor a = ones(d, {64, 64}), b = ones(d, {64, 128});
         for (const char* k : {"", "vec4", "vec4s", "vec4u", "vec4su", "tile64", "tile128"}) {
           glt_test::ScopedSettings s;
           s->matmul_kernel = gltensor::detail::parse_matmul_kernel(k);
           s->tune = 0;
           EXPECT_EQ(matmul(a, b).to_vector()[5], 64.0f) << "kernel " << k;
         }
         EXPECT_EQ(matmul(ones(d, {3, 5, 7}), ones(d, {3, 7, 2})).to_vector()[0], 7.0f);
         EXPECT_EQ(matmul(ones(d, {64, 1024}), ones(d, {1024, 64})).to_vector()[0], 1024.0f);
         EXPECT_EQ(gemm(ones(d, {4, 3}), ones(d, {5, 4}), Tensor(), 2.0, 0.0, true, true).to_vector()[0], 8.0f);
         EXPECT_EQ(linear(ones(d, {2, 8}), ones(d, {4, 8}), ones(d, {4}), Activation::relu).to_vector()[0], 9.0f);
       }});
  f.push_back({"conv2d", [](Device& d) {
                 const std::int64_t C = 3, H = 9, W = 7;
                 Tensor x = ones(d, {2, C, H, W}), w = ones(d, {4, C, 3, 3});
                 requires_grad_(x);
                 requires_grad_(w);
                 Tensor y = conv2d(x, w, Tensor(), Conv2dOptions::pad(1));
                 auto yv = y.to_vector();
                 EXPECT_EQ(yv[0], conv_ones(C, H, W, 0, 0));
                 EXPECT_EQ(yv[static_cast<std::size_t>(W + 1)], conv_ones(C, H, W, 1, 1));
                 backward(sum(y));
                 EXPECT_EQ(grad(w).to_vector()[4], 2.0f * static_cast<float>(H * W));  // centre tap sees every pixel
                 EXPECT_EQ(grad(x).to_vector()[static_cast<std::size_t>(W + 1)], 4.0f * 9.0f);
                 Conv2dOptions g = Conv2dOptions::pad(1);
                 g.groups = 3;
                 EXPECT_EQ(conv2d(ones(d, {1, 3, 5, 5}), ones(d, {3, 1, 3, 3}), ones(d, {3}), g).to_vector()[6], 10.0f);
                 EXPECT_EQ(conv_transpose2d(ones(d, {1, 2, 3, 3}), ones(d, {2, 1, 2, 2})).to_vector()[0], 2.0f);
               }});
  f.push_back({"pooling", [](Device& d) {
                 Tensor x = Tensor::from_host(d, iota(2 * 16, 0.5f), {1, 2, 4, 4});
                 requires_grad_(x);
                 Pool2dOptions o;
                 Tensor m = max_pool2d(x, o);
                 Tensor a = avg_pool2d(x, o);
                 backward(sum(m) + sum(a));
                 EXPECT_EQ(m.to_vector().size(), 8u);
                 EXPECT_EQ(grad(x).to_vector().size(), 32u);
                 (void)adaptive_avg_pool2d(x, {3, 3}).to_vector();
                 (void)global_avg_pool2d(x).to_vector();
               }});
  f.push_back({"attention", [](Device& d) {
                 Tensor q = ones(d, {1, 2, 8, 16}), v = Tensor::from_host(d, iota(256), {1, 2, 8, 16});
                 auto out = scaled_dot_product_attention(q, q, v, Tensor(), true).to_vector();
                 EXPECT_FLOAT_EQ(out[0], iota(256)[0]);  // causal: row 0 attends to key 0 only
                 glt_test::ScopedSettings s;
                 s->attention_composite = true;
                 EXPECT_FLOAT_EQ(scaled_dot_product_attention(q, q, v, Tensor(), true).to_vector()[0], iota(256)[0]);
               }});
  f.push_back({"random", [](Device& d) {
                 Generator g(7);
                 auto r = rand(d, {1000}, g).to_vector();
                 for (float x : r) ASSERT_TRUE(x >= 0.0f && x < 1.0f);
                 (void)randn(d, {100}, g).to_vector();
                 (void)bernoulli(d, {100}, 0.5, g).to_vector();
                 (void)dropout(ones(d, {100}), 0.5, g).to_vector();
               }});
  f.push_back(
      {"indexing", [](Device& d) {
         Tensor x = Tensor::from_host(d, iota(20), {4, 5});
         Tensor idx = Tensor::from_host(d, std::vector<std::int32_t>{3, 0}, {2}, DType::i32);
         EXPECT_EQ(index_select(x, 0, idx).to_vector()[0], iota(20)[15]);
         (void)gather(x, 1, Tensor::from_host(d, std::vector<std::int32_t>(8, 1), {4, 2}, DType::i32)).to_vector();
         auto s = sort(x, true);
         EXPECT_EQ(s.values.to_vector()[0], -2.0f);  // row 0: -6 .. -2
         (void)concat({x, x}, 1).to_vector();
         (void)pad(x, {1, 1}).to_vector();
         EXPECT_THROW(
             index_select(x, 0, Tensor::from_host(d, std::vector<std::int32_t>{9}, {1}, DType::i32)).to_vector(),
             IndexError);  // the device-side error flag
       }});
  f.push_back({"nn", [](Device& d) {
                 Generator g(3);
                 nn::Linear lin(d, 8, 4, g);
                 nn::Adam opt(lin.parameters(), 1e-2);
                 Tensor x = randn(d, {6, 8}, g);
                 Tensor t = Tensor::from_host(d, std::vector<std::int32_t>{0, 1, 2, 3, 0, 1}, {6}, DType::i32);
                 Tensor loss = cross_entropy(layer_norm(lin(x), 1), t);
                 backward(loss);
                 opt.step();
                 EXPECT_TRUE(std::isfinite(loss.item()));
                 (void)group_norm(ones(d, {2, 4, 3, 3}), 2).to_vector();
                 (void)mse_loss(x, x).item();
               }});
  f.push_back({"host transfer", [](Device& d) {
                 Tensor a = Tensor::from_host(d, iota(64), {64});
                 AsyncRead r = (a * 2.0).to_host_async();
                 auto v = r.get_float();
                 EXPECT_EQ(v[1], 2.0f * iota(64)[1]);
                 { AsyncRead dropped = a.to_host_async(); }  // destroyed before get()
                 EXPECT_EQ(Tensor::from_bytes(d, "\x01\x02\x03", 3, {3}, DType::u8).to_int_vector()[2], 3);
                 // a read of 1 MiB + 12 bytes in pieces (a fence each), into the caller's memory and a vector
                 const std::vector<float> big = iota(262147);
                 const Tensor b = Tensor::from_host(d, big, {262147}) + 1.0;
                 std::vector<float> got(big.size());
                 b.to_host(got.data(), got.size() * 4);
                 EXPECT_EQ(got[0], big[0] + 1.0f);
                 EXPECT_EQ(got[200000], big[200000] + 1.0f);
                 EXPECT_EQ(got.back(), big.back() + 1.0f);
                 EXPECT_EQ(b.to_vector()[262146], big.back() + 1.0f);
                 // an upload of 4.5 MiB + 4 bytes: by the device's default (GPUs: 8 pieces through both
                 // halves of the ring; software rasterizers: glBufferSubData), then through the ring in
                 // pieces written by the helper threads with streaming stores whatever the device
                 const std::vector<float> up = iota(1179649);
                 for (int way = 0; way < 2; ++way) {
                   glt_test::ScopedSettings s;
                   if (way == 1) {
                     s->upload_direct_bytes = 0;
                     s->upload_pieces = 8;
                     s->upload_copy = gltensor::detail::UploadCopySetting::threads_stream;
                   }
                   const std::vector<float> c = (Tensor::from_host(d, up, {1179649}) * 2.0).to_vector();
                   EXPECT_EQ(c[700001], 2.0f * up[700001]) << way;
                   EXPECT_EQ(c.back(), 2.0f * up.back()) << way;
                 }
                 d.flush();
                 d.synchronize();
                 d.trim();
               }});
  return f;
}

}  // namespace glt_families
