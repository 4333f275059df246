"""ESIM at paper size (40,000 words, 300-d, hidden 300, random weights) under JAX on a GPU: Keras's own
`predict_on_batch` at batch 1, 32 and 256 and `train_on_batch` at 32 (Adam), on random padded id batches
(premises up to 24 tokens, hypotheses up to 12). Needs no TensorFlow (a GPU machine may have only JAX):

    KERAS_BACKEND=jax python scripts/benchmark_gpu_jax.py
    python scripts/benchmark_gpu_jax.py --torch-reference ESIM   # the PyTorch reference ESIM, same shapes (torch's python)

`--torch-reference` runs the public PyTorch ESIM (github.com/coetaur0/ESIM, a clone) instead, with the
same shapes; torch 1.7 and later want `pack_padded_sequence`'s lengths on the CPU, which that code predates:
give `sorted_lengths.cpu()` there (esim/layers.py, line 116).
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description="ESIM under JAX on a GPU, or the PyTorch reference with the same shapes")
parser.add_argument("--torch-reference", metavar="ESIM_CLONE", help="run the reference from this clone instead")
args = parser.parse_args()
if args.torch_reference:
    raise SystemExit(subprocess.call([sys.executable, os.path.join(HERE, "benchmark_gpu_torch.py"), args.torch_reference]))
os.environ["KERAS_BACKEND"] = "jax"
sys.path.insert(0, os.path.dirname(HERE))
import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from zoo.registry import create_model
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip() if shutil.which("nvidia-smi") else "no nvidia-smi"
print("devices", jax.devices(), gpu)
rng = np.random.default_rng(0)
def batch(n, lp=24, lh=12):
    p = rng.integers(1, 40000, (n, lp)).astype("int32"); h = rng.integers(1, 40000, (n, lh)).astype("int32")
    for i in range(n):
        p[i, rng.integers(8, lp + 1):] = 0; h[i, rng.integers(4, lh + 1):] = 0
    return {"premise": p, "hypothesis": h}
model = create_model("esim", vocabulary_size=40000, embedding_dim=300)
model.compile(optimizer=keras.optimizers.Adam(4e-4), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
for n in (1, 32, 256):
    x = batch(n); model.predict_on_batch(x); model.predict_on_batch(x)
    t = time.perf_counter(); reps = 50 if n < 256 else 20
    for _ in range(reps): np.asarray(model.predict_on_batch(x))
    dt = (time.perf_counter() - t) / reps
    print(f"predict_on_batch batch {n}: {dt*1e3:.2f} ms, {n/dt:.0f} pairs/s", flush=True)
x = batch(32); y = rng.integers(0, 3, 32)
t = time.perf_counter(); model.train_on_batch(x, y); print(f"first train step (compiles) {time.perf_counter()-t:.1f} s", flush=True)
model.train_on_batch(x, y)
t = time.perf_counter()
for _ in range(30): loss = model.train_on_batch(x, y)
dt = (time.perf_counter() - t) / 30
print(f"train_on_batch batch 32: {dt*1e3:.1f} ms, {32/dt:.0f} pairs/s, loss {float(loss):.3f}", flush=True)
