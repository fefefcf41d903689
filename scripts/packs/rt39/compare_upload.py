#!/usr/bin/env python3
"""Ratios of gltensor_io_bench's uploads to PyTorch's pageable `.cuda()` (torch_upload.py) in one call.

Usage: compare_upload.py TORCH_LOG VARIANT=IO_BENCH_LOG ...
Prints, per size, each variant's from_bytes + synchronize mean (us) and its throughput ratio to
PyTorch's pageable copy (PyTorch's mean / gltensor's mean: >= 1.00 is at or past PyTorch).
"""
import re
import sys

UP = re.compile(r"^upload +(\d+) KB us: from_bytes mean +([\d.]+) min +([\d.]+) p50 +([\d.]+) \| \+synchronize mean +([\d.]+) min +([\d.]+) p50 +([\d.]+)")
TU = re.compile(r"^torch upload +(\d+) KB (pageable|pinned) +us: \.cuda\(\)\+synchronize mean +([\d.]+) min +([\d.]+) p50 +([\d.]+)")


def main():
    torch = {}
    for line in open(sys.argv[1], errors="replace"):
        m = TU.match(line)
        if m:
            torch[(int(m[1]), m[2])] = (float(m[3]), float(m[4]), float(m[5]))
    variants = []
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        rows = {}
        try:
            for line in open(path, errors="replace"):
                m = UP.match(line)
                if m:
                    rows[int(m[1])] = tuple(float(m[i]) for i in range(2, 8))
        except OSError:
            pass
        variants.append((name, rows))
    sizes = sorted({k for _, r in variants for k in r} | {k for k, _ in torch})
    print("us per upload until on the device (mean / min); ratio = PyTorch pageable mean / gltensor mean")
    print("| KB | torch pageable | torch pinned | " + " | ".join(n for n, _ in variants) + " |")
    print("|---" * (3 + len(variants)) + "|")
    for k in sizes:
        tp = torch.get((k, "pageable"))
        tn = torch.get((k, "pinned"))
        cells = [str(k), f"{tp[0]:.1f} / {tp[1]:.1f}" if tp else "-", f"{tn[0]:.1f} / {tn[1]:.1f}" if tn else "-"]
        for _, rows in variants:
            r = rows.get(k)
            if not r:
                cells.append("-")
                continue
            ratio = f" **{tp[0] / r[3]:.2f}x**" if tp else ""
            cells.append(f"{r[3]:.1f} / {r[4]:.1f}{ratio}")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
