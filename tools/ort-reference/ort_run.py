#!/usr/bin/env python3
"""ONNX Runtime reference runner (CPU) through Python's onnxruntime, for machines without npm:
the options of ort_run.js that the model tests and benches use, with the same output.
  python3 ort_run.py MODEL.onnx [--input NAME=FILE.npy]... [--shape NAME=1x3x64x64]...
                     [--output-dir DIR] [--save-inputs DIR] [--bench N] [--threads N] [--seed S]
Inputs without a file get uniform [0, 1) float32 values of the given shape (numpy's generator:
not ort_run.js's values). Outputs go to DIR/<name>.npy (characters outside [A-Za-z0-9._-]
replaced by '_'; int8/int16/uint16 as int32, float16 as float32: the dtypes gltensor's .npy reader
takes). Prints one JSON line {"load_ms", "run_ms", "bench_ms" (with --bench), "outputs"}.
tests/model/test_model.cpp uses it where GLTENSOR_ORT_PYTHON names this file."""
import argparse
import json
import os
import re
import sys
import time

import numpy as np
import onnxruntime as ort


def kv(s):
    if "=" not in s:
        raise SystemExit("ort_run.py: expected NAME=VALUE, got " + s)
    k, v = s.split("=", 1)
    return k, v


def fname(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--output-dir")
    p.add_argument("--save-inputs")
    p.add_argument("--bench", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    files = dict(kv(s) for s in a.input)
    shapes = {k: [int(d) for d in v.split("x")] for k, v in (kv(s) for s in a.shape)}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if a.threads > 0:
        so.intra_op_num_threads = a.threads
    t0 = time.perf_counter()
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(a.seed)
    feeds = {}
    for i in s.get_inputs():
        if i.name in files:
            feeds[i.name] = np.load(files[i.name])
        elif i.name in shapes:
            feeds[i.name] = rng.random(shapes[i.name], dtype=np.float32)
        else:
            raise SystemExit("ort_run.py: input " + i.name + " needs --input or --shape")
    if a.save_inputs:
        os.makedirs(a.save_inputs, exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(a.save_inputs, fname(k)), v)
    t1 = time.perf_counter()
    out = s.run(None, feeds)
    run_ms = (time.perf_counter() - t1) * 1e3
    bench_ms = None
    if a.bench > 0:
        t2 = time.perf_counter()
        for _ in range(a.bench):
            out = s.run(None, feeds)
        bench_ms = (time.perf_counter() - t2) * 1e3 / a.bench
    summary = {}
    for o, v in zip(s.get_outputs(), out):
        v = np.asarray(v)
        summary[o.name] = {"shape": list(v.shape), "type": str(v.dtype)}
        if a.output_dir:
            os.makedirs(a.output_dir, exist_ok=True)
            if v.dtype in (np.int8, np.int16, np.uint16):
                v = v.astype(np.int32)
            elif v.dtype == np.float16:
                v = v.astype(np.float32)
            elif v.dtype == np.bool_:  # as ort_run.js writes them (npy.js): uint8 0 / 1
                v = v.astype(np.uint8)
            np.save(os.path.join(a.output_dir, fname(o.name)), v)
    print(json.dumps({"load_ms": load_ms, "run_ms": run_ms, "bench_ms": bench_ms, "outputs": summary}))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line, as ort_run.js
        print("ort_run.py: " + str(e), file=sys.stderr)
        sys.exit(1)
