// Reductions, scans and softmax (PyTorch semantics).
//
// dims: the dims to reduce (negative counts from the end; duplicates are an error); an empty list
// reduces every dim. keepdim keeps reduced dims with size 1. Results are contiguous.
// Dtypes: float inputs reduce in f32 and return their dtype; sum/prod of integer or bool inputs
// return int32 (accumulated in f32: exact up to 2^24); mean/var/std/logsumexp/norm/softmax of
// integer inputs return float32. argmax/argmin return int32 indices (first occurrence on ties;
// NaN counts as the maximum, as in torch). NaN propagates through every reduction.
// Empty reductions: sum 0, prod 1, mean NaN, var NaN, logsumexp -inf, all true, any false;
// max/min/argmax/argmin of zero elements throw IndexError.
// Large reductions run in two passes (partial states per chunk, then a final pass); variance
// uses Welford's update combined with Chan et al.'s pairwise formula.
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor {

using Dims = std::vector<std::int64_t>;

Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
/// Maximum / minimum values over dims (torch.amax / torch.amin).
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
/// Index of the max/min along dim; dim = nullopt-like -1000 flattens (torch.argmax(x)).
inline constexpr std::int64_t kAllDims = -1000;
Tensor argmax(const Tensor& x, std::int64_t dim = kAllDims, bool keepdim = false);
Tensor argmin(const Tensor& x, std::int64_t dim = kAllDims, bool keepdim = false);
/// Variance with Bessel-style correction (divides by N - correction, clamped at 0).
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
/// log(sum(exp(x))) computed stably (max subtracted).
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);
/// Vector p-norm for p = 1 or 2 (ValueError otherwise).
Tensor norm(const Tensor& x, double p = 2.0, const Dims& dims = {}, bool keepdim = false);
/// -> bool
Tensor all(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Dims& dims = {}, bool keepdim = false);

/// Inclusive prefix sum along dim (same shape; integer inputs give int32).
Tensor cumsum(const Tensor& x, std::int64_t dim);
/// exp(x - max) / sum(exp(x - max)) along dim; log_softmax = x - max - log(sum(exp(x - max))).
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace gltensor
