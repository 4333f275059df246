"""Training speed of the zoo's models on any Keras backend: compilation, first epoch, steady pairs/s,
batch shapes and peak memory, each model at its paper size.

    python scripts/benchmark_training.py                          # every registered model, this backend
    KERAS_BACKEND=jax python scripts/benchmark_training.py --models esim rocktaschel_wbw --runs 2
    python scripts/benchmark_training.py --data ../shared/data/snli_1.0_dev_tokens --shapes-only

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
    import numpy as np

    import zoo
    from zoo.data.vocab import Vocabulary
    from zoo.training.losses import NLILoss
    from zoo.training.model import make_optimizer

    preset = zoo.get_preset(name)
    overrides = {k: v for k, v in (("hidden_size", args.hidden_size),) if v and k in preset["model"]}
    batch_size = args.batch_size or preset["train"]["batch_size"]
    pairs = read_pairs(args.data)
    pairs = (pairs * (args.pairs // max(len(pairs), 1) + 1))[:args.pairs] if args.pairs else pairs
    lower = preset["data"]["lowercase"]
    vocab = Vocabulary.build([[t.lower() if lower else t for t in p[k]] for p in pairs for k in (0, 1)])
    keras.utils.set_random_seed(0)
    model = zoo.create_model(name, vocabulary_size=len(vocab), embedding_dim=args.embedding_dim,
                             tunable_words="all", **overrides)
    model.compile(optimizer=make_optimizer(preset["train"]), loss=NLILoss(),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                  jit_compile=args.jit_compile if args.jit_compile != "auto" else "auto")
    batches = Batches(pairs, vocab, preset, batch_size)
    data = feed(batches)
    shapes = {shape for _, shape in batches.plan(0)}
    started = time.time()
    model.fit(data, epochs=1, verbose=0)
    first = time.time() - started
    started = time.time()
    model.fit(data, epochs=args.epochs, verbose=0)
    steady = (time.time() - started) / args.epochs
    memory, where = peak_memory()
    return {"model": name, "backend": keras.backend.backend(), "pairs": len(pairs), "batch_size": batch_size,
            "hidden_size": overrides.get("hidden_size", preset["model"].get("hidden_size")),
            "params": int(model.count_params_without_embeddings()), "shapes": len(shapes),
            "first_epoch_s": first, "steady_epoch_s": steady, "pairs_per_s": len(pairs) / steady,
            "peak_memory_bytes": memory, "peak_memory_where": where, "jit_compile": str(model.jit_compile)}


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


def table(rows, runs):
    lines = [f"| model | \\|θ\\|_M | batch | shapes | first epoch s | " + " | ".join(
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
    parser.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"))
    parser.add_argument("--shapes-only", action="store_true", help="only print batch shapes and padding")
    parser.add_argument("--json", help="also write every figure to this JSON file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model and print JSON
    args = parser.parse_args(argv)
    args.jit_compile = {"auto": "auto", "true": True, "false": False}.get(args.jit_compile, args.jit_compile)

    if args.one:
        import keras

        from zoo.training import compile_cache

        compile_cache.enable(args.compile_cache or "none", backend=keras.backend.backend())
        print("RESULT " + json.dumps(measure(args.one, args)), flush=True)
        return 0
    import zoo

    args.models = args.models or zoo.list_models()
    if args.shapes_only:
        shapes_only(args)
        return 0
    cache = args.compile_cache or tempfile.mkdtemp(prefix="nli-zoo-xla-")
    env = dict(os.environ)  # each measuring process sets the cache up for its backend (TF_XLA_FLAGS, JAX)
    import keras

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPU cores, {platform.platform()}; python "
          f"{platform.python_version()}; keras {keras.__version__} ({keras.backend.backend()}); compile cache: {cache}",
          flush=True)
    rows = {}
    for name in args.models:
        rows[name] = []
        for run in range(args.runs):
            command = [sys.executable, os.path.abspath(__file__), "--one", name, "--compile-cache", cache,
                       "--pairs", str(args.pairs), "--epochs", str(args.epochs), "--embedding-dim",
                       str(args.embedding_dim), "--jit-compile", str(args.jit_compile).lower()]
            for option, value in (("--data", args.data), ("--hidden-size", args.hidden_size),
                                  ("--batch-size", args.batch_size)):
                if value:
                    command += [option, str(value)]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if done.returncode or not result:
                print(f"{name}: run {run + 1} failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
                break
            rows[name].append(json.loads(result[0][len("RESULT "):]))
            m = rows[name][-1]
            print(f"{name} run {run + 1}: first epoch {m['first_epoch_s']:.1f} s, steady {m['steady_epoch_s']:.2f} s "
                  f"({m['pairs_per_s']:,.0f} pairs/s), {m['shapes']} shapes, jit_compile={m['jit_compile']}",
                  flush=True)
        if not rows[name]:
            del rows[name]
    print(table(rows, args.runs))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": platform.platform(), "keras": keras.__version__,
                       "backend": keras.backend.backend(), "results": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
