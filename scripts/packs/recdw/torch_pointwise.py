# The recognizer's batched 1x1 convolutions as PyTorch computes them on CUDA (reference for
# gltensor's matmul planner): [O, C] @ [N, C, H*W] -> [N, O, H*W], f32, TF32 off; ms and TFLOP/s,
# the median of 5 batches of CUDA-event-timed runs. Usage: python3 torch_pointwise.py OxHWxCbN ...
import sys
import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")


def median_ms(fn, reps=20):
    """3 warm-up calls, then the median of 5 batches of `reps` calls, CUDA events around each batch."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / reps)
    return sorted(times)[2]


print("torch", torch.__version__, torch.cuda.get_device_name(0))
for spec in sys.argv[1:]:
    mnk, b = spec.split("b")
    O, HW, C = (int(v) for v in mnk.split("x"))
    N = int(b)
    w = torch.randn(O, C, device=dev)
    x = torch.randn(N, C, HW, device=dev)
    ms = median_ms(lambda: torch.matmul(w, x))
    # and as conv2d (cuDNN) on [N, C, H=1, W=HW]
    cms = median_ms(lambda: torch.nn.functional.conv2d(x.view(N, C, 1, HW), w.view(O, C, 1, 1)))
    fl = 2.0 * O * HW * C * N
    print(f"torch {spec}: matmul {ms:.4f} ms {fl / ms * 1e-9:.2f} TFLOP/s; conv2d {cms:.4f} ms {fl / cms * 1e-9:.2f} TFLOP/s")
