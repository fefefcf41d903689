#!/usr/bin/env python3
"""wino35: PyTorch's CUDA graph (TF32 off) on torchcmp's cases, compute and read-back apart (issue 21).

  w35_torch.py W REGEX [--reps N]
For each case of W/cases.txt (torchcmp.py prepare) whose name REGEX finds: the replayed CUDA graph timed run by
run (mean, min ms) three ways: replay + torch.cuda.synchronize() (GPU work, no read-back), replay + .cpu() of
every output (torchcmp's "CUDA graph" column), and .cpu() alone of the outputs (the read-back). gltensor-run
--bench N (no --read-back: each run synchronizes) is its compute-only counterpart. Needs numpy, onnx, torch and
torchcmp's onnx_torch_ext.py / onnx_torch.py beside it."""
import os, re, sys, time, argparse
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("w"); ap.add_argument("only"); ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    import onnx, torch
    import onnx_torch_ext as OT
    torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; TF32 off; CUDA graph replays, {a.reps} runs")
    print("| model | replay + sync mean / min ms | replay + .cpu() mean / min ms | .cpu() alone mean / min ms | output MB |")
    print("|---|---|---|---|---|")
    for line in open(os.path.join(a.w, "cases.txt")):
        name, path, _, args = line.rstrip("\n").split("|")
        if not re.search(a.only, name): continue
        feeds = {m.group(1): torch.from_numpy(np.load(m.group(2))) for m in re.finditer(r"--input ([^=]+)=(\S+)", args)}
        try:
            with torch.no_grad():
                net = OT.build(onnx.load(path), feeds, "cuda")
                xs = [feeds[k].to("cuda").clone() for k in net.inputs]
                s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3): net(*xs)
                torch.cuda.current_stream().wait_stream(s); sync()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g): outs = net(*xs)

                def timed(fn):
                    for _ in range(max(a.reps // 10, 3)): fn()
                    ts = []
                    for _ in range(a.reps):
                        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
                    return f"{np.mean(ts) * 1e3:.3f} / {np.min(ts) * 1e3:.3f}"

                r_sync = timed(lambda: (g.replay(), sync()))
                r_cpu = timed(lambda: (g.replay(), [t.cpu() for t in outs]))
                g.replay(); sync()
                cpu = timed(lambda: [t.cpu() for t in outs])
                mb = sum(t.numel() * t.element_size() for t in outs) / 1e6
                print(f"| {name} | {r_sync} | {r_cpu} | {cpu} | {mb:.2f} |", flush=True)
        except Exception as e:
            print(f"| {name} | failed: {type(e).__name__}: {str(e)[:100]} | | | |", flush=True)


if __name__ == "__main__":
    main()
