"""The PyTorch reference ESIM (github.com/coetaur0/ESIM) on a GPU, the shapes of scripts/benchmark_gpu_jax.py:
forward passes at each batch size and a training step at 32 (Adam). Run by the PyTorch environment's
python with the reference's checkout and the zoo's folder on its PYTHONPATH (the benchmark sets both), one
argument: the JSON spec (`{"batches": [1, 32, 256]}`). Prints one result line (`zoo.measurements.child`)."""

import json
import sys
import time

import numpy as np
import torch
from esim.model import ESIM  # the reference implementation, from its checkout (on PYTHONPATH)

from zoo.measurements.child import emit  # standard library only

spec = json.loads(sys.argv[1])
dev = "cuda"
rng = np.random.default_rng(0)
figures, lines = {}, []


def batch(n, lp=24, lh=12):
    p = rng.integers(1, 40000, (n, lp))
    h = rng.integers(1, 40000, (n, lh))
    plen = rng.integers(8, lp + 1, n)
    hlen = rng.integers(4, lh + 1, n)
    for i in range(n):
        p[i, plen[i]:] = 0
        h[i, hlen[i]:] = 0
    return tuple(torch.tensor(a, device=dev) for a in (p, plen, h, hlen))


model = ESIM(40000, 300, 300, device=dev).to(dev)
model.eval()
with torch.no_grad():
    for n in spec["batches"]:
        x = batch(n)
        model(*x)
        model(*x)
        torch.cuda.synchronize()
        reps = 50 if n < 256 else 20
        started = time.perf_counter()
        for _ in range(reps):
            model(*x)[1].cpu()
        dt = (time.perf_counter() - started) / reps
        lines.append(f"reference forward batch {n}: {dt * 1e3:.2f} ms, {n / dt:.0f} pairs/s")
        figures.update({f"esim/torch/{n}/predict_ms": dt * 1e3, f"esim/torch/{n}/predict_pairs_per_s": n / dt})
model.train()
optimizer = torch.optim.Adam(model.parameters(), 4e-4)
x = batch(32)
y = torch.tensor(rng.integers(0, 3, 32), device=dev)


def step():
    optimizer.zero_grad()
    logits, _ = model(*x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    return loss


step()
step()
torch.cuda.synchronize()
started = time.perf_counter()
for _ in range(30):
    loss = step()
float(loss)
dt = (time.perf_counter() - started) / 30
lines.append(f"reference train step batch 32: {dt * 1e3:.1f} ms, {32 / dt:.0f} pairs/s")
figures.update({"esim/torch/32/train_step_ms": dt * 1e3, "esim/torch/32/train_pairs_per_s": 32 / dt})
emit({**figures, "lines": lines, "torch": torch.__version__})
