# PyTorch reference for `gltensor_kernel_lab stream` / `big` / `addvariants` (issue 21): add / mul (out=) and copy at 2^20, 2^24, 2^26 f32,
# time per op = CUDA events over batches of back-to-back ops (median of 5 batches), GB/s at 12
# (add, mul) or 8 (copy) bytes per element.
import torch

for lg in (20, 24, 26):
    n = 1 << lg
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    reps = 200 if lg == 20 else 50 if lg == 24 else 20
    for name, fn, by in (("add", lambda: torch.add(a, b, out=c), 12), ("mul", lambda: torch.mul(a, b, out=c), 12),
                         ("add (new output)", lambda: a + b, 12), ("copy", lambda: c.copy_(a), 8)):
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
        print(f"torch {name:<30} n=2^{lg:<2} {ms:8.4f} ms {by * n / ms * 1e-6:7.1f} GB/s")
