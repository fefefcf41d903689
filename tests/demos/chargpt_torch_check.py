#!/usr/bin/env python3
"""chargpt's forward against the PyTorch reference's model (../shared/gpu/torch_gpt_reference.py,
whose classes this runs) with the same weights: a chargpt checkpoint is loaded into both, and
  1. the loss on one fixed validation window: `chargpt --eval` on a corpus whose validation split
     is exactly one window (660 bytes of a fortune file: every random window is the same one),
     against F.cross_entropy of the reference model on that window (relative 1e-4);
  2. greedy continuations (temperature 0) of a prompt, past the context, must be the same bytes.
Usage: chargpt_torch_check.py CHARGPT CHECKPOINT REFERENCE.py CORPUS_FILE WORKDIR
Exits 77 (ctest: skipped) without PyTorch (Debian: python3-torch) or the reference script."""
import json, math, os, re, struct, subprocess, sys

chargpt, ckpt, ref, corpus_file, work = sys.argv[1:6]
try:
    import torch, torch.nn as nn, torch.nn.functional as F
except ImportError:
    print("skipped: no PyTorch (Debian: python3-torch)"); sys.exit(77)
if not os.path.exists(ref):
    print("skipped: no " + ref); sys.exit(77)
src = open(ref).read()
body = src[src.index("class RMSNorm"):src.index("m = GPT().to(dev)")]  # the model's classes only

raw = open(ckpt, "rb").read()
hl = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + hl]); data = raw[8 + hl:]
def tensor(name):
    e = hdr[name]; b, en = e["data_offsets"]
    dt = torch.float32 if e["dtype"] == "F32" else torch.int32
    return torch.frombuffer(bytearray(data[b:en]), dtype=dt).reshape(e["shape"])
L, D, H, T, FF, V = tensor("config").tolist()
g = {"torch": torch, "nn": nn, "F": F, "math": math, "L": L, "D": D, "H": H, "HD": D // H, "FF": FF, "T": T}
exec(body, g)
m = g["GPT"]()
m.load_state_dict({k: tensor(k) for k in hdr if k not in ("__metadata__", "config")}, strict=True)
m.eval()

# 1. One validation window: 10 * (T + 2) bytes, of which the last T + 2 are the validation split.
text = open(corpus_file, "rb").read()[:10 * (T + 2)]
os.makedirs(work, exist_ok=True)
open(os.path.join(work, "onefile"), "wb").write(text)
val = text[int(len(text) * 0.9):]
assert len(val) == T + 2, len(val)
with torch.no_grad():
    x = torch.tensor([list(val[:T])]); y = torch.tensor(list(val[1:T + 1]))
    want = F.cross_entropy(m(x, torch.arange(T))[0], y).item()
out = subprocess.run([chargpt, "--eval", ckpt, "--data", work, "--eval-batches", "1", "--batch", "2", "--sample", "0"],
                     capture_output=True, text=True)
print(out.stdout, out.stderr)
got = float(re.search(r"validation loss ([0-9.]+)", out.stdout).group(1))
print(f"loss on the window: chargpt {got:.4f}, PyTorch {want:.6f}")
ok = abs(got - want) <= 1e-4 * abs(want) + 5e-5

# 2. Greedy continuation past the context.
prompt = "A man, a plan, a canal: Panama.\nQ: Why did the chicken cross the road?\nA: "
n = T + 20
toks = list(prompt.encode())
with torch.no_grad():
    for _ in range(n):
        w = toks[-T:]
        toks.append(int(torch.argmax(m(torch.tensor([w]), torch.arange(len(w)))[0, -1])))
want_s = bytes(toks[len(prompt):])
out = subprocess.run([chargpt, "--eval", ckpt, "--data", work, "--eval-batches", "1", "--batch", "1", "--sample", str(n),
                      "--temperature", "0", "--prompt", prompt], capture_output=True)
got_s = out.stdout.split(b"bytes/s):\n", 1)[1][len(prompt):len(prompt) + n]
print(f"greedy continuation: chargpt {got_s!r}\n                     PyTorch {want_s!r}")
ok = ok and got_s == want_s
print("chargpt matches PyTorch" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
