# PyTorch reference for `gltensor_kernel_lab stream` / `big` / `addvariants` / `pages` (issue 21):
# add / mul (out=) and copy at 2^20, 2^24, 2^26 f32; with the argument `pages`, the rows of
# `gltensor_kernel_lab pages` instead (add by size and with aliased operands, reads and fills by
# size). Time per op = CUDA events over batches of back-to-back ops (median of 5 batches), GB/s
# at the bytes per element each row names (add, mul 12; copy, read 8; fill 4).
import sys

import torch


def timed(name, lg, fn, by, reps):
    n = 1 << lg
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / reps)
    ms = sorted(ts)[2]
    print(f"torch {name:<30} n=2^{lg:<2} {ms:8.4f} ms {by * n / ms * 1e-6:7.1f} GB/s", flush=True)


def reps_for(lg):
    return 200 if lg <= 20 else 50 if lg <= 24 else 20


if sys.argv[1:] == ["pages"]:
    a = torch.randn(1 << 28, device="cuda")
    b = torch.randn(1 << 26, device="cuda")
    c = torch.empty(1 << 26, device="cuda")
    for lg in (24, 25, 26):
        n = 1 << lg
        timed("add a,b,c", lg, lambda: torch.add(a[:n], b[:n], out=c[:n]), 12, reps_for(lg))
    n = 1 << 26
    x, y, z = a[:n], b, c
    timed("add c=a (c += b)", 26, lambda: z.add_(y), 12, 20)
    timed("add b=a (c = a + a)", 26, lambda: torch.add(x, x, out=z), 12, 20)
    timed("add a=b=c (c += c)", 26, lambda: z.add_(z), 12, 20)
    timed("read a,b (dot)", 26, lambda: torch.dot(x, y), 8, 20)
    timed("sum a", 26, lambda: x.sum(), 4, 20)
    timed("sum a", 27, lambda: a[: 1 << 27].sum(), 4, 20)
    for lg in (24, 25, 26, 27, 28):
        timed("fill", lg, lambda: a[: 1 << lg].fill_(1.0), 4, reps_for(lg))
    del a, b, c
    # Three buffers of 2^27 floats (1.5 GiB touched): whether CUDA's rate falls too at a larger footprint.
    a, b, c = (torch.randn(1 << 27, device="cuda") for _ in range(3))
    timed("add a,b,c", 27, lambda: torch.add(a, b, out=c), 12, 20)
    sys.exit(0)

for lg in (20, 24, 26):
    n = 1 << lg
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    for name, fn, by in (("add", lambda: torch.add(a, b, out=c), 12), ("mul", lambda: torch.mul(a, b, out=c), 12),
                         ("add (new output)", lambda: a + b, 12), ("copy", lambda: c.copy_(a), 8)):
        timed(name, lg, fn, by, reps_for(lg))
