"""The PyTorch reference ESIM (a clone of coetaur0/ESIM, argument 1) on a GPU, the shapes of benchmark_gpu_jax.py."""
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, torch
from esim.model import ESIM
dev = "cuda"
rng = np.random.default_rng(0)
def batch(n, lp=24, lh=12):
    p = rng.integers(1, 40000, (n, lp)); h = rng.integers(1, 40000, (n, lh))
    plen = rng.integers(8, lp + 1, n); hlen = rng.integers(4, lh + 1, n)
    for i in range(n):
        p[i, plen[i]:] = 0; h[i, hlen[i]:] = 0
    t = lambda a: torch.tensor(a, device=dev)
    return t(p), t(plen), t(h), t(hlen)
model = ESIM(40000, 300, 300, device=dev).to(dev)
model.eval()
with torch.no_grad():
    for n in (1, 32, 256):
        x = batch(n); model(*x); model(*x); torch.cuda.synchronize()
        reps = 50 if n < 256 else 20
        t = time.perf_counter()
        for _ in range(reps): model(*x)[1].cpu()
        dt = (time.perf_counter() - t) / reps
        print(f"reference forward batch {n}: {dt*1e3:.2f} ms, {n/dt:.0f} pairs/s", flush=True)
model.train()
opt = torch.optim.Adam(model.parameters(), 4e-4)
x = batch(32); y = torch.tensor(rng.integers(0, 3, 32), device=dev)
def step():
    opt.zero_grad(); logits, _ = model(*x); loss = torch.nn.functional.cross_entropy(logits, y); loss.backward(); opt.step(); return loss
step(); step(); torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(30): loss = step()
float(loss)
dt = (time.perf_counter() - t) / 30
print(f"reference train step batch 32: {dt*1e3:.1f} ms, {32/dt:.0f} pairs/s", flush=True)
