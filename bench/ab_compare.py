#!/usr/bin/env python3
"""A/B of two gltensor_bench binaries measured in the same run (interleaved rounds).

Usage: ab_compare.py --old A1.json A2.json ... --new B1.json B2.json ... [--device D] [--command C]
Prints a Markdown table: per benchmark the median real time of each binary over its rounds and
new/old (above 1: the new binary is slower)."""
import argparse
import json
import statistics


def load(files):
    times = {}
    for f in files:
        with open(f) as fh:
            for b in json.load(fh)["benchmarks"]:
                if b.get("run_type", "iteration") != "iteration":
                    continue
                times.setdefault(b["name"], []).append(b["real_time"] * {"ns": 1e-3, "us": 1, "ms": 1e3, "s": 1e6}[b["time_unit"]])
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", nargs="+", required=True)
    ap.add_argument("--new", nargs="+", required=True)
    ap.add_argument("--device", default="")
    ap.add_argument("--command", default="")
    a = ap.parse_args()
    old, new = load(a.old), load(a.new)
    if a.device:
        print(f"device: {a.device}; command: {a.command}\n")
    print("| benchmark | old (us, median) | new (us, median) | new/old |")
    print("|---|---:|---:|---:|")
    ratios = []
    for name in old:
        if name not in new:
            continue
        o, n = statistics.median(old[name]), statistics.median(new[name])
        ratios.append(n / o)
        print(f"| {name} | {o:.2f} | {n:.2f} | {n / o:.3f} |")
    if ratios:
        print(f"\ngeometric mean new/old: {statistics.geometric_mean(ratios):.3f} over {len(ratios)} benchmarks")


if __name__ == "__main__":
    main()
