"""cnn38: PyTorch's kernels for the CNN nets (issue 21): per model, the CUDA graph's replay + synchronize
(compute only), then torch.profiler over N replays: each CUDA kernel's mean us per run, as cuDNN chose them.
  python3 torchprof.py MODELS_DIR NAME... [--reps N]
Needs torch (CUDA), onnx, numpy, and onnx_torch_ext.py / onnx_torch.py beside it (torchcmp's)."""
import sys, os, time, argparse
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models"); ap.add_argument("names", nargs="+"); ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    import onnx, torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_torch_ext as OT
    from torch.profiler import profile, ProfilerActivity
    torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
    for name in a.names:
        path = os.path.join(a.models, name + ".onnx")
        m = onnx.load(path)
        shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
        x = torch.from_numpy(np.random.default_rng(2111).uniform(0, 1, shape).astype(np.float32))
        with torch.no_grad():
            net = OT.build(m, {m.graph.input[0].name: x}, "cuda")
            xs = [x.cuda()]
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3): net(*xs)
            torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g): outs = net(*xs)
            ts = []
            for _ in range(a.reps):
                t0 = time.perf_counter(); g.replay(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t0)
            tc = []
            for _ in range(a.reps):
                t0 = time.perf_counter(); g.replay(); [o.cpu() for o in outs]; tc.append(time.perf_counter() - t0)
            print(f"--- {name}: CUDA graph replay + synchronize {np.mean(ts) * 1e3:.3f} / {np.min(ts) * 1e3:.3f} ms "
                  f"(mean / min), with .cpu() {np.mean(tc) * 1e3:.3f} / {np.min(tc) * 1e3:.3f}")
            n = 50
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(n): g.replay()
                torch.cuda.synchronize()
            tot = 0.0
            rows = []
            for e in prof.key_averages():
                t = getattr(e, "device_time_total", None)
                if t is None: t = e.cuda_time_total
                if t <= 0: continue
                rows.append((t / n, e.count / n, e.key)); tot += t / n
            for us, cnt, key in sorted(rows, reverse=True)[:12]:
                print(f"  {us:7.1f} us/run  x{cnt:.0f}  {key[:110]}")
            print(f"  kernels: {tot:.1f} us per run in all")


if __name__ == "__main__":
    main()
