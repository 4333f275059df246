"""The PyTorch reference ESIM (github.com/coetaur0/ESIM) trained on the very batches the zoo's pipeline
made, as scripts/benchmark_training.py times the zoo: Adam at 0.0004, cross-entropy, gradients clipped to
norm 10, dropout 0.5, every word vector trained; each batch cut to its longest sentences and packed by
the reference. Run by the PyTorch environment's python with the reference's checkout and the zoo's folder
on its PYTHONPATH (the benchmark sets both), one argument: the JSON spec. Prints one result line
(`zoo.measurements.child`)."""

import json
import resource
import sys
import time

import numpy as np
import torch
from esim.model import ESIM  # the reference implementation, from its checkout (on PYTHONPATH)
from torch import nn

from zoo.measurements.child import emit  # standard library only: no TensorFlow needed here

spec = json.loads(sys.argv[1])
if spec["threads"]:
    torch.set_num_threads(spec["threads"])
    torch.set_num_interop_threads(spec["threads"])
torch.manual_seed(0)
model = ESIM(spec["vocabulary"], spec["embedding_dim"], spec["hidden_size"], dropout=0.5, num_classes=3)
model.train()
optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
criterion = nn.CrossEntropyLoss(reduction="none")
data = np.load(spec["batches"])
epochs = {}
for i in range(int(data["count"])):
    tensors = []
    for side in ("premise", "hypothesis"):
        ids = data[f"{i}_{side}"]
        lengths = np.maximum((ids != 0).sum(axis=1), 1)
        # the reference's collation: each batch padded to its longest sentence; lengths on the CPU
        tensors += [torch.from_numpy(np.ascontiguousarray(ids[:, :lengths.max()])).long(),
                    torch.from_numpy(lengths).long()]
    weights = torch.from_numpy(data[f"{i}_weights"]).float()
    epochs.setdefault(int(data[f"{i}_epoch"]), []).append(
        (tensors, torch.from_numpy(data[f"{i}_labels"]).long(), weights))


def step(tensors, labels, weights):
    optimizer.zero_grad()
    logits, _ = model(*tensors)
    loss = (criterion(logits, labels) * weights).sum() / weights.sum().clamp(min=1.0)  # filler rows weigh 0
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 10.0)
    optimizer.step()


times, cpu = {}, {}
for epoch, items in sorted(epochs.items()):
    started, cpu_started = time.perf_counter(), time.process_time()
    for item in items:
        step(*item)
    times[epoch] = time.perf_counter() - started
    cpu[epoch] = time.process_time() - cpu_started
pairs = sum(float(w.sum()) for _, _, w in epochs[0])
steady = sum(times[e] for e in times if e > 0) / max(len(times) - 1, 1)
steady_cpu = sum(cpu[e] for e in cpu if e > 0) / max(len(cpu) - 1, 1)
emit({"first_epoch_s": times[0], "steady_epoch_s": steady, "pairs_per_s": pairs / steady,
      "steady_epoch_cpu_s": steady_cpu, "peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
      "threads": spec["threads"] or "all", "torch": torch.__version__})
