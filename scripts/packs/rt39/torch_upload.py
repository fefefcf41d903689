#!/usr/bin/env python3
"""PyTorch's host-to-device copies, the reference of gltensor_io_bench's uploads (upload38, issue 21).

Per size (KB): `x.cuda()` of a float32 tensor in pageable host memory (made once, kept warm, as
gltensor_io_bench's std::vector), then torch.cuda.synchronize(): wall time per copy (us; mean, min,
median) after warm-up copies, and the same copy timed by CUDA events; then a pinned source
(`pin_memory()`) for what the link does. Lines parsed by compare_upload.py.
Usage: torch_upload.py [--runs N] [--sizes KB,KB,...]
"""
import argparse
import statistics
import time

import torch


def spread(v):
    return statistics.fmean(v), min(v), statistics.median(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--sizes", default="64,256,1024,2048,4096,4800,8192,16384")
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.cuda.init()
    torch.empty(1, device=dev)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    for kb in [int(s) for s in a.sizes.split(",") if s]:
        n = kb * 1024 // 4
        for kind in ("pageable", "pinned"):
            x = torch.rand(n)
            if kind == "pinned":
                x = x.pin_memory()
            wall, ev = [], []
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for i in range(a.runs // 10 + 3 + a.runs):
                t0 = time.perf_counter()
                s.record()
                y = x.cuda()
                e.record()
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                if i >= a.runs // 10 + 3:
                    wall.append((t1 - t0) * 1e6)
                    ev.append(s.elapsed_time(e) * 1e3)
            if not torch.equal(y.cpu(), x.cpu()):
                print(f"torch upload {kb} KB {kind}: WRONG copy")
            m, lo, md = spread(wall)
            em, elo, _ = spread(ev)
            print(f"torch upload {kb:6d} KB {kind:8s} us: .cuda()+synchronize mean {m:7.1f} min {lo:7.1f} p50 {md:7.1f}"
                  f" | events mean {em:7.1f} min {elo:7.1f} | {kb * 1024 / m / 1e3:.2f} GB/s (mean)")


if __name__ == "__main__":
    main()
