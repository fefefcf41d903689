#!/usr/bin/env python3
"""PyTorch's GPU time for torchcmp's attention cases (attn38, issue 21): the target for gltensor's kernels.

  torch_kernels.py W [--only REGEX] [--reps N]

For each case of W/cases.txt (torchcmp.py prepare) matching --only: the ONNX net built as torchcmp.py builds it
(onnx_torch_ext), captured in a CUDA graph; GPU time per replay from CUDA events around N back-to-back replays
(no read-back: the kernels alone, as gltensor-run --profile's timer queries measure them), the profiler's
kernels (name, count, us per replay), and F.scaled_dot_product_attention on the same q, k, v (PyTorch's fused
kernel, for reference) timed the same way."""
import sys, os, re, argparse
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("w"); ap.add_argument("--only", default="attention"); ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    import onnx, torch
    import onnx_torch_ext as OT
    torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
    if not torch.cuda.is_available(): print("no CUDA"); return
    for line in open(os.path.join(a.w, "cases.txt")):
        name, path, _, args = line.rstrip("\n").split("|")
        if not re.search(a.only, name): continue
        feeds = {m.group(1): torch.from_numpy(np.load(m.group(2))) for m in re.finditer(r"--input ([^=]+)=(\S+)", args)}
        with torch.no_grad():
            net = OT.build(onnx.load(path), feeds, "cuda")
            xs = [feeds[k].cuda() for k in net.inputs]
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3): net(*xs)
            torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g): net(*xs)

            def per_run_us(fn, n):
                for _ in range(max(n // 10, 3)): fn()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize(); e0.record()
                for _ in range(n): fn()
                e1.record(); torch.cuda.synchronize()
                return e0.elapsed_time(e1) * 1e3 / n

            gt = per_run_us(g.replay, a.reps)
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(20): g.replay()
                torch.cuda.synchronize()
            ks = []
            for ev in prof.key_averages():
                t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
                if t > 0 and ev.count >= 20: ks.append((ev.key[:60], ev.count // 20, t / 20))
            ks.sort(key=lambda x: -x[2])
            print(f"{name}: CUDA graph replay, GPU time {gt:.1f} us per run (events over {a.reps} replays, no read-back)")
            for k, c, t in ks[:8]: print(f"  kernel {k}: {c} a run, {t:.1f} us a run (profiler)")
            if len(xs) == 3:
                q, k, v = xs
                sc = 0.258 if "attention" in name else None

                def sdpa(): return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=sc)
                print(f"  F.scaled_dot_product_attention (eager, no graph): {per_run_us(sdpa, a.reps):.1f} us a run")


if __name__ == "__main__":
    main()
