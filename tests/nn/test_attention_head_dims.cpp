// scaled_dot_product_attention's flash kernels at head dims 1 to 256 against the float64
// reference, forward and gradients (its own executable: llvmpipe takes minutes to compile the
// 128- and 256-wide kernels on a cold shader cache: 5.5 min here under load, hence its longer
// ctest timeout). Tolerances as test_attention.cpp.
#include "attention_ref.hpp"

using namespace gltensor;
using namespace glt_test;
using namespace attn_test;

// Head dims 1 to 256 (the planner's tiles shrink with them), E != Ev, tile edges.
TEST(FlashAttention, HeadDims) {
  GLT_RNG(rng);
  for (const int d : {1, 63, 64, 65, 128, 256}) check(rng, {1, 2, 2, 37, 41, d, d});
  check(rng, {2, 1, 1, 20, 33, 256, 8});
}
