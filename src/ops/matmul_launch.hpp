// What a matmul launch is made of (internal): the operands' quad layout, the problem the planner
// sees, the kernel's Variant from a plan and its uniforms (MatmulParams). Shared by
// src/ops/matmul.cpp and the kernel lab's `variants` mode (bench/kernel_lab_variants.cpp), which
// times every Variant of one problem through Launch.
#pragma once
#include <cstdint>

#include "gltensor/device.hpp"
#include "gltensor/linalg.hpp"
#include "ops/activation.hpp"
#include "ops/batched.hpp"
#include "ops/matmul_plan.hpp"
#include "ops/matmul_variant.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

/// Quad-load kernel operands: each contiguous along one of its matrix dims with quads of 4
/// elements on 4-element boundaries (offsets, strides and batch strides multiples of 4);
/// floating dtypes.
struct VecLayout {
  bool ok = false, a_kmajor = false, b_kmajor = false;
  std::int64_t qa_s = 0, qb_s = 0;  // quad stride of the other dim
};
VecLayout vec4_layout(const Tensor& a, const Tensor& b);

/// The planner's view of a (batch-expanded) a x b with `batch` entries and result dtype `out`.
MatmulProblem matmul_problem(const Tensor& a, const Tensor& b, const VecLayout& vl, std::int64_t batch, DType out,
                             bool split_columns, Precision precision);

/// The Variant a plan launches (not gemv): `d` the addend (may be undefined), `out` the result
/// or split-K's partial products; the vec4 variant's SLICE_K / UNROLL_K from plan.variant.
MatmulVariant matmul_variant(DeviceImpl& dev, const MatmulPlan& plan, const MatmulProblem& problem, const VecLayout& vl,
                             const BatchLayout& bl, const Tensor& d, const Tensor& out, std::int64_t split,
                             const Epilogue& epilogue, DType a_dtype, DType b_dtype);
/// The GEMV Variant of a gemv plan.
GemvVariant gemv_variant(const MatmulPlan& plan, const MatmulProblem& problem, const BatchLayout& bl, const Tensor& d,
                         const Tensor& out, const Epilogue& epilogue, DType a_dtype, DType b_dtype);

/// Uniforms of glsl/ops/matmul.glsl and its kernels (gemv.comp: the same names).
struct MatmulParams {
  std::int64_t M, N, K;
  const BatchLayout& bl;
  const Tensor &a, &b, &d;  // expanded to the batch; d may be undefined
  const VecLayout& vl;
  const MatmulPlan& plan;
  std::int64_t split;
  double alpha, beta;
  const Epilogue& epilogue;
  void set(Uniforms& u) const {
    u.u32("u_M", M);
    u.u32("u_N", N);
    u.u32("u_K", K);
    u.u32s("u_bshape", bl.shape);
    u.u32s("u_bstride_a", bl.strides[0]);
    u.u32s("u_bstride_b", bl.strides[1]);
    u.u32s("u_bstride_d", bl.strides[2]);
    u.u32("u_a_off", a.offset());
    u.u32("u_b_off", b.offset());
    u.u32("u_a_sm", a.strides()[a.dim() - 2]);
    u.u32("u_a_sk", a.strides()[a.dim() - 1]);
    u.u32("u_b_sk", b.strides()[b.dim() - 2]);
    u.u32("u_b_sn", b.strides()[b.dim() - 1]);
    if (d.defined()) {
      u.u32("u_d_off", d.offset());
      u.u32("u_d_sm", d.strides()[d.dim() - 2]);
      u.u32("u_d_sn", d.strides()[d.dim() - 1]);
    }
    if (plan.kernel == MatmulPlan::Kernel::vec4 || plan.kernel == MatmulPlan::Kernel::f16x2 ||
        plan.kernel == MatmulPlan::Kernel::warp) {
      u.u32("u_qa_s", vl.qa_s);
      u.u32("u_qb_s", vl.qb_s);
    }
    if (split > 0) u.u32("u_split", split);
    if (plan.reg_slices > 1) u.u32("u_kslice", plan.reg_kslice);
    u.f32("u_alpha", alpha);
    u.f32("u_beta", beta);
    u.f32("u_act_p0", epilogue.p0);
    u.f32("u_act_p1", epilogue.p1);
    if (epilogue.affine()) u.f32("u_act_scale", epilogue.scale), u.f32("u_act_shift", epilogue.shift);
    if (plan.splits > 1) {
      u.u32("u_kchunk", plan.kchunk);
      u.u32("u_nsplit", plan.splits);
    }
  }
};

}  // namespace gltensor::detail
