# gltensor's y.npy against ONNX Runtime (CPU) on the same input.
import sys
import numpy as np
import onnxruntime as ort
model, x, y = sys.argv[1:4]
if len(sys.argv) > 4 and __import__("os").path.exists(sys.argv[4]):  # the other library's output too
    o = np.load(sys.argv[4]).astype(np.float64)
    print(f"main vs loose18: max |diff| {np.abs(np.load(y) - o).max():.3e}")
ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": np.load(x)})[0]
got = np.load(y)
d = np.abs(got.astype(np.float64) - ref)
print(f"cmp {model}: shape {got.shape} vs {ref.shape}, max |diff| {d.max():.3e}, mean {d.mean():.3e}, "
      f"ref range [{ref.min():.2f}, {ref.max():.2f}]; bins of power >= 1e-3 (log >= -6.9): max |diff| "
      f"{d[ref >= -6.9].max():.3e}", "OK" if got.shape == ref.shape and d[ref >= -6.9].max() < 1e-3 else "FAIL")
