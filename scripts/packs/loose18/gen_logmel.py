# A log-mel audio front end (STFT n=400 step=160 Hann, power, 80 mel bins, log) for L samples.
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
out, L = sys.argv[1], int(sys.argv[2])
i64 = lambda v, n: nh.from_array(np.array(v, np.int64), n)
f32 = lambda v, n: nh.from_array(np.array(v, np.float32), n)
nodes = [
    h.make_node("HannWindow", ["n"], ["w"]),
    h.make_node("STFT", ["x", "step", "w"], ["spec"], onesided=1),
    h.make_node("Mul", ["spec", "spec"], ["sq"]),
    h.make_node("ReduceSum", ["sq", "ax"], ["pow"], keepdims=0),
    h.make_node("MelWeightMatrix", ["bins", "dftlen", "rate", "lo", "hi"], ["mel"]),
    h.make_node("MatMul", ["pow", "mel"], ["m"]),
    h.make_node("Add", ["m", "eps"], ["me"]),
    h.make_node("Log", ["me"], ["y"]),
]
inits = [i64(400, "n"), i64(160, "step"), i64([-1], "ax"), i64(80, "bins"), i64(400, "dftlen"),
         i64(16000, "rate"), f32(0.0, "lo"), f32(8000.0, "hi"), f32(1e-6, "eps")]
g = h.make_graph(nodes, "logmel", [h.make_tensor_value_info("x", T.FLOAT, [1, L, 1])],
                 [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)  # ORT here reads <= 13
onnx.save(m, out)
np.random.seed(0)
np.save(out.replace(".onnx", "_x.npy"), (np.random.rand(1, L, 1).astype(np.float32) - 0.5))
