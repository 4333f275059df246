"""The PyTorch reference ESIM (github.com/coetaur0/ESIM) timed as scripts/benchmark_serving.py times the
zoo: run by the PyTorch environment's python with the reference's checkout and the zoo's folder on its
PYTHONPATH (the benchmark sets both), one argument: the JSON spec (threads, sizes, the token ids' file).
Prints one result line (`zoo.measurements.child`)."""

import json
import sys

import numpy as np
import torch
from esim.model import ESIM  # the reference implementation, from its checkout (on PYTHONPATH)

from zoo.measurements.child import emit  # standard library only: no TensorFlow needed here
from zoo.measurements.timing import measure, peak_rss_mb

spec = json.loads(sys.argv[1])
torch.set_num_threads(spec["threads"])
torch.set_num_interop_threads(spec["threads"])
torch.manual_seed(0)
model = ESIM(spec["vocabulary"], spec["embedding_dim"], spec["hidden_size"], dropout=0.5).eval()
data = np.load(spec["ids"])


def prepare(start, stop):
    tensors = []
    for side in ("premise", "hypothesis"):
        lengths = np.maximum(data[side + "_lengths"][start:stop], 1)
        ids = data[side][start:stop, :lengths.max()]
        # lengths stay a CPU int64 tensor: pack_padded_sequence requires it on PyTorch >= 1.7
        tensors += [torch.from_numpy(np.ascontiguousarray(ids)).long(), torch.from_numpy(lengths).long().cpu()]
    return tensors[0], tensors[1], tensors[2], tensors[3]


def call(args):
    with torch.inference_mode():
        model(*args)


n = len(data["premise"])
result = measure(call, [prepare(i, i + 1) for i in range(spec["latency_pairs"])],
                 {size: [(prepare(s, min(s + size, n)), min(s + size, n) - s) for s in range(0, n, size)]
                  for size in spec["throughput_batches"]})
result["peak_mb"] = peak_rss_mb()
result["size_bytes"] = 4 * sum(p.numel() for p in model.parameters())
result["torch"] = torch.__version__
emit(result)
