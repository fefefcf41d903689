#!/usr/bin/env python3
# PyTorch's f32 matmul (TF32 off) at the shapes of gltensor_kernel_lab's warp mode (bench/kernel_lab_variants.cpp:
# lab_warp), for same-run ratios: python3 bench/torch_matmul.py [MxNxK ...]. CUDA events, median of 5
# batches of about 50 ms after warm-up; 'B K-major' rows multiply by a transposed [N, K] tensor (linear's w.t()).
import sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
shapes = [(n, n, n, bt) for bt in (False, True) for n in (1024, 2048, 4096, 8192)] + [
    (4096, 4096, 1024, True), (512, 4096, 4096, True), (3000, 2052, 1500, True), (3000, 2052, 1500, False),
    (256, 4096, 4096, False)]
if len(sys.argv) > 1:
    shapes = [tuple(int(x) for x in s.split("x")) + (False,) for s in sys.argv[1:]]
print("torch", torch.__version__, torch.cuda.get_device_name())
for M, N, K, bt in shapes:
    a = torch.randn(M, K, device=dev)
    b = torch.randn(N, K, device=dev).t() if bt else torch.randn(K, N, device=dev)
    for _ in range(3):
        c = a @ b
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); c = a @ b; e.record(); torch.cuda.synchronize()
    first = s.elapsed_time(e)
    reps = max(1, min(200, int(50 / max(first, 1e-3))))
    t = []
    for _ in range(5):
        s.record()
        for _ in range(reps):
            c = a @ b
        e.record(); torch.cuda.synchronize()
        t.append(s.elapsed_time(e) / reps)
    t.sort(); ms = t[2]
    print(f"torch matmul {M} x {N} x {K}{', B K-major' if bt else ''}: {ms:.4f} ms {2.0*M*N*K/ms*1e-9:.1f} TFLOP/s")
