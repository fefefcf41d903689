#!/usr/bin/env python3
"""onnx_torch.py (shared/gpu, copied beside this file into the pack) with the ops that the project's other
test models need and that it lacks: QuantizeLinear / DequantizeLinear (the QDQ nets of
`gltensor_model_bench --qdq`, run as PyTorch float ops: PyTorch has no int8 convolution on CUDA),
LSTM (gltensor_model_bench --lstm's models: one layer, forward or bidirectional, through torch.nn.LSTM,
i.e. cuDNN on CUDA), STFT (real signals, through torch.stft), HannWindow / HammingWindow / BlackmanWindow
and MelWeightMatrix (constants: folded at load, computed as ONNX's reference does).
Import this module instead of onnx_torch: it patches onnx_torch.make_ops and PARAM and re-exports build()."""
import numpy as np, torch
import onnx_torch as OT

build = OT.build


def _quantize(i, a):
    x, s = i[0], i[1]
    z = i[2] if len(i) > 2 and i[2] is not None else torch.zeros((), dtype=torch.uint8, device=x.device)
    ax = a.get("axis", 1)
    if s.dim() == 1 and x.dim() > 1:  # per-axis
        shape = [1] * x.dim(); shape[ax % x.dim()] = -1; s = s.view(shape); z = z.view(shape)
    lo, hi = (0, 255) if z.dtype == torch.uint8 else (-128, 127)
    return torch.clamp(torch.round(x / s) + z.to(torch.float32), lo, hi).to(z.dtype)


def _dequantize(i, a):
    x, s = i[0], i[1]
    z = i[2] if len(i) > 2 and i[2] is not None else None
    ax = a.get("axis", 1)
    if s.dim() == 1 and x.dim() > 1:
        shape = [1] * x.dim(); shape[ax % x.dim()] = -1; s = s.view(shape)
        if z is not None: z = z.view(shape)
    y = x.to(torch.float32)
    if z is not None: y = y - z.to(torch.float32)
    return y * s


def _lstm(i, a):
    """ONNX LSTM (gates i, o, f, c; layout 0; default activations; no clip, peepholes or sequence lengths) as a
    torch.nn.LSTM built once per node with the reordered weights (gates i, f, c, o)."""
    x, W, R = i[0], i[1], i[2]
    B = i[3] if len(i) > 3 and i[3] is not None else None
    for k in ("activations", "clip", "input_forget"):
        if a.get(k): raise NotImplementedError(f"LSTM {k}")
    if a.get("layout", 0) != 0 or (len(i) > 4 and i[4] is not None) or (len(i) > 7 and i[7] is not None):
        raise NotImplementedError("LSTM layout 1, sequence_lens or peepholes")
    D, H = W.shape[0], int(a["hidden_size"])
    if "_mod" not in a:
        def reorder(t):  # [..., 4H, ...] gate blocks i, o, f, c -> i, f, c, o along dim 0
            g = t.split(H, 0); return torch.cat([g[0], g[2], g[3], g[1]], 0)
        mod = torch.nn.LSTM(W.shape[2], H, bidirectional=D == 2).to(x.device)
        with torch.no_grad():
            for d in range(D):
                sfx = "_reverse" if d else ""
                getattr(mod, "weight_ih_l0" + sfx).copy_(reorder(W[d]))
                getattr(mod, "weight_hh_l0" + sfx).copy_(reorder(R[d]))
                b = B[d] if B is not None else torch.zeros(8 * H, device=x.device)
                getattr(mod, "bias_ih_l0" + sfx).copy_(reorder(b[:4 * H]))
                getattr(mod, "bias_hh_l0" + sfx).copy_(reorder(b[4 * H:]))
        mod.flatten_parameters(); mod.eval(); a["_mod"] = mod
    h0 = i[5] if len(i) > 5 and i[5] is not None else None
    c0 = i[6] if len(i) > 6 and i[6] is not None else None
    hc = None
    if h0 is not None or c0 is not None:
        z = torch.zeros(D, x.shape[1], H, device=x.device)
        hc = (h0 if h0 is not None else z, c0 if c0 is not None else z)
    y, (h, c) = a["_mod"](x, hc)
    S, N = x.shape[0], x.shape[1]
    return y.view(S, N, D, H).permute(0, 2, 1, 3), h, c


def _stft(i, a):
    """ONNX STFT of a real signal [B, L, 1] -> [B, frames, bins, 2] (torch.stft without centering)."""
    x, step = i[0], int(OT._ints(i[1])[0])
    w = i[2] if len(i) > 2 and i[2] is not None else None
    n = int(OT._ints(i[3])[0]) if len(i) > 3 and i[3] is not None else w.shape[0]
    if x.shape[-1] != 1: raise NotImplementedError("STFT of a complex signal")
    y = torch.stft(x[..., 0], n_fft=n, hop_length=step, win_length=n, window=w, center=False,
                   onesided=bool(a.get("onesided", 1)), return_complex=True)
    return torch.view_as_real(y).permute(0, 2, 1, 3)


def _window(kind):
    def fn(i, a):
        N = int(OT._ints(i[0])[0]); periodic = bool(a.get("periodic", 1)); d = N if periodic else N - 1
        k = np.arange(N, dtype=np.float64)
        if kind == "hann": w = 0.5 - 0.5 * np.cos(2 * np.pi * k / d)
        elif kind == "hamming": w = 25 / 46 - (1 - 25 / 46) * np.cos(2 * np.pi * k / d)
        else: w = 0.42 - 0.5 * np.cos(2 * np.pi * k / d) + 0.08 * np.cos(4 * np.pi * k / d)
        return torch.from_numpy(w.astype(np.float32))
    return fn


def _mel(i, a):
    """ONNX MelWeightMatrix as onnx.reference computes it: [dft / 2 + 1, bins]."""
    bins, dft, rate = (int(OT._ints(v)[0]) for v in i[:3])
    lo, hi = float(i[3].reshape(-1)[0]), float(i[4].reshape(-1)[0])
    pts = np.arange(bins + 2, dtype=np.float64)
    mlo, mhi = 2595 * np.log10(1 + lo / 700), 2595 * np.log10(1 + hi / 700)
    pts = pts * ((mhi - mlo) / (bins + 2)) + mlo
    pts = (((dft + 1) * (700 * (np.power(10, pts / 2595) - 1))) // rate).astype(np.int64)
    out = np.zeros((dft // 2 + 1, bins))
    for b in range(bins):
        l, c, h = pts[b], pts[b + 1], pts[b + 2]
        if c == l: out[c, b] = 1
        else:
            for j in range(l, c + 1): out[j, b] = (j - l) / (c - l)
        if h > c:
            for j in range(c, h): out[j, b] = (h - j) / (h - c)
    return torch.from_numpy(out.astype(np.float32))


_base = OT.make_ops


def make_ops(opset):
    ops = _base(opset)
    ops.update({"QuantizeLinear": _quantize, "DequantizeLinear": _dequantize, "LSTM": _lstm, "STFT": _stft,
                "HannWindow": _window("hann"), "HammingWindow": _window("hamming"),
                "BlackmanWindow": _window("blackman"), "MelWeightMatrix": _mel})
    return ops


OT.make_ops = make_ops
OT.PARAM.update({"STFT": {1, 3}, "HannWindow": {0}, "HammingWindow": {0}, "BlackmanWindow": {0},
                 "MelWeightMatrix": {0, 1, 2, 3, 4}})
