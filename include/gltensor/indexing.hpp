// Data movement and indexing (torch semantics). Index tensors are int32 (any integer dtype is
// converted); negative indices count from the end. An index out of range on the GPU is skipped
// and raised as IndexError (naming the op) at the next host read or synchronize().
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// Joins tensors along dim (shapes equal except dim; dtypes promote). ValueError if empty list.
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Joins along a new dim.
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Views of consecutive pieces of `split_size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim = 0);
/// Views of pieces with the given sizes (must sum to the dim's size).
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t dim = 0);
/// `chunks` views of ceil(size / chunks) (torch.chunk).
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim = 0);

enum class PadMode { constant, reflect, replicate };
/// torch.nn.functional.pad: pads = {last_lo, last_hi, prev_lo, prev_hi, ...} (from the last dim
/// backwards); negative pads crop. reflect needs pad < size.
Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads, PadMode mode = PadMode::constant, double value = 0);
/// torch.Tensor.repeat: tiles the whole tensor reps[i] times along dim i (len(reps) >= dim()).
Tensor repeat(const Tensor& x, const std::vector<std::int64_t>& reps);
/// numpy.tile / torch.tile: like repeat, with reps padded with leading 1s.
Tensor tile(const Tensor& x, const std::vector<std::int64_t>& reps);
Tensor flip(const Tensor& x, const std::vector<std::int64_t>& dims);
/// Rolls elements along dim by shift (torch.roll with one dim).
Tensor roll(const Tensor& x, std::int64_t shift, std::int64_t dim);

/// out[p] = x[p with p[dim] := index[p]]; index has x's number of dims, out has index's shape.
Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index);
/// Selects entries along dim with a 1-D index.
Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index);
/// out = x with out[p with p[dim] := index[p]] = src[p] (duplicates: one of them wins).
/// DTypeError if src's dtype can't be cast to x's (can_cast: no float src into an integer x).
Tensor scatter(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
/// Same with += (atomic adds): float32 and int32 outputs (int32 wraps on overflow, as torch),
/// DTypeError for other dtypes. Float32 sums of duplicates are in an unspecified order.
Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
/// weight [num, dim], indices any shape -> [*indices.shape, dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
/// indices -> int32 [*indices.shape, num_classes] with ones at the indices (torch.nn.functional.
/// one_hot): indices must lie in [0, num_classes), no counting from the end (IndexError naming
/// one_hot at the next read otherwise); ValueError if num_classes <= 0.
Tensor one_hot(const Tensor& indices, std::int64_t num_classes);
/// Lower / upper triangle of the last two dims (diagonal offset as in torch.tril/triu).
Tensor tril(const Tensor& x, std::int64_t diagonal = 0);
Tensor triu(const Tensor& x, std::int64_t diagonal = 0);

struct SortResult {
  Tensor values;
  Tensor indices;  ///< int32
};
/// Sorts along the last dim (torch.sort with stable=True): ties (-0 and +0 included) keep their
/// original order; NaN sorts after every number ascending, before descending; integers compare
/// exactly. Any row length: a merge sort in passes (segments sorted by a bitonic network, Batcher
/// 1968, then merges by binary search), each invocation looping ~log2(length) times at most.
/// values: x's dtype; indices: int32 positions along the last dim.
SortResult sort(const Tensor& x, bool descending = false);
Tensor argsort(const Tensor& x, bool descending = false);
/// k largest (or smallest) along the last dim, sorted as sort(); IndexError unless 0 <= k <= size.
SortResult topk(const Tensor& x, std::int64_t k, bool largest = true);

}  // namespace gltensor
