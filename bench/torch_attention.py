#!/usr/bin/env python3
"""PyTorch's reference for gltensor_bench's BM_sdpa_train (issue 23): causal scaled-dot-product
attention forward + backward in float32 (TF32 off) at 8x16x1024xD, timed with CUDA events, median
of --reps steps after a warm-up; prints GFLOP/s counted as BM_sdpa_train counts them (7 GEMMs of
2*B*H*S*S*D FLOPs, half under the mask); --fwd: the forward alone with q, k, v requiring gradients
(gltensor_bench's BM_sdpa_fwd: 2 GEMMs)."""
import argparse

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--dims", default="64,128")
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--fwd", action="store_true")
a = ap.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
B, H, S = 8, 16, 1024
for D in [int(d) for d in a.dims.split(",")]:
    q, k, v, gy = (torch.randn(B, H, S, D, device="cuda") for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)

    def step():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if a.fwd:
            return
        o.backward(gy)
        for t in (q, k, v):
            t.grad = None

    for _ in range(3):
        step()
    times = []
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    ms = sorted(times)[len(times) // 2]
    gemms = 2.0 if a.fwd else 7.0
    print(f"torch sdpa {'fwd' if a.fwd else 'fwd+bwd'} {B}x{H}x{S}x{D} causal f32: {ms:.3f} ms, "
          f"{gemms * 2 * B * H * S * S * D / 2 / ms * 1e-6:.1f} GFLOP/s")
