#!/usr/bin/env python3
"""gltensor against PyTorch (eager and a replayed CUDA graph) on every model the project tests (issue 21).

  torchcmp.py prepare W [--ocr DIR]  writes W/models/*.onnx for the models only the tests build (the log-mel
                                     front end, the attention, LayerNorm and Softmax patterns in the tests' forms),
                                     W/inputs/<case>/<input>.npy (seeded) and W/cases.txt: one case a line,
                                     `name|model path|reps|gltensor-run --input arguments`
  torchcmp.py torch W [--reps N]     PyTorch on the same files and inputs: eager and a replayed CUDA graph, each run
                                     with its outputs read back (.cpu()), timed run by run (mean, min); the outputs
                                     against gltensor-run's (W/out/<case>/*.npy, written by its first run), and the
                                     table with gltensor-run's bench lines (W/log/<case>-plain.txt, -replay.txt:
                                     `--bench N --read-back`, outputs read back too); W/slower.txt names the cases
                                     where gltensor's best time is above the CUDA graph's mean.
gltensor_model_bench --save-models W/models writes the QDQ nets, the LSTM models and the three-Gemm model first
(run.sh). Needs numpy, onnx and torch; onnx_torch.py (shared/gpu) beside onnx_torch_ext.py."""
import sys, os, re, time, argparse
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def make_test_models(md):
    """The models tests/model builds, in their forms, at the sizes of the tests' largest cases."""
    import onnx
    from onnx import helper as h, TensorProto as T, numpy_helper as nh
    F = T.FLOAT

    def save(name, nodes, ins, outs, inits, opset):
        g = h.make_graph(nodes, name, ins, outs, inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(md, name + ".onnx"))

    def c(name, v, dt=np.float32): return nh.from_array(np.asarray(v, dtype=dt), name)
    # the log-mel front end of test_model_signal_ops (its audio-sized STFT case: 25 ms frames every 10 ms at 16 kHz)
    # on one second of audio: STFT -> power -> MelWeightMatrix (40 bins, 20-8000 Hz) -> log
    save("logmel_16k", [
        h.make_node("HannWindow", ["n"], ["w"]),
        h.make_node("STFT", ["x", "step", "w", "n"], ["spec"], onesided=1),
        h.make_node("Mul", ["spec", "spec"], ["sq"]),
        h.make_node("ReduceSum", ["sq", "last"], ["pow"], keepdims=0),
        h.make_node("MelWeightMatrix", ["bins", "n", "rate", "lo", "hi"], ["mel"]),
        h.make_node("MatMul", ["pow", "mel"], ["m"]),
        h.make_node("Add", ["m", "eps"], ["me"]),
        h.make_node("Log", ["me"], ["y"])],
        [h.make_tensor_value_info("x", F, [1, 16000, 1])], [h.make_tensor_value_info("y", F, [1, 98, 40])],
        [c("n", 400, np.int64), c("step", 160, np.int64), c("last", [-1], np.int64), c("bins", 40, np.int64),
         c("rate", 16000, np.int64), c("lo", 20.0), c("hi", 8000.0), c("eps", 1e-6)], 17)
    # test_model_attention's form: softmax(q * c @ k^T) @ v, opset 9 (the SVTR blocks' heads; and a longer sequence)
    for name, shp in (("attention_svtr_8x168x15", [1, 8, 168, 15]), ("attention_8x300x64", [1, 8, 300, 64])):
        save(name, [h.make_node("Mul", ["q", "c"], ["qs"]), h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                    h.make_node("MatMul", ["qs", "kt"], ["s"]), h.make_node("Softmax", ["s"], ["p"], axis=3),
                    h.make_node("MatMul", ["p", "v"], ["y"])],
             [h.make_tensor_value_info(k, F, shp) for k in "qkv"], [h.make_tensor_value_info("y", F, shp)],
             [c("c", 0.258)], 9)
    # test_model_layernorm's form (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta)
    rng = np.random.default_rng(5)
    for name, shp in (("layernorm_svtr_1008x120", [1008, 120]), ("layernorm_64x1025", [64, 1025])):
        L = shp[-1]
        save(name, [h.make_node("ReduceMean", ["x"], ["mu"], axes=[-1]), h.make_node("Sub", ["x", "mu"], ["d"]),
                    h.make_node("Pow", ["d", "two"], ["d2"]), h.make_node("ReduceMean", ["d2"], ["var"], axes=[-1]),
                    h.make_node("Add", ["var", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["sd"]),
                    h.make_node("Div", ["d", "sd"], ["xn"]), h.make_node("Mul", ["xn", "gamma"], ["xg"]),
                    h.make_node("Add", ["beta", "xg"], ["y"])],
             [h.make_tensor_value_info("x", F, shp)], [h.make_tensor_value_info("y", F, shp)],
             [c("gamma", rng.uniform(0.5, 1.5, L)), c("beta", rng.uniform(0, 1, L)), c("two", 2.0), c("eps", 1e-6)], 9)
    # test_model_softmax's form (one Softmax, opset 13, the last axis) at attention scores' size
    save("softmax_8x168x168", [h.make_node("Softmax", ["x"], ["y"], axis=-1)],
         [h.make_tensor_value_info("x", F, [8, 168, 168])], [h.make_tensor_value_info("y", F, [8, 168, 168])], [], 13)


def cases(w, ocr):
    """(name, model file, reps, {input: (shape, low, high)})"""
    m = os.path.join(w, "models")
    out = [("det_640", os.path.join(ocr, "ch_PP-OCRv4_det_infer.onnx"), 200, {"x": ([1, 3, 640, 640], -2, 2)}),
           ("rec_48x320", os.path.join(ocr, "ch_PP-OCRv4_rec_infer.onnx"), 200, {"x": ([1, 3, 48, 320], -1, 1)}),
           ("cls_48x192", os.path.join(ocr, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), 200, {"x": ([1, 3, 48, 192], -1, 1)}),
           ("three_gemm", os.path.join(m, "three_gemm.onnx"), 500, {"x": ([1, 34, 96], 0, 1)})]
    for net in ("64_128_128_256_256", "32_64_64_128"):
        for hw in (56, 112):
            for form in ("f32", "qdq"):
                c0 = int(net.split("_")[0])
                out.append((f"{form}_cnn_{net}_{hw}", os.path.join(m, f"{form}_cnn_{net}_{hw}.onnx"), 200,
                            {"x": ([1, c0, hw, hw], 0, 1)}))
    for seq, hid, d in ((64, 64, 1), (64, 256, 2), (256, 128, 1), (256, 256, 2)):
        out.append((f"lstm_s{seq}_h{hid}_d{d}", os.path.join(m, f"lstm_s{seq}_h{hid}_d{d}.onnx"), 100,
                    {"x": ([seq, 1, 64], -1, 1)}))
    out.append(("logmel_16k", os.path.join(m, "logmel_16k.onnx"), 200, {"x": ([1, 16000, 1], -1, 1)}))
    for n, s in (("attention_svtr_8x168x15", [1, 8, 168, 15]), ("attention_8x300x64", [1, 8, 300, 64])):
        out.append((n, os.path.join(m, n + ".onnx"), 200, {"q": (s, -2, 2), "k": (s, -2, 2), "v": (s, 0, 1)}))
    for n, s in (("layernorm_svtr_1008x120", [1008, 120]), ("layernorm_64x1025", [64, 1025])):
        out.append((n, os.path.join(m, n + ".onnx"), 200, {"x": (s, -2, 2)}))
    out.append(("softmax_8x168x168", os.path.join(m, "softmax_8x168x168.onnx"), 200, {"x": ([8, 168, 168], -3, 3)}))
    return out


def prepare(a):
    md = os.path.join(a.w, "models"); os.makedirs(md, exist_ok=True)
    make_test_models(md)
    rng = np.random.default_rng(a.seed)
    with open(os.path.join(a.w, "cases.txt"), "w") as f:
        for name, path, reps, ins in cases(a.w, a.ocr):
            if not os.path.exists(path): print(f"{name}: {path} missing, left out"); continue
            d = os.path.join(a.w, "inputs", name); os.makedirs(d, exist_ok=True); args = []
            for k, (shape, lo, hi) in ins.items():
                np.save(os.path.join(d, k + ".npy"), rng.uniform(lo, hi, shape).astype(np.float32))
                args.append(f"--input {k}={os.path.join(d, k + '.npy')}")
            f.write(f"{name}|{path}|{reps}|{' '.join(args)}\n")
    print(f"prepared {a.w}/cases.txt (input seed {a.seed})")


def bench_line(path):
    """gltensor-run's `bench:` line -> (mean, min, dispatches) or None"""
    try: txt = open(path).read()
    except OSError: return None
    r = re.search(r"bench: \d+ runs.*?mean ([0-9.]+) ms, min ([0-9.]+) ms.*?(\d+) dispatches", txt)
    return (float(r.group(1)), float(r.group(2)), int(r.group(3))) if r else None


def torch_side(a):
    import onnx, torch
    import onnx_torch_ext as OT
    torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    gpu = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    print(f"PyTorch {torch.__version__} on {gpu}; TF32 off; every run reads its outputs back (.cpu()); "
          f"gltensor-run --bench N --read-back likewise\n")
    rows, slower = [], []
    for line in open(os.path.join(a.w, "cases.txt")):
        name, path, reps, args = line.rstrip("\n").split("|"); reps = a.reps or int(reps)
        if a.only and not re.search(a.only, name): continue
        feeds = {}
        for m in re.finditer(r"--input ([^=]+)=(\S+)", args): feeds[m.group(1)] = torch.from_numpy(np.load(m.group(2)))
        e_mean = e_min = g_mean = g_min = float("nan"); note = ""; outs = None
        t_start = time.perf_counter()
        try:
            with torch.no_grad():
                net = OT.build(onnx.load(path), feeds, dev)
                xs = [feeds[k].to(dev) for k in net.inputs]

                def timed(fn, n, what=""):
                    ts = []
                    if not what:  # a warm-up: n runs, or as many as take TC_WARMUP_MS ms if more (gltensor-run --warmup-ms)
                        t_end = time.perf_counter() + float(os.environ.get("TC_WARMUP_MS") or 0) * 1e-3
                        while time.perf_counter() < t_end: fn()
                    for _ in range(n):
                        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
                    if what and os.environ.get("TC_DIST"):  # the per-run distribution (us), as io_bench --trace
                        q = np.quantile(np.array(ts) * 1e6, [0, 0.5, 0.9])
                        print(f"  {name} {what}: {n} runs, us: min {q[0]:.1f} p50 {q[1]:.1f} p90 {q[2]:.1f} "
                              f"mean {np.mean(ts) * 1e6:.1f} max {np.max(ts) * 1e6:.1f}", flush=True)
                    return np.mean(ts) * 1e3, np.min(ts) * 1e3

                def eager(): return [t.cpu() for t in net(*xs)]
                outs = eager()
                timed(eager, max(reps // 10, 3)); e_mean, e_min = timed(eager, reps, "eager")
                if dev == "cuda":
                    try:
                        sx = [x.clone() for x in xs]; s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(s):
                            for _ in range(3): net(*sx)
                        torch.cuda.current_stream().wait_stream(s); sync()
                        g = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(g): gouts = net(*sx)

                        def replay(): g.replay(); return [t.cpu() for t in gouts]
                        timed(replay, max(reps // 10, 3)); g_mean, g_min = timed(replay, reps, "CUDA graph")
                        gres = replay()
                        if any(not torch.equal(u, v) for u, v in zip(gres, outs)):
                            d = max(float((u.double() - v.double()).abs().max()) for u, v in zip(gres, outs))
                            note += f"graph vs eager max |d| {d:.1e}; "
                    except Exception as e:
                        note += f"no CUDA graph ({type(e).__name__}: {str(e)[:80]}); "
        except Exception as e:
            note += f"PyTorch failed ({type(e).__name__}: {str(e)[:100]}); "
        # outputs against gltensor's
        agree = "n/a"
        if outs is not None:
            worst = []
            for k, t in zip(net.outputs, outs):
                f = os.path.join(a.w, "out", name, re.sub(r"[^A-Za-z0-9._-]", "_", k) + ".npy")
                if not os.path.exists(f): worst.append(f"{k}: no gltensor output"); continue
                g_ = np.load(f).astype(np.float64); r = t.double().numpy()
                if g_.shape != r.shape: worst.append(f"{k}: shape {g_.shape} vs {r.shape}"); continue
                d = np.abs(g_ - r); scale = max(float(np.abs(r).max()), 1e-30)
                # QDQ nets: an activation rounded the other way at a quantization step is one quantum (0.05 at
                # the last QuantizeLinear); p99 within a quantum, the max within 4
                if name.startswith("qdq"): ok = np.quantile(d, 0.99) <= 0.05 + 1e-6 and d.max() <= 0.2 + 1e-6
                else: ok = d.max() <= a.tol * scale
                worst.append(f"{'ok' if ok else 'DIFFERS'} {k} max|d| {d.max():.1e} (max|y| {scale:.2g}"
                             + (f", p99 {np.quantile(d, 0.99):.1e}" if name.startswith("qdq") else "") + ")")
            agree = "; ".join(worst)
        gp, gr = bench_line(os.path.join(a.w, "log", name + "-plain.txt")), bench_line(os.path.join(a.w, "log", name + "-replay.txt"))
        best = min([x[0] for x in (gp, gr) if x] or [float("nan")])
        if best == best and g_mean == g_mean and best > g_mean: slower.append(name)
        rows.append((name, gp, gr, e_mean, e_min, g_mean, g_min, best / g_mean if g_mean == g_mean else float("nan"),
                     agree, note))
        print(f"{name}: torch {time.perf_counter() - t_start:.1f} s; {agree}; {note}", flush=True)
        if dev == "cuda": torch.cuda.empty_cache()

    def f(x): return "-" if x is None or x != x else f"{x:.3f}"
    print("\n| model | dispatches | gltensor plain mean / min ms | gltensor replayed mean / min ms | PyTorch eager mean / min ms "
          "| CUDA graph mean / min ms | gltensor best mean / CUDA graph mean | outputs (gltensor vs PyTorch) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, gp, gr, em, en, gm, gn, ratio, agree, note in rows:
        print(f"| {name} | {gp[2] if gp else '-'} | {f(gp[0] if gp else None)} / {f(gp[1] if gp else None)} "
              f"| {f(gr[0] if gr else None)} / {f(gr[1] if gr else None)} | {f(em)} / {f(en)} | {f(gm)} / {f(gn)} "
              f"| {'-' if ratio != ratio else f'{ratio:.2f}x'} | {agree}{' ' + note if note else ''} |")
    open(os.path.join(a.w, "slower.txt"), "w").write("".join(n + "\n" for n in slower))
    print(f"\nslower than the CUDA graph: {' '.join(slower) or 'none'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["prepare", "torch"]); ap.add_argument("w")
    ap.add_argument("--ocr", default="/work/main/.cache/models/ocr"); ap.add_argument("--seed", type=int, default=2111)
    ap.add_argument("--reps", type=int, default=0, help="runs per timing (default: each case's)")
    ap.add_argument("--tol", type=float, default=2e-3, help="max |gltensor - PyTorch| / max |PyTorch| (not QDQ)")
    ap.add_argument("--only", help="a regular expression: only the cases it finds")
    a = ap.parse_args()
    prepare(a) if a.what == "prepare" else torch_side(a)


if __name__ == "__main__":
    main()
