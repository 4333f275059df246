"""ESIM at paper size (40,000 words, 300-d, hidden 300, random weights) under JAX on a GPU: Keras's own
`predict_on_batch` at batch 1, 32 and 256 and `train_on_batch` at 32 (Adam), on random padded id batches
(premises up to 24 tokens, hypotheses up to 12). Needs no TensorFlow (a GPU machine may have only JAX):

    KERAS_BACKEND=jax python scripts/benchmark_gpu_jax.py
    KERAS_BACKEND=jax python scripts/benchmark_gpu_jax.py --record        # results/gpu/<GPU>.jsonl
    python scripts/benchmark_gpu_jax.py --torch-reference ESIM --torch-python ENV/bin/python   # the reference

`--torch-reference` runs the public PyTorch ESIM (github.com/coetaur0/ESIM, a clone) instead, with the
same shapes (`scripts/reference/esim_torch_gpu.py`, by `--torch-python`, default this python); torch 1.7
and later want `pack_padded_sequence`'s lengths on the CPU, which that code predates: give
`sorted_lengths.cpu()` there (esim/layers.py, line 116). `--record` appends the figures to the GPU's
record file (`zoo.measurements.record`), named after the GPU (`nvidia-smi`).
"""

import os
import re
import shutil
import subprocess
import sys
import time

from recording import add_record_options, reference_command, save
from zoo.commands.parsing import CommandParser
from zoo.measurements import child as protocol
from zoo.measurements import machine

BATCHES = (1, 32, 256)


def gpu_name():
    if not shutil.which("nvidia-smi"):
        return "no nvidia-smi"
    return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip().splitlines()[0]


def zoo_figures():
    """Keras's inference and training step of ESIM under JAX; `{figure: value}`."""
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras
    import numpy as np

    from zoo.registry import create_model

    print("devices", jax.devices(), flush=True)
    rng = np.random.default_rng(0)

    def batch(n, lp=24, lh=12):
        p = rng.integers(1, 40000, (n, lp)).astype("int32")
        h = rng.integers(1, 40000, (n, lh)).astype("int32")
        for i in range(n):
            p[i, rng.integers(8, lp + 1):] = 0
            h[i, rng.integers(4, lh + 1):] = 0
        return {"premise": p, "hypothesis": h}

    model = create_model("esim", vocabulary_size=40000, embedding_dim=300)
    model.compile(optimizer=keras.optimizers.Adam(4e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    figures = {}
    for n in BATCHES:
        x = batch(n)
        model.predict_on_batch(x)
        model.predict_on_batch(x)
        reps = 50 if n < 256 else 20
        started = time.perf_counter()
        for _ in range(reps):
            np.asarray(model.predict_on_batch(x))
        dt = (time.perf_counter() - started) / reps
        print(f"predict_on_batch batch {n}: {dt * 1e3:.2f} ms, {n / dt:.0f} pairs/s", flush=True)
        figures.update({f"esim/jax/{n}/predict_ms": dt * 1e3, f"esim/jax/{n}/predict_pairs_per_s": n / dt})
    x, y = batch(32), rng.integers(0, 3, 32)
    started = time.perf_counter()
    model.train_on_batch(x, y)
    print(f"first train step (compiles) {time.perf_counter() - started:.1f} s", flush=True)
    model.train_on_batch(x, y)
    started = time.perf_counter()
    for _ in range(30):
        loss = model.train_on_batch(x, y)
    dt = (time.perf_counter() - started) / 30
    print(f"train_on_batch batch 32: {dt * 1e3:.1f} ms, {32 / dt:.0f} pairs/s, loss {float(loss):.3f}", flush=True)
    figures.update({"esim/jax/32/train_step_ms": dt * 1e3, "esim/jax/32/train_pairs_per_s": 32 / dt})
    return figures


def reference_figures(args):
    """The PyTorch reference on the same shapes (its own process); `{figure: value}`."""
    command, env = reference_command(args.torch_python, "esim_torch_gpu.py", {"batches": list(BATCHES)},
                                     args.torch_reference)
    result = protocol.run(command, env=env)
    if "error" in result:
        raise SystemExit(f"benchmark_gpu_jax.py: error: the PyTorch reference failed: {result['error']}")
    for line in result.pop("lines"):
        print(line, flush=True)
    return result


def main(argv=None):
    parser = CommandParser(prog="benchmark_gpu_jax.py", description=__doc__.splitlines()[0])
    parser.add_argument("--torch-reference", metavar="ESIM_CLONE", help="run the reference from this clone instead")
    parser.add_argument("--torch-python", default=sys.executable, help="the python of an environment with PyTorch")
    add_record_options(parser)
    args = parser.parse_args(argv)
    gpu = gpu_name()
    print("GPU:", gpu, flush=True)
    figures = reference_figures(args) if args.torch_reference else zoo_figures()
    torch = figures.pop("torch", None)
    info = machine.describe(seconds=0)
    info["id"] = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-") or "no-gpu"
    info["cpu"]["gpu"] = gpu
    save(args, "gpu", {name: [value] for name, value in figures.items()}, info,
         packages=("jax", "keras"), extra_versions={"torch": torch} if torch else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
