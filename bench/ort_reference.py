#!/usr/bin/env python3
"""ONNX Runtime (pip onnxruntime, CPU) reference for gltensor_ocr_bench on machines without
npm: python3 ort_reference.py MODEL.onnx X.npy [--runs N] [--threads N], or with --shape 64x1x64
instead of X.npy uniform [0, 1) float32 values of that shape (gltensor_model_bench --ort-python).
The model's first input is fed. Prints one JSON line {"run_ms": first run, "bench_ms": mean of N
runs} like tools/ort-reference/ort_run.js."""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("x", nargs="?")
p.add_argument("--shape", help="AxBxC: random input of this shape instead of X.npy")
p.add_argument("--runs", type=int, default=5)
p.add_argument("--threads", type=int, default=0)
a = p.parse_args()
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
if a.threads > 0:
    so.intra_op_num_threads = a.threads
s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
if a.shape:
    x = np.random.default_rng(1).random([int(d) for d in a.shape.split("x")], dtype=np.float32)
else:
    x = np.load(a.x).astype(np.float32)
feeds = {s.get_inputs()[0].name: x}
t0 = time.perf_counter()
s.run(None, feeds)
run_ms = (time.perf_counter() - t0) * 1e3
t0 = time.perf_counter()
for _ in range(a.runs):
    s.run(None, feeds)
print(json.dumps({"run_ms": run_ms, "bench_ms": (time.perf_counter() - t0) * 1e3 / a.runs}))
