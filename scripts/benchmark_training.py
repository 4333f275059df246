"""Training speed of the zoo's models on any Keras backend: compilation, first epoch, steady pairs/s,
batch shapes and peak memory, each model at its paper size.

    python scripts/benchmark_training.py                          # every registered model, this backend
    KERAS_BACKEND=jax python scripts/benchmark_training.py --models esim rocktaschel_wbw --runs 2
    python scripts/benchmark_training.py --data ../shared/data/snli_1.0_dev_tokens --shapes-only
    python scripts/benchmark_training.py --models esim --threads 1 --runs 3 --vocabulary 40000 \
        --torch-reference ESIM --torch-python /path/to/torch-env/bin/python
    python scripts/benchmark_training.py --models esim --threads 1 --runs 1 --vocabulary 40000 --profile

Needs no TensorFlow (so it runs under JAX on a machine without it): pairs come as tokens (the leaves of
SNLI's binary parses in the shipped rows, or a folder of premise.txt / hypothesis.txt / label.txt), are
batched by the same length grid as training (`zoo.data.batching`: at most 12 batch shapes, fixed batch
dimension, weight-0 filler rows) and fed through `keras.utils.PyDataset`. The model, optimizer, loss and
metric are the training run's (`zoo.create_model` with the preset, `zoo.training.model.make_optimizer`,
`NLILoss`, weighted accuracy); word vectors are random 300-d (speed does not depend on them).

Each model is measured in a fresh process, `--runs` times in a row, sharing the compilation cache
(`--compile-cache`): the first run pays every XLA compilation, a second one reads them back (JAX's
persistent compilation cache; TensorFlow's `--tf_xla_persistent_cache_directory`), so its first epoch
shows what a rerun of the same training command pays. Columns:
- `shapes`: distinct batch shapes of an epoch (one compilation each);
- `first epoch s` of each run: compilation, tracing and one epoch;
- `steady epoch s`, `pairs/s`: the mean of `--epochs` further epochs;
- `peak memory`: the accelerator's peak bytes in use where the backend reports it, else the process's
  peak resident memory (marked `host`).

`--threads N` runs each measuring process on N threads (TensorFlow's intra- and inter-op pools; under
JAX, XLA's CPU thread pool). `--torch-reference DIR` (a checkout of github.com/coetaur0/ESIM, the folder
holding `esim/`) with `--torch-python` (an environment with PyTorch; the zoo never depends on it) also
trains the reference's `ESIM` on the same batches, epoch by epoch, as its own training script does (Adam
at 0.0004, cross-entropy, gradients clipped to norm 10, dropout 0.5, every word vector trained; each
batch cut to its longest sentences and packed by the reference), on the same threads, `--runs` times;
the zoo's run pads each batch to its length-grid shape. ESIM only; the table then gives both and their
ratio. `--keras-loops` trains the bi-LSTMs with Keras's own loops instead of the zoo's fused CPU loop
(`zoo.layers.recurrent.BidirectionalLSTM`), for a before/after. `--profile` (TensorFlow) instead traces one epoch after the first with the TensorFlow profiler and
prints the ops' time by op type and by part of the model (recurrent loops and gradients apart).
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SAMPLE_DIR = os.path.join(ROOT, "zoo", "data", "sample")
LABELS = ("entailment", "neutral", "contradiction")


# Data (no TensorFlow) ----------------------------------------------------------------------------
def read_pairs(path=None):
    """`(premise tokens, hypothesis tokens, label id, premise parse, hypothesis parse)` of every labelled pair.

    Args:
        path: None (the shipped SNLI rows: parse leaves as tokens), a `.jsonl` file of SNLI records, or a
            folder with `premise.txt`, `hypothesis.txt`, `label.txt` (space-separated tokens, one pair a line).
    """
    if path and os.path.isdir(path) and os.path.exists(os.path.join(path, "premise.txt")):
        lines = [open(os.path.join(path, f"{k}.txt"), encoding="utf-8").read().splitlines()
                 for k in ("premise", "hypothesis", "label")]
        return [(p.split(), h.split(), LABELS.index(y.strip()), "", "") for p, h, y in zip(*lines)
                if y.strip() in LABELS]
    files = [path] if path else sorted(os.path.join(SAMPLE_DIR, f) for f in os.listdir(SAMPLE_DIR)
                                       if f.endswith(".jsonl"))
    pairs = []
    for name in files:
        with open(name, encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                if record.get("gold_label") not in LABELS:
                    continue
                parses = record["sentence1_binary_parse"], record["sentence2_binary_parse"]
                tokens = [re.findall(r"[^\s()]+", parse) for parse in parses]
                pairs.append((tokens[0], tokens[1], LABELS.index(record["gold_label"]), *parses))
    return pairs


class Batches:
    """One epoch's shape-stable batches of encoded pairs as numpy arrays (trees for syntactic models)."""

    def __init__(self, pairs, vocab, preset, batch_size):
        import numpy as np

        from zoo.data.batching import LengthGrid

        data = preset["data"]
        self.lp, self.lh = data["max_premise_length"], data["max_hypothesis_length"]
        lower = data["lowercase"]
        self.premises = [vocab.ids([t.lower() if lower else t for t in p[0]][:self.lp]) for p in pairs]
        self.hypotheses = [vocab.ids([t.lower() if lower else t for t in p[1]][:self.lh]) for p in pairs]
        self.labels = np.asarray([p[2] for p in pairs], "int32")
        self.pairs = pairs
        self.trees = preset["model"].get("trees") == "syntactic"
        self.grid = LengthGrid.for_max_lengths(self.lp, self.lh)
        self.batch_size = batch_size
        self.lengths = (np.asarray([max(len(p), 1) for p in self.premises]),
                        np.asarray([max(len(h), 1) for h in self.hypotheses]))

    def plan(self, epoch):
        from zoo.data.batching import plan_batches

        return plan_batches(*self.lengths, self.grid, self.batch_size, shuffle=True, seed=epoch)

    def tree(self, index, side, padded):
        from zoo.data import trees

        parse, tokens = self.pairs[index][3 + side], (self.premises, self.hypotheses)[side][index]
        limit = (self.lp, self.lh)[side]
        if parse:
            tree = trees.parse_binary_parse(parse)
            if limit is not None:
                tree = trees.truncate(tree, limit)
            arrays = trees.tree_arrays(tree)
        else:
            arrays = trees.complete_tree_arrays(len(tokens))
        return arrays

    def batch(self, indices, shape):
        import numpy as np

        from zoo.data.batching import fill_batch
        from zoo.data.trees import pad_trees

        indices, weights = fill_batch(indices, self.batch_size)
        features = {}
        for side, (key, rows, width) in enumerate((("premise", self.premises, shape[0]),
                                                   ("hypothesis", self.hypotheses, shape[1]))):
            ids = np.zeros((len(indices), width), "int32")
            for r, i in enumerate(indices):
                ids[r, :len(rows[i])] = rows[i]
            features[key] = ids
            if self.trees:
                features[f"{key}_tree"] = pad_trees([self.tree(i, side, width) for i in indices], length=width)
        return features, self.labels[indices], weights


def pyd(batches):
    """A `keras.utils.PyDataset` over `Batches`, reshuffled each epoch."""
    import keras

    class Epochs(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.epoch = 0
            self.current = batches.plan(0)

        def __len__(self):
            return len(self.current)

        def __getitem__(self, index):
            return batches.batch(*self.current[index])

        def on_epoch_end(self):
            self.epoch += 1
            self.current = batches.plan(self.epoch)

    return Epochs()


def feed(batches):
    """What `fit` reads: the `PyDataset`, or under TensorFlow a `tf.data` generator over it whose signature
    leaves the sentence lengths open (Keras's PyDataset adapter fixes its signature from the first batches,
    which then refuses a batch of another shape)."""
    import keras

    data = pyd(batches)
    if keras.backend.backend() != "tensorflow":
        return data
    import tensorflow as tf

    def open_lengths(array):  # [batch, length, ...]: the length may change from batch to batch
        shape = list(array.shape)
        return tf.TensorSpec([shape[0], None, *shape[2:]], tf.as_dtype(array.dtype))

    features, labels, weights = data[0]
    signature = ({k: open_lengths(v) for k, v in features.items()},
                 tf.TensorSpec(labels.shape, tf.as_dtype(labels.dtype)),
                 tf.TensorSpec(weights.shape, tf.as_dtype(weights.dtype)))

    def epoch():
        for index in range(len(data)):
            yield data[index]
        data.on_epoch_end()

    return tf.data.Dataset.from_generator(epoch, output_signature=signature).prefetch(2)


def peak_memory():
    """`(bytes, where)`: the accelerator's peak in use, else this process's peak resident memory."""
    import resource

    import keras

    backend = keras.backend.backend()
    try:
        if backend == "jax":
            import jax

            stats = jax.local_devices()[0].memory_stats() or {}
            if "peak_bytes_in_use" in stats:
                return int(stats["peak_bytes_in_use"]), jax.local_devices()[0].platform
        elif backend == "tensorflow":
            import tensorflow as tf

            if tf.config.list_physical_devices("GPU"):
                return int(tf.config.experimental.get_memory_info("GPU:0")["peak"]), "gpu"
        elif backend == "torch":
            import torch

            if torch.cuda.is_available():
                return int(torch.cuda.max_memory_allocated()), "gpu"
    except Exception:  # a backend without memory statistics: fall back to the host figure
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "host"


# One model, in its own process -------------------------------------------------------------------
def measure(name, args):
    """Trains `name` for 1 + `args.epochs` epochs and returns its figures (a dict)."""
    import keras

    import zoo
    from zoo.data.vocab import Vocabulary
    from zoo.training.losses import NLILoss
    from zoo.training.model import make_optimizer

    if args.threads and keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    preset = zoo.get_preset(name)
    overrides = {k: v for k, v in (("hidden_size", args.hidden_size),) if v and k in preset["model"]}
    batch_size = args.batch_size or preset["train"]["batch_size"]
    pairs = read_pairs(args.data)
    pairs = (pairs * (args.pairs // max(len(pairs), 1) + 1))[:args.pairs] if args.pairs else pairs
    lower = preset["data"]["lowercase"]
    vocab = Vocabulary.build([[t.lower() if lower else t for t in p[k]] for p in pairs for k in (0, 1)])
    keras.utils.set_random_seed(0)
    vocabulary_size = max(len(vocab), args.vocabulary)  # rows past the data's words: a realistic table size
    model = zoo.create_model(name, vocabulary_size=vocabulary_size, embedding_dim=args.embedding_dim,
                             tunable_words="all", **overrides)
    if args.keras_loops:  # the bi-LSTMs' fused CPU loop off: Keras's own loops (zoo.layers.recurrent)
        from zoo.layers.recurrent import BidirectionalLSTM
        from zoo.training.kernels import iter_layers

        for layer in iter_layers(model):
            if isinstance(layer, BidirectionalLSTM):
                layer.fused = False
    model.compile(optimizer=make_optimizer(preset["train"]), loss=NLILoss(),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                  jit_compile=args.jit_compile if args.jit_compile != "auto" else "auto")
    batches = Batches(pairs, vocab, preset, batch_size)
    data = feed(batches)
    shapes = {shape for _, shape in batches.plan(0)}
    if args.torch_batches:  # the same batches, epoch by epoch, for the PyTorch reference
        write_batches(batches, 1 + args.epochs, args.torch_batches)
    started = time.time()
    model.fit(data, epochs=1, verbose=0)
    first = time.time() - started
    if args.profile:
        return profile_epoch(model, data, name, len(pairs))
    started = time.time()
    model.fit(data, epochs=args.epochs, verbose=0)
    steady = (time.time() - started) / args.epochs
    memory, where = peak_memory()
    return {"model": name, "backend": keras.backend.backend(), "pairs": len(pairs), "batch_size": batch_size,
            "hidden_size": overrides.get("hidden_size", preset["model"].get("hidden_size")),
            "params": int(model.count_params_without_embeddings()), "shapes": len(shapes),
            "first_epoch_s": first, "steady_epoch_s": steady, "pairs_per_s": len(pairs) / steady,
            "peak_memory_bytes": memory, "peak_memory_where": where, "jit_compile": str(model.jit_compile),
            "threads": args.threads or "all", "vocabulary_size": vocabulary_size}


def profile_epoch(model, data, name, pairs):
    """One epoch under the TensorFlow profiler: where the training step's time goes, by op type and by
    part of the model (the first name scopes of the op, forward pass and gradient apart)."""
    import collections

    from tf_profile import profile

    wall, ops = profile(lambda: model.fit(data, epochs=1, verbose=0))
    by_type, by_part = collections.Counter(), collections.Counter()
    for path, op_type, seconds in ops:
        parts = [part for part in path.split("/") if part and not part.startswith(
            ("StatefulPartitionedCall", "PartitionedCall", "while", "body", "_"))]
        part = "/".join(parts[:3 if parts and parts[0] == "gradient_tape" else 2]).rstrip("_0123456789")
        by_type[op_type] += seconds
        by_part[part + (" (loop)" if "/while/" in path else "")] += seconds
    busy = sum(by_type.values())
    return {"model": name, "profile": True, "wall_s": wall, "pairs": pairs, "pairs_per_s": pairs / wall,
            "busy_s": busy, "by_type": dict(by_type.most_common(15)), "by_part": dict(by_part.most_common(20))}


def print_profile(result):
    print(f"{result['model']}: one epoch of {result['pairs']} pairs in {result['wall_s']:.2f} s "
          f"({result['pairs_per_s']:.1f} pairs/s under the profiler); ops busy {result['busy_s']:.2f} s")
    for title in ("by_type", "by_part"):
        print(f"  {title.replace('_', ' ')}:")
        for key, seconds in result[title].items():
            print(f"    {key:<64} {1e3 * seconds:9.1f} ms  {100 * seconds / result['busy_s']:5.1f}%")


def write_batches(batches, epochs, path):
    """Writes every batch of `epochs` epochs (ids, labels, weights; as `fit` sees them) for the PyTorch child."""
    import numpy as np

    arrays, count = {}, 0
    for epoch in range(epochs):
        for indices, shape in batches.plan(epoch):
            features, labels, weights = batches.batch(indices, shape)
            arrays.update({f"{count}_premise": features["premise"], f"{count}_hypothesis": features["hypothesis"],
                           f"{count}_labels": labels, f"{count}_weights": weights, f"{count}_epoch": np.int32(epoch)})
            count += 1
    from zoo import fileio

    with fileio.atomic_path(path) as tmp:
        np.savez(tmp, count=np.int32(count), **arrays)


TORCH_CHILD = r'''
import json, resource, sys, time
spec = json.loads(sys.argv[1])
import numpy as np
import torch
from torch import nn
if spec["threads"]:
    torch.set_num_threads(spec["threads"])
    torch.set_num_interop_threads(spec["threads"])
sys.path.insert(0, spec["reference"])
from esim.model import ESIM  # the reference implementation, imported from its checkout

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

times = {}
for epoch, items in sorted(epochs.items()):
    started = time.perf_counter()
    for item in items:
        step(*item)
    times[epoch] = time.perf_counter() - started
pairs = sum(float(w.sum()) for _, _, w in epochs[0])
steady = sum(times[e] for e in times if e > 0) / max(len(times) - 1, 1)
print("RESULT " + json.dumps({"first_epoch_s": times[0], "steady_epoch_s": steady, "pairs_per_s": pairs / steady,
                              "peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                              "threads": spec["threads"] or "all", "torch": torch.__version__}), flush=True)
'''


def shapes_only(args):
    """Prints the batch shapes and padding efficiency of the data under every distinct grid of the presets."""
    import numpy as np

    import zoo
    from zoo.data.batching import LengthGrid, plan_batches

    pairs = read_pairs(args.data)
    seen = set()
    print(f"{len(pairs):,} pairs from {args.data or 'the shipped SNLI rows'}")
    for name in args.models:
        data = zoo.get_preset(name)["data"]
        key = (data["max_premise_length"], data["max_hypothesis_length"])
        if key in seen:
            continue
        seen.add(key)
        grid = LengthGrid.for_max_lengths(*key)
        lp = np.minimum([len(p[0]) for p in pairs], key[0] or 10 ** 9)
        lh = np.minimum([len(p[1]) for p in pairs], key[1] or 10 ** 9)
        batches = plan_batches(lp, lh, grid, args.batch_size or 32, shuffle=True)
        padded = sum((args.batch_size or 32) * (s[0] + s[1]) for _, s in batches)
        print(f"max lengths {key}: {grid}: {len({s for _, s in batches})} shapes in {len(batches)} batches; "
              f"real tokens {float((lp.sum() + lh.sum()) / padded):.1%} of padded positions")


def torch_runs(args, zoo_run, batches_file):
    """Trains the PyTorch reference ESIM on the batches the zoo's first run wrote, `--runs` times."""
    import zoo

    preset = zoo.get_preset("esim")
    spec = {"reference": os.path.abspath(args.torch_reference), "batches": batches_file, "threads": args.threads,
            "vocabulary": zoo_run["vocabulary_size"], "embedding_dim": args.embedding_dim,
            "hidden_size": args.hidden_size or preset["model"]["hidden_size"]}
    results = []
    for run in range(args.runs):
        done = subprocess.run([args.torch_python, "-c", TORCH_CHILD, json.dumps(spec)], capture_output=True, text=True)
        result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not result:
            print(f"PyTorch reference: run {run + 1} failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
            break
        results.append(json.loads(result[0][len("RESULT "):]))
        print(f"PyTorch reference ESIM run {run + 1}: first epoch {results[-1]['first_epoch_s']:.1f} s, steady "
              f"{results[-1]['steady_epoch_s']:.2f} s ({results[-1]['pairs_per_s']:,.0f} pairs/s), torch "
              f"{results[-1]['torch']}", flush=True)
    return results


def comparison(rows, references):
    """The zoo against the PyTorch reference: pairs/s of every run (median, range) and the ratio of medians."""
    import statistics

    lines = ["| model | threads | zoo pairs/s (runs) | PyTorch reference pairs/s (runs) | zoo / PyTorch |",
             "|---|---:|---:|---:|---:|"]
    for name, reference in references.items():
        if not reference:
            continue
        ours = [m["pairs_per_s"] for m in rows[name]]
        theirs = [m["pairs_per_s"] for m in reference]
        cell = lambda v: f"{statistics.median(v):,.1f} ({min(v):,.1f}-{max(v):,.1f}, {len(v)})"
        lines.append(f"| `{name}` | {rows[name][0]['threads']} | {cell(ours)} | {cell(theirs)} | "
                     f"{statistics.median(ours) / statistics.median(theirs):.2f}x |")
    return "\n".join(lines)


def table(rows, runs):
    lines = ["| model | \\|θ\\|_M | batch | shapes | first epoch s | " + " | ".join(
        f"run {r + 1}" for r in range(1, runs)) + (" | " if runs > 1 else "") + "steady epoch s | pairs/s | peak memory |",
        "|---|---:|---:|---:|---:|" + "---:|" * (runs - 1) + "---:|---:|---:|"]
    for name, measured in rows.items():
        first = measured[0]
        later = [f"{m['first_epoch_s']:.1f}" for m in measured[1:]]
        mem = f"{first['peak_memory_bytes'] / 2 ** 20:,.0f} MiB" + (" host" if first["peak_memory_where"] == "host" else "")
        lines.append(f"| `{name}` | {first['params']:,} | {first['batch_size']} | {first['shapes']} | "
                     f"{first['first_epoch_s']:.1f} | " + "".join(f"{v} | " for v in later)
                     + f"{first['steady_epoch_s']:.2f} | {first['pairs_per_s']:,.0f} | {mem} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=None, help="registered names (default: every model)")
    parser.add_argument("--data", default=None, help="an SNLI .jsonl file or a folder of premise/hypothesis/"
                                                     "label.txt tokens (default: the shipped rows)")
    parser.add_argument("--pairs", type=int, default=1024, help="pairs per epoch, repeating the data (0: as is)")
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs after the first (default 2)")
    parser.add_argument("--runs", type=int, default=2, help="fresh processes per model sharing the cache (default 2)")
    parser.add_argument("--compile-cache", default=None,
                        help="persistent compilation cache directory (default: a new temporary one; 'none': off)")
    parser.add_argument("--hidden-size", type=int, default=None, help="override the paper sizes")
    parser.add_argument("--batch-size", type=int, default=None, help="override the presets' batch sizes")
    parser.add_argument("--embedding-dim", type=int, default=300)
    parser.add_argument("--vocabulary", type=int, default=0,
                        help="rows of the word-vector table (default: the data's words; at least those)")
    parser.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"))
    parser.add_argument("--shapes-only", action="store_true", help="only print batch shapes and padding")
    parser.add_argument("--json", help="also write every figure to this JSON file")
    parser.add_argument("--threads", type=int, default=0, help="threads of each measuring process (default: all)")
    parser.add_argument("--torch-reference", default=None, help="a checkout of github.com/coetaur0/ESIM (ESIM only)")
    parser.add_argument("--torch-python", default=None, help="the python of an environment with PyTorch")
    parser.add_argument("--keras-loops", action="store_true",
                        help="train the bi-LSTMs with Keras's loops instead of the zoo's fused CPU loop")
    parser.add_argument("--profile", action="store_true",
                        help="TensorFlow: profile one epoch after the first and print where the time goes")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model and print JSON
    parser.add_argument("--torch-batches", default=None, help=argparse.SUPPRESS)  # internal: write the batches here
    args = parser.parse_args(argv)
    if args.torch_reference and not args.torch_python:
        parser.error("--torch-reference needs --torch-python")
    args.jit_compile = {"auto": "auto", "true": True, "false": False}.get(args.jit_compile, args.jit_compile)

    if args.one:
        import keras

        from zoo.training import compile_cache

        compile_cache.enable(args.compile_cache or "none", backend=keras.backend.backend())
        print("RESULT " + json.dumps(measure(args.one, args)), flush=True)
        return 0
    import zoo

    args.models = args.models or zoo.list_models()
    if args.threads:
        import keras

        if keras.backend.backend() != "tensorflow":
            parser.error("--threads sets TensorFlow's thread pools; run it with KERAS_BACKEND=tensorflow")
    if args.shapes_only:
        shapes_only(args)
        return 0
    cache = args.compile_cache or tempfile.mkdtemp(prefix="nli-zoo-xla-")
    env = dict(os.environ)  # each measuring process sets the cache up for its backend (TF_XLA_FLAGS, JAX)
    import keras

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPU cores, {platform.platform()}; python "
          f"{platform.python_version()}; keras {keras.__version__} ({keras.backend.backend()}); compile cache: {cache}",
          flush=True)
    rows, references = {}, {}
    for name in args.models:
        rows[name] = []
        for run in range(args.runs):
            command = [sys.executable, os.path.abspath(__file__), "--one", name, "--compile-cache", cache,
                       "--pairs", str(args.pairs), "--epochs", str(args.epochs), "--embedding-dim",
                       str(args.embedding_dim), "--jit-compile", str(args.jit_compile).lower()]
            batches_file = (os.path.join(cache, f"{name}_batches.npz")
                            if args.torch_reference and name == "esim" and run == 0 else None)
            command += [flag for flag, on in (("--profile", args.profile), ("--keras-loops", args.keras_loops)) if on]
            for option, value in (("--data", args.data), ("--hidden-size", args.hidden_size),
                                  ("--batch-size", args.batch_size), ("--threads", args.threads),
                                  ("--vocabulary", args.vocabulary),
                                  ("--torch-batches", batches_file)):
                if value:
                    command += [option, str(value)]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if done.returncode or not result:
                print(f"{name}: run {run + 1} failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
                break
            rows[name].append(json.loads(result[0][len("RESULT "):]))
            m = rows[name][-1]
            if m.get("profile"):
                print_profile(m)
                continue
            print(f"{name} run {run + 1}: first epoch {m['first_epoch_s']:.1f} s, steady {m['steady_epoch_s']:.2f} s "
                  f"({m['pairs_per_s']:,.0f} pairs/s), {m['shapes']} shapes, jit_compile={m['jit_compile']}",
                  flush=True)
        if not rows[name]:
            del rows[name]
        elif args.torch_reference and name == "esim":
            references[name] = torch_runs(args, rows[name][0], os.path.join(cache, f"{name}_batches.npz"))
    if args.profile:
        return 0
    print(table(rows, args.runs))
    if references:
        print(comparison(rows, references))
    if args.json:
        from zoo.fileio import write_json

        write_json(args.json, {"machine": platform.platform(), "keras": keras.__version__,
                               "backend": keras.backend.backend(), "results": rows, "torch_reference": references})
    return 0


if __name__ == "__main__":
    sys.exit(main())
