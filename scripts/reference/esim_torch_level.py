"""The PyTorch reference ESIM (github.com/coetaur0/ESIM) trained for scripts/esim_vs_reference.py: on the zoo's
batches of one seed, with the zoo run's word-vector matrix (the rows the zoo keeps fixed kept fixed), Adam at 4e-4,
gradient norm clipped at 10, dropout 0.5; it scores the test pairs with the weights of its best dev epoch. Run by
the PyTorch environment's python with the reference's checkout and the zoo's folder on its PYTHONPATH, one
argument: the JSON spec (`inputs`, `seed`, `hidden_size`, `threads`, `dropout`: "sequence", the reference's
RNNDropout, one mask a sequence on the word vectors and projections, or "element", a mask an element). Prints one
result line (`zoo.measurements.child`)."""

import json
import sys

import numpy as np
import torch
from esim.model import ESIM  # the reference implementation, from its checkout (on PYTHONPATH)
from torch import nn

from zoo.measurements.child import emit  # standard library only

spec = json.loads(sys.argv[1])
torch.set_num_threads(spec["threads"])
torch.manual_seed(spec["seed"])
data = np.load(spec["inputs"])
matrix = torch.from_numpy(data["matrix"]).float()
model = ESIM(matrix.shape[0], matrix.shape[1], spec["hidden_size"], embeddings=matrix, dropout=0.5, num_classes=3)
if spec.get("dropout") == "element":  # the reference's own alternative (model.py keeps it as a comment): a mask per
    model._rnn_dropout = nn.Dropout(p=0.5)  # element, as the zoo's, instead of one per sequence (RNNDropout)
frozen = torch.from_numpy(~data["tunable"])
model._word_embedding.weight.register_hook(lambda grad: grad.masked_fill(frozen[:, None], 0.0))
optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
criterion = nn.CrossEntropyLoss()


def tensors(premise, hypothesis):
    """The reference's inputs: each side cut to its longest sentence, with the lengths."""
    out = []
    for ids in (premise, hypothesis):
        lengths = np.maximum((ids != 0).sum(axis=1), 1)
        out += [torch.from_numpy(np.ascontiguousarray(ids[:, :lengths.max()])).long(), torch.from_numpy(lengths).long()]
    return out


def predict(split):
    model.eval()
    premise, hypothesis = data[f"{split}_premise"], data[f"{split}_hypothesis"]
    found = []
    with torch.no_grad():
        for start in range(0, len(premise), 256):
            logits, _ = model(*tensors(premise[start:start + 256], hypothesis[start:start + 256]))
            found.append(logits.argmax(dim=1).numpy())
    model.train()
    return np.concatenate(found)


best, history = None, []
for epoch in range(int(data["epochs"])):
    model.train()
    losses = []
    for i in range(int(data["count"])):
        if int(data[f"{i}_epoch"]) != epoch:
            continue
        # The zoo's batches keep a fixed size with filler rows (weight 0, every id padding). The reference never
        # sees such a row: its mean over no words divides by zero and one NaN row makes the whole loss NaN, so
        # the rows are left out, as the zoo's weights leave them out of its loss.
        real = data[f"{i}_weights"] > 0
        if not real.any():
            continue
        optimizer.zero_grad()
        logits, _ = model(*tensors(data[f"{i}_premise"][real], data[f"{i}_hypothesis"][real]))
        labels = torch.from_numpy(data[f"{i}_labels"][real]).long()
        loss = criterion(logits, labels)
        if not torch.isfinite(loss):  # said, not trained on: NaN weights would predict one class from here on
            emit({"error": f"the loss is {float(loss)} at epoch {epoch + 1}, batch {i}"})
            sys.exit(0)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        losses.append(float(loss))
    dev = float((predict("dev") == data["dev_labels"]).mean())
    history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)), "dev_accuracy": dev})
    if best is None or dev > best[0]:
        best = (dev, epoch + 1, predict("test").tolist())
emit({"dev_accuracy": best[0], "best_epoch": best[1], "test_predictions": best[2], "history": history,
      "torch": torch.__version__})
