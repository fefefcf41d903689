# PyTorch's (cuDNN's) depthwise convolutions on the recognizer's shapes: the reference for
# gltensor's conv_direct.comp (issue 21, recdw). Reads the ONNX model, infers its shapes at the input
# shape given, and for every Conv whose groups equal its input channels (depthwise) times
# conv2d(x, w, b, stride, padding, groups=C) and the same + hardswish (the fused epilogue), f32,
# TF32 off: the median of 5 batches of 20 CUDA-event-timed calls; GB/s = (input + output bytes) / time.
# Usage: python3 torch_dw.py MODEL.onnx N C H W
import sys

import onnx
import torch
from onnx import shape_inference

torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")


def median_ms(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / reps)
    return sorted(times)[2]


path, shape = sys.argv[1], [int(v) for v in sys.argv[2:6]]
m = onnx.load(path)
inp = m.graph.input[0]
for d, v in zip(inp.type.tensor_type.shape.dim, shape):
    d.ClearField("dim_param")
    d.dim_value = v
m = shape_inference.infer_shapes(m)
shapes = {}
for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
    shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
inits = {t.name: t for t in m.graph.initializer}
print("torch", torch.__version__, torch.cuda.get_device_name(0), "cudnn", torch.backends.cudnn.version())
total = total_act = 0.0
for i, node in enumerate(m.graph.node):
    if node.op_type != "Conv":
        continue
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    xs = shapes.get(node.input[0])
    if not xs or len(xs) != 4:
        continue
    g = a.get("group", 1)
    if g <= 1 or g != xs[1]:
        continue
    k = list(a.get("kernel_shape", []))
    st = list(a.get("strides", [1, 1]))
    pads = list(a.get("pads", [0, 0, 0, 0]))
    N, C, H, W = xs
    x = torch.randn(N, C, H, W, device=dev)
    w = torch.randn(C, 1, k[0], k[1], device=dev)
    b = torch.randn(C, device=dev)
    pad = (pads[0], pads[1])  # symmetric in this model
    f = lambda: torch.nn.functional.conv2d(x, w, b, st, pad, 1, C)
    y = f()
    ms = median_ms(f)
    ms_act = median_ms(lambda: torch.nn.functional.hardswish(f()))
    gb = (x.numel() + y.numel()) * 4 / 1e9
    total += ms
    total_act += ms_act
    print(f"torch dw node {i} x {xs} k {k} stride {st} pads {pads} -> {list(y.shape)}: conv {ms:.4f} ms "
          f"({gb / ms * 1e3:.0f} GB/s), conv+hardswish {ms_act:.4f} ms")
print(f"torch dw total: conv {total:.4f} ms, conv+hardswish {total_act:.4f} ms")
