#!/usr/bin/env python3
"""Prints gltensor / PyTorch ratios from a Google Benchmark JSON (gltensor_bench) and the JSON of
../shared/gpu/torch_reference.py measured in the same run, as a Markdown table.
Usage: compare.py GLTENSOR.json TORCH.json [--device NAME] [--command CMD]"""
import argparse, datetime, json

ap = argparse.ArgumentParser()
ap.add_argument("gl"); ap.add_argument("torch")
ap.add_argument("--device", default="?"); ap.add_argument("--command", default="bench/run_gpu.sh")
a = ap.parse_args()
gl = {b["name"]: b for b in json.load(open(a.gl))["benchmarks"] if b.get("run_type", "iteration") == "iteration"}
tr = json.load(open(a.torch))
def torch_row(name, shape=None):
    for r in tr:
        if r["name"] == name and (shape is None or r.get("shape") == shape):
            return r
    return None

rows = []
def add(case, glname, unit, tname, tshape, target, note=""):
    g = gl.get(glname); t = torch_row(tname, tshape)
    if not g or g.get("error_occurred"):
        rows.append((case, "skipped" if g else "missing", "", "", target, note)); return
    gv = g.get(unit); tv = t.get(unit) if t else None
    ratio = f"{gv / tv:.2f}" if gv and tv else "n/a"
    rows.append((case, f"{gv:.1f} {unit}", f"{tv:.1f} {unit}" if tv else "n/a", ratio, target, note))

for n in (256, 1024, 2048, 4096, 8192):
    add(f"matmul f32 {n}", f"BM_matmul/f32/{n}/real_time", "GFLOP/s", "matmul_f32", f"{n}x{n}x{n}", ">= 0.85" if n >= 4096 else "")
for n in (4096, 8192):
    add(f"matmul f16 {n}", f"BM_matmul/f16/{n}/real_time", "GFLOP/s", "matmul_f16", f"{n}x{n}x{n}", "faster than f32")
add("add 2^26", "BM_elementwise/add/26/real_time", "GB/s", "add_f32", None, ">= 0.9")
add("mul 2^26", "BM_elementwise/mul/26/real_time", "GB/s", "add_f32", None, ">= 0.9", "vs torch add (same bytes)")
add("gelu 2^26", "BM_elementwise/gelu/26/real_time", "GB/s", "copy_f32", None, "", "vs torch copy (same bytes)")
add("sum 2^26", "BM_sum/26/real_time", "GB/s", "sum_f32", None, ">= 0.9")
add("softmax 16384x4096", "BM_rows/softmax/16384/4096/real_time", "GB/s", "softmax_rows", None, ">= 0.8")
add("layer_norm 16384x4096", "BM_rows/layer_norm/16384/4096/real_time", "GB/s", "layernorm", None, ">= 0.8")
# the fused transformer kernels (issue 23: >= 0.8x PyTorch's bandwidth); PyTorch's cases are to be
# named rms_norm / rope / swiglu (+ _backward) in torch_reference.py ("n/a" until then)
for case, shape in (("rms_norm", "16384x4096"), ("rope", "8x16x1024x128"), ("swiglu", "16384x2x4096")):
    for suffix in ("", "_backward"):
        add(f"{case}{suffix.replace('_', ' ')} {shape}", f"BM_transformer/{case}{suffix}/real_time", "GB/s",
            f"{case}{suffix}", None, ">= 0.8")
add("conv2d 32x64x56x56 k64 3x3", "BM_conv2d/real_time", "GFLOP/s", "conv2d_3x3", None, ">= 0.6")
add("attention 8x16x1024x64 causal", "BM_sdpa/real_time", "GFLOP/s", "sdpa_causal", None, ">= 0.5")
tiny = gl.get("BM_tiny_op_chain/real_time"); ttiny = torch_row("tiny_op_latency")
if tiny:
    us = tiny["real_time"] * {"ms": 1e3, "us": 1, "ns": 1e-3, "s": 1e6}[tiny["time_unit"]] / tiny["ops_per_iteration"]
    rows.append(("tiny op in a batch", f"{us:.2f} us", f"{ttiny['us']:.2f} us" if ttiny else "n/a",
                 f"{ttiny['us'] / us:.2f}" if ttiny else "n/a", "<= 5 us", "ratio = torch time / gltensor time"))
step = gl.get("BM_fashion_mnist_step/real_time")
if step:
    rows.append(("Fashion-MNIST MLP step (batch 128)", f"{step['images/s']:.0f} images/s", "", "", "", ""))

print(f"Date: {datetime.date.today().isoformat()}  Device: {a.device}  Command: `{a.command}`\n")
print("| case | gltensor | PyTorch | ratio | target | note |\n|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
