#!/usr/bin/env python3
"""Batch-1 decode speed: chargpt's KV-cache decoding (`chargpt --generate`, sampling on the GPU) beside the
PyTorch reference's eager KV-cache decode (../shared/gpu/torch_gpt_reference.py: its model classes and its decode
loop), the same config and the same weights, in the same run.

The model: the reference's classes with the chosen config (small: 2 layers, d_model 64, 2 heads, context 64, SwiGLU
128; default: the reference's 6 layers, 384, 6 heads, 256, 1024), initialized by PyTorch from --seed and written as a
chargpt checkpoint (safetensors, with chargpt's "config" tensor), which chargpt loads. Both decode --tokens bytes
after --prompt at temperature 0.8 with a KV cache; timed: the tokens after the first (each a forward of one token
and a draw), wall time and CPU time of the calling thread. PyTorch runs on CUDA when available (TF32 off), else on
the CPU with --threads threads (default: every core, as llvmpipe uses).

--layers/--d-model/--heads/--ffn change the config's sizes (e.g. 2 and 8 layers: the CPU time per token against the
layer count; or a model whose weights dominate a step: f32 against int4). --modes names chargpt's runs, each a
separate process on the same checkpoint: replay (the default decode: the step recorded once and replayed),
plain (--no-replay: every step planned and dispatched anew), int8 and int4 (--quantize at load, replayed).
The first mode is the one compared with PyTorch; every mode is also given as a ratio to the first.

Usage: /usr/bin/python3 decode_bench.py --chargpt build/demos/chargpt [--reference ../shared/gpu/torch_gpt_reference.py]
                       [--config small|default] [--layers N] [--d-model N] [--heads N] [--ffn N]
                       [--modes replay,plain,int8,int4] [--tokens 256] [--prompt 'Q: '] [--json OUT.json]"""
import argparse, json, math, os, re, struct, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--chargpt", required=True)
ap.add_argument("--reference", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                                                      "gpu", "torch_gpt_reference.py"))
ap.add_argument("--config", choices=["small", "default"], default="small")
ap.add_argument("--tokens", type=int, default=256)
ap.add_argument("--prompt", default="Q: ")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--json", default="")
ap.add_argument("--threads", type=int, default=os.cpu_count(), help="PyTorch's CPU threads (default: every core)")
ap.add_argument("--layers", type=int, default=0)
ap.add_argument("--d-model", type=int, default=0)
ap.add_argument("--heads", type=int, default=0)
ap.add_argument("--ffn", type=int, default=0)
ap.add_argument("--modes", default="replay")
a = ap.parse_args()
modes = a.modes.split(",")
flags = {"replay": [], "plain": ["--no-replay"], "int8": ["--quantize", "int8"], "int4": ["--quantize", "int4"]}
for mo in modes:
    if mo not in flags: sys.exit(f"--modes: unknown mode {mo!r} (replay, plain, int8, int4)")

import torch, torch.nn as nn, torch.nn.functional as F

L, D, H, T, FF = (2, 64, 2, 64, 128) if a.config == "small" else (6, 384, 6, 256, 1024)
L, D, H, FF = a.layers or L, a.d_model or D, a.heads or H, a.ffn or FF
src = open(a.reference).read()
body = src[src.index("class RMSNorm"):src.index("m = GPT().to(dev)")]  # the reference's model classes
g = {"torch": torch, "nn": nn, "F": F, "math": math, "L": L, "D": D, "H": H, "HD": D // H, "FF": FF, "T": T}
exec(body, g)
dev = "cuda" if torch.cuda.is_available() else "cpu"
if dev == "cpu": torch.set_num_threads(a.threads)
torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(a.seed)
m = g["GPT"]().to(dev).eval()

# The weights as a chargpt checkpoint.
work = tempfile.mkdtemp(prefix="decode_bench_")
ckpt = os.path.join(work, "model.safetensors")
tensors = {k: v.detach().float().cpu().contiguous() for k, v in m.state_dict().items()}
tensors["config"] = torch.tensor([L, D, H, T, FF, 256], dtype=torch.int32)
header, blobs, off = {}, [], 0
for k in sorted(tensors):
    b = tensors[k].numpy().tobytes()
    header[k] = {"dtype": "F32" if tensors[k].dtype == torch.float32 else "I32", "shape": list(tensors[k].shape),
                 "data_offsets": [off, off + len(b)]}
    blobs.append(b); off += len(b)
h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
with open(ckpt, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

# chargpt: prefill, then --tokens bytes, once per mode.
glts = {}
for mo in modes:
    # an untimed run first: the shader cache holds the mode's programs (a first run compiles them, and the
    # driver's first dispatches of a new program are slow: without it int4 and int8 came out 0.5-0.7x)
    subprocess.run([a.chargpt, "--checkpoint", ckpt, "--generate", "8"] + flags[mo], capture_output=True)
    out = subprocess.run([a.chargpt, "--checkpoint", ckpt, "--generate", str(a.tokens), "--prompt", a.prompt,
                          "--temperature", "0.8", "--seed", str(a.seed)] + flags[mo], capture_output=True, text=True,
                         errors="replace")
    if out.returncode != 0:
        print(out.stdout, out.stderr); sys.exit(1)
    dev_line = re.search(r"device: (.*)", out.stdout).group(1)
    mm = re.search(r"decode: (\d+) tokens in ([0-9.]+) s, ([0-9.]+) tokens/s, ([0-9.]+) ms CPU .*?, ([0-9.]+) ms of it "
                   r"issuing", out.stdout)
    glts[mo] = {"tokens": int(mm.group(1)), "seconds": float(mm.group(2)), "tokens_per_s": float(mm.group(3)),
                "cpu_ms_per_token": float(mm.group(4)), "issue_cpu_ms_per_token": float(mm.group(5))}
glt = glts[modes[0]]

# PyTorch: the reference's decode loop (prefill with caches, then multinomial at temperature 0.8).
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
with torch.no_grad():
    gen = torch.Generator(device=dev).manual_seed(a.seed)
    prompt = torch.tensor([list(a.prompt.encode())], device=dev); caches = [dict() for _ in range(L)]
    logits = m(prompt, torch.arange(prompt.shape[1], device=dev), caches)[:, -1]
    outs = []
    for j in range(a.tokens):
        nxt = torch.multinomial(F.softmax(logits / 0.8, -1), 1, generator=gen); outs.append(nxt)
        if j == 0: sync(); t0 = time.perf_counter(); c0 = time.thread_time()
        if j + 1 < a.tokens: logits = m(nxt, torch.tensor([prompt.shape[1] + j], device=dev), caches)[:, -1]
    txt = torch.cat(outs, 1)[0].tolist(); sync()
    dt, dc = time.perf_counter() - t0, time.thread_time() - c0
n = a.tokens - 1
ref = {"tokens": n, "seconds": dt, "tokens_per_s": n / dt, "cpu_ms_per_token": 1e3 * dc / n,
       "device": torch.cuda.get_device_name(0) if dev == "cuda" else f"cpu, {torch.get_num_threads()} threads",
       "torch": torch.__version__}
print(f"config {a.config}: {L} layers, d_model {D}, {H} heads, context {T}, SwiGLU {FF}; batch 1, f32, "
      f"{a.tokens} tokens after {a.prompt!r}")
params = sum(v.numel() for v in m.parameters())
print(f"{params / 1e6:.1f}M parameters ({4 * params / 2**20:.0f} MiB in f32)")
for mo in modes:
    g_ = glts[mo]
    print(f"gltensor {mo} ({dev_line}): {g_['tokens_per_s']:.1f} tokens/s, {g_['cpu_ms_per_token']:.3f} ms CPU per token "
          f"({g_['issue_cpu_ms_per_token']:.3f} issuing the step, the rest waiting in read-backs)"
          + (f"; {g_['tokens_per_s'] / glt['tokens_per_s']:.2f}x {modes[0]}'s tokens/s" if mo != modes[0] else ""))
print(f"PyTorch eager ({ref['device']}, torch {ref['torch']}): {ref['tokens_per_s']:.1f} tokens/s, "
      f"{ref['cpu_ms_per_token']:.3f} ms CPU per token")
print(f"ratio gltensor {modes[0]} / PyTorch: {glt['tokens_per_s'] / ref['tokens_per_s']:.2f}x tokens/s")
if a.json:
    json.dump({"config": a.config, "layers": L, "d_model": D, "heads": H, "ffn": FF, "parameters": params,
               "tokens": a.tokens, "gltensor": {mo: dict(g_, device=dev_line) for mo, g_ in glts.items()},
               "torch": ref}, open(a.json, "w"), indent=2)
