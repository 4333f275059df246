"""Training speed on the path `nli-zoo train` runs, each figure with its CPU and its share of its GEMM peak.

Per-step and per-epoch times, and the per-pair rate and fixed part of an epoch from two data sizes.

    python scripts/benchmark_training.py --models esim --threads 1
    python scripts/benchmark_training.py --models esim --threads 1 --autotune       # tf.data's autotuner on
    python scripts/benchmark_training.py --models esim --threads 1 --runs 3 \
        --torch-reference ESIM --torch-python /path/to/torch-env/bin/python
    python scripts/benchmark_training.py --models esim --data /work/shared/data/snli_1.0_dev_head/snli_1.0_dev_head.jsonl
    python scripts/benchmark_training.py --models esim --threads 1 --profile
    python scripts/benchmark_training.py --shapes-only --data snli_sample

What runs: each measurement is a fresh process that calls `zoo.training.train` (the function behind
`nli-zoo train`: `RunConfig`, the trainer's model building and compilation, the `zoo.data` tf.data
pipeline, every callback of a run) in a throwaway run directory, with random 300-d word vectors
(`--embeddings none`; speed does not depend on their values) and the preset's sizes. The pairs come from
the library's loaders (`zoo.data.corpora.load_corpus`: `--data` is anything `nli-zoo train --data` takes,
default the shipped SNLI rows `snli_sample`; `snli` is the full corpus from tensorflow-datasets); their
training pairs (or, for a single file, its pairs) are repeated in order up to `--pairs` and written as a
throwaway NLI folder (train.jsonl, dev.jsonl and test.jsonl of `--eval-pairs`) that the run reads back.

A callback the benchmark gives the trainer (`zoo.training.train(..., callbacks=[clock])`, called after the
run's own) times every training step, the validation pass, each epoch's end (checkpoints, backup,
TensorBoard, the images every `--images-every` epochs) and the end of training, so a wait after the last
step (such as tf.data's autotuner's, issue 27) shows as `fit tail`. Columns:
- `steps s`: first step's start to last step's end of a steady epoch (epochs after the first, mean);
- `epoch s`: a steady epoch's start to the next one's (validation and every callback included);
- `median / max step ms`; `fit tail s`: from the last epoch's end to the end of training (the run's
  `on_train_end`: the last epoch's images when that epoch did not draw them); each run also prints what a
  steady epoch's end costs: the validation pass, then the run's callbacks;
- per-pair rate and fixed part: from the steady epochs of the two sizes of `--pairs` (1,024 and 2,048 by
  default): `rate = (n2 - n1) / (t2 - t1)`, `fixed = t1 - n1 / rate`; a wait or a constant cost shows as
  `fixed` and no longer hides in pairs/s;
- `% GEMM peak` (ESIM): the steady pairs/s times ESIM's useful training FLOPs per pair (3x the forward
  pass on the real, unpadded tokens; `scripts/machine.py`) over this machine's measured GEMM peak at the
  same thread count.

`--threads N` sets TensorFlow's intra- and inter-op pools of each measuring process. `--autotune` turns
tf.data's autotuner back on in the run's pipeline (the trainer turns it off: `zoo.data.pipeline.
with_input_options`), for the before/after. `--loop fused` trains the bi-LSTMs on the fused loop
(every padded position; the loop before packing) and `--loop keras` (or `--keras-loops`) on Keras's own
loops, instead of what `nli-zoo train` runs (`zoo.layers.loop_choice`: packed sequences under TensorFlow
on a CPU, training steps and the dev pass alike); the benchmark asks it as a user does, through the
models' `lstm_loop`. `KERAS_BACKEND=jax` trains under JAX (the fused loop). `--torch-reference DIR` (a
checkout of github.com/coetaur0/ESIM, the folder holding `esim/`) with `--torch-python` (an environment
with PyTorch; the zoo never depends on it) also trains the reference's `ESIM` on the very batches the
zoo's pipeline made for the first size (Adam at 0.0004, cross-entropy, gradients clipped to norm 10,
dropout 0.5, every word vector trained; each batch cut to its longest sentences and packed by the
reference), with a word-vector table of the run's size, on the same threads, `--runs` times. `--profile`
traces the second epoch with the TensorFlow profiler and prints the ops' time by op type and part.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(SCRIPTS)
sys.path.insert(0, ROOT)
sys.path.insert(0, SCRIPTS)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import machine  # noqa: E402  (scripts/machine.py: standard library only at import)

# TensorFlow and the zoo are imported inside `measure` and the helpers it calls, not here: the parent
# process never loads TensorFlow, and each measuring process sets its thread pools before anything runs.

RESULT_MARK = "RESULT "


# Data, through the library's loaders ---------------------------------------------------------------------
def training_examples(source, roles=None):
    """The training pairs of `source` as the library reads them (a single file's pairs, which play the test
    role, when it has no training split)."""
    from zoo.data.corpora import load_corpus

    splits, report = load_corpus(source, roles=roles)
    name = report["roles"].get("train") or report["roles"].get("test") or next(iter(splits))
    examples = [e for e in splits[name] if e.get("label") is not None]
    if not examples:
        raise SystemExit(f"benchmark_training.py: {source}: no labelled pairs in split {name!r}")
    return examples


def write_folder(examples, pairs, eval_pairs, folder):
    """A throwaway NLI folder: `pairs` training pairs (the examples repeated in order), and the first
    `eval_pairs` as dev and test."""
    from zoo import fileio
    from zoo.data import LABELS

    def record(e):
        return json.dumps({"sentence1": e["premise"], "sentence2": e["hypothesis"], "gold_label": LABELS[e["label"]],
                           "sentence1_binary_parse": e.get("premise_binary_parse", ""),
                           "sentence2_binary_parse": e.get("hypothesis_binary_parse", "")})

    os.makedirs(folder, exist_ok=True)
    train = [examples[i % len(examples)] for i in range(pairs)]
    for name, rows in (("train", train), ("dev", examples[:eval_pairs]), ("test", examples[:eval_pairs])):
        with fileio.atomic_write(os.path.join(folder, f"{name}.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(record(e) + "\n" for e in rows))
    return folder


# The clock: a callback after the run's own (`train(..., callbacks=[clock])`) ------------------------------
LOOPS = ("auto", "packed", "fused", "keras")  # --loop: the models' `lstm_loop` (zoo.layers.loop_choice)


def make_clock(loop="auto", profile_epoch=None):
    import keras

    class StepClock(keras.callbacks.Callback):
        """Wall times (time.perf_counter) of every step, validation pass and epoch end of `fit`; called after
        the run's own callbacks, so an epoch's end includes what they do. `loop` is asked of the model as a
        user asks it (`model.lstm_loop`), before the first step traces the training function."""

        def __init__(self):
            super().__init__()
            self.epochs, self.current, self.profiling, self.train_end = [], None, False, None

        def on_train_begin(self, logs=None):
            self.train_begin = time.perf_counter()
            self.model.lstm_loop = loop

        def on_epoch_begin(self, epoch, logs=None):
            if profile_epoch is not None and epoch == profile_epoch:
                import tf_profile

                tf_profile.start()
                self.profiling = True
            self.current = {"begin": time.perf_counter(), "steps": []}

        def on_train_batch_begin(self, batch, logs=None):
            self.step_begin = time.perf_counter()
            self.current.setdefault("steps_cpu_begin", time.process_time())

        def on_train_batch_end(self, batch, logs=None):
            self.current["steps"].append((self.step_begin, time.perf_counter()))
            self.current["steps_cpu_end"] = time.process_time()

        def on_test_begin(self, logs=None):
            if self.current is not None:
                self.current["test_begin"] = time.perf_counter()

        def on_test_end(self, logs=None):
            if self.current is not None:
                self.current["test_end"] = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):  # the run's callbacks come first: their work is in the epoch
            self.current["end"] = time.perf_counter()
            if self.profiling:
                import tf_profile

                self.profile = tf_profile.stop()
                self.profiling = False
            self.epochs.append(self.current)
            self.current = None

        def on_train_end(self, logs=None):  # after the run's own on_train_end (the last epoch's images)
            self.train_end = time.perf_counter()

    return StepClock()


def epoch_figures(clock):
    """Per epoch: steps, steps span, median and max step, validation, the epoch's end after validation (the
    run's callbacks), span to the next epoch's start (or to the end of training for the last)."""
    out = []
    for i, epoch in enumerate(clock.epochs):
        steps = epoch["steps"]
        durations = [end - begin for begin, end in steps]
        following = clock.epochs[i + 1]["begin"] if i + 1 < len(clock.epochs) else epoch["end"]
        out.append({"steps": len(steps), "steps_s": steps[-1][1] - steps[0][0],
                    "median_step_ms": 1e3 * statistics.median(durations), "max_step_ms": 1e3 * max(durations),
                    # CPU seconds of every thread over the steps: on a shared machine, the work whatever the wait
                    "steps_cpu_s": epoch["steps_cpu_end"] - epoch["steps_cpu_begin"],
                    "validation_s": epoch.get("test_end", 0) - epoch.get("test_begin", 0),
                    "after_steps_s": epoch["end"] - steps[-1][1], "epoch_s": following - epoch["begin"],
                    "callbacks_s": epoch["end"] - epoch.get("test_end", steps[-1][1]),
                    "end_since_fit_s": epoch["end"] - clock.train_begin})
    return {"epochs": out, "fit_tail_s": clock.train_end - clock.epochs[-1]["end"],
            "fit_s": clock.train_end - clock.train_begin}


# One measurement, in its own process ---------------------------------------------------------------------
def measure(args):
    """Trains `args.one` through `zoo.training.train` on `args.size` pairs; returns its figures."""
    if args.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras
    import numpy as np

    import zoo.training
    from zoo.data import pipeline

    if args.autotune:  # the trainer's pipeline with tf.data's autotuner back on (later options win)
        import tensorflow as tf

        without = pipeline.with_input_options

        def with_autotune(ds):
            options = tf.data.Options()
            options.autotune.enabled = True
            return without(ds).with_options(options)

        pipeline.with_input_options = with_autotune
    work = tempfile.mkdtemp(prefix="nli_zoo_bench_train_")
    folder = write_folder(training_examples(args.data, args.roles), args.size, args.eval_pairs,
                          os.path.join(work, "data"))
    clock = make_clock(args.loop, profile_epoch=1 if args.profile else None)
    overrides = {k: v for k, v in (("hidden_size", args.hidden_size), ("batch_size", args.batch_size)) if v}
    options = {} if args.images_every is None else {"images_every": args.images_every}
    result = zoo.training.train(model=args.one, data_dir=folder, embeddings="none",
                                embedding_dim=args.embedding_dim, epochs=1 + args.epochs, overrides=overrides,
                                run_dir=os.path.join(work, "run"), overwrite=True, jit_compile=args.jit_compile,
                                compile_cache=args.compile_cache, verbose=0, seed=0, callbacks=[clock], **options)
    figures = epoch_figures(clock)
    steady = figures["epochs"][1:] or figures["epochs"]
    record = result.record
    figures.update(model=args.one, pairs=args.size, threads=args.threads or "all", autotune=args.autotune,
                   loop=args.loop, backend=keras.backend.backend(), images_every=record.options["images_every"],
                   vocabulary_size=record.vocabulary_size,
                   hidden_size=record.settings.model.get("hidden_size"), batch_size=record.settings.train.batch_size,
                   embedding_dim=record.embedding_dim,
                   steps_s=statistics.mean(e["steps_s"] for e in steady),
                   steps_cpu_s=statistics.mean(e["steps_cpu_s"] for e in steady),
                   epoch_s=statistics.mean(e["epoch_s"] for e in steady),
                   first_epoch_s=figures["epochs"][0]["epoch_s"])
    tokenizer, data = result.tokenizer, record.settings.data
    from zoo.training.inputs import load_splits

    splits, _ = load_splits(folder)
    lengths = np.asarray([(len(tokenizer.tokenize(e["premise"])[:data.max_premise_length or None]),
                           len(tokenizer.tokenize(e["hypothesis"])[:data.max_hypothesis_length or None]))
                          for e in splits["train"]])
    figures["mean_tokens"] = lengths.mean(axis=0).tolist()
    if args.one == "esim":  # 3x the forward pass: the backward pass is two products per product
        for key, folded in (("train_flops_per_pair", True), ("reference_train_flops_per_pair", False)):
            figures[key] = 3 * float(np.mean([machine.esim_flops(p, h, figures["hidden_size"], figures["embedding_dim"],
                                                                 folded) for p, h in lengths]))
    if args.profile:
        figures["profile"] = summarize_profile(*clock.profile)
    if args.torch_batches:
        write_batches(splits["train"], result.vocab, tokenizer, record.settings, 1 + args.epochs,
                      args.torch_batches)
    return figures


def write_batches(examples, vocab, tokenizer, settings, epochs, path):
    """Every batch of `epochs` epochs of the run's own pipeline (`zoo.runs.datasets.make_model_batches`, as the
    trainer makes it), for the PyTorch child: ids, labels, weights, epoch."""
    import numpy as np

    from zoo import fileio
    from zoo.runs.datasets import make_model_batches

    dataset = make_model_batches(examples, vocab, tokenizer, settings, shuffle=True, seed=0)
    arrays, count = {}, 0
    for epoch in range(epochs):
        for features, labels, weights in dataset.as_numpy_iterator():
            arrays.update({f"{count}_premise": features["premise"], f"{count}_hypothesis": features["hypothesis"],
                           f"{count}_labels": labels, f"{count}_weights": weights, f"{count}_epoch": np.int32(epoch)})
            count += 1
    with fileio.atomic_path(path) as tmp:
        np.savez(tmp, count=np.int32(count), **arrays)


def summarize_profile(wall, ops):
    """Op time of the profiled epoch by op type and by part of the model (gradients and loops apart)."""
    import collections

    by_type, by_part = collections.Counter(), collections.Counter()
    for path, op_type, seconds in ops:
        parts = [part for part in path.split("/") if part and not part.startswith(
            ("StatefulPartitionedCall", "PartitionedCall", "while", "body", "_"))]
        part = "/".join(parts[:3 if parts and parts[0] == "gradient_tape" else 2]).rstrip("_0123456789")
        by_type[op_type] += seconds
        by_part[part + (" (loop)" if "/while/" in path else "")] += seconds
    return {"wall_s": wall, "busy_s": sum(by_type.values()), "by_type": dict(by_type.most_common(15)),
            "by_part": dict(by_part.most_common(20))}


def print_profile(name, result):
    profile = result["profile"]
    print(f"{name}: second epoch of {result['pairs']} pairs under the profiler: ops busy {profile['busy_s']:.2f} s "
          f"of {profile['wall_s']:.2f} s")
    for title in ("by_type", "by_part"):
        print(f"  {title.replace('_', ' ')}:")
        for key, seconds in profile[title].items():
            print(f"    {key:<64} {1e3 * seconds:9.1f} ms  {100 * seconds / profile['busy_s']:5.1f}%")


# The PyTorch reference ---------------------------------------------------------------------------------
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
print("RESULT " + json.dumps({"first_epoch_s": times[0], "steady_epoch_s": steady, "pairs_per_s": pairs / steady,
                              "steady_epoch_cpu_s": steady_cpu,
                              "peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                              "threads": spec["threads"] or "all", "torch": torch.__version__}), flush=True)
'''


def torch_runs(args, zoo_run, batches_file):
    """Trains the PyTorch reference ESIM on the batches the zoo's pipeline made, `--runs` times."""
    spec = {"reference": os.path.abspath(args.torch_reference), "batches": batches_file, "threads": args.threads,
            "vocabulary": zoo_run["vocabulary_size"], "embedding_dim": zoo_run["embedding_dim"],
            "hidden_size": zoo_run["hidden_size"]}
    results = []
    for run in range(args.runs):
        done = subprocess.run([args.torch_python, "-c", TORCH_CHILD, json.dumps(spec)], capture_output=True, text=True)
        result = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
        if done.returncode or not result:
            print(f"PyTorch reference: run {run + 1} failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
            break
        results.append(json.loads(result[0][len(RESULT_MARK):]))
        print(f"PyTorch reference ESIM run {run + 1}: steady epoch {results[-1]['steady_epoch_s']:.2f} s "
              f"({results[-1]['pairs_per_s']:,.1f} pairs/s; CPU {results[-1]['steady_epoch_cpu_s']:.2f} s), "
              f"torch {results[-1]['torch']}", flush=True)
    return results


# Reporting -------------------------------------------------------------------------------------------
def per_pair(runs_by_size):
    """`{key: (seconds per pair, fixed seconds)}` of the steps span and of the whole epoch, from the median
    steady epoch of the smallest and the largest size."""
    sizes = sorted(runs_by_size)
    if len(sizes) < 2:
        return {}
    n1, n2 = sizes[0], sizes[-1]
    out = {}
    for key in ("steps_s", "epoch_s"):
        t1 = statistics.median(r[key] for r in runs_by_size[n1])
        t2 = statistics.median(r[key] for r in runs_by_size[n2])
        slope = (t2 - t1) / (n2 - n1)
        out[key] = {"pairs_per_s": 1 / slope if slope > 0 else float("inf"), "fixed_s": t1 - n1 * slope}
    return out


def gemm_share(run, pairs_per_s, info, key="train_flops_per_pair"):
    """The share of this machine's measured GEMM peak (at the run's threads) that `pairs_per_s` uses, at the
    FLOPs per pair under `key` (the zoo's; `reference_train_flops_per_pair`: the reference's, F unfolded)."""
    peak = machine.peak_for(info, run["threads"] if run["threads"] != "all" else None)
    if not peak or key not in run:
        return None
    return pairs_per_s * run[key] / (peak * 1e9)


def report(rows, references, info):
    cell = lambda values, fmt: (f"{fmt.format(statistics.median(values))}" + (
        f" ({fmt.format(min(values))}-{fmt.format(max(values))})" if len(values) > 1 else ""))
    print(f"\nmachine: {machine.cpu_label(info)}; peak fp32 GEMM (TensorFlow MatMul): " + ", ".join(
        f"{t} thread(s) {p:.0f} GFLOP/s" for t, p in info.get("peak_gflops", {}).items()))
    print("| model | pairs | threads | autotune | steps s | epoch s | median / max step ms | fit tail s | "
          "steps pairs/s | epoch pairs/s | % GEMM peak (steps) | runs |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, size), runs in rows.items():
        first = runs[0]
        steps = [r["pairs"] / r["steps_s"] for r in runs]
        share = gemm_share(first, statistics.median(steps), info)
        print(f"| `{name}` | {size:,} | {first['threads']} | {'on' if first['autotune'] else 'off'} | "
              f"{cell([r['steps_s'] for r in runs], '{:.2f}')} | {cell([r['epoch_s'] for r in runs], '{:.2f}')} | "
              f"{statistics.median(e['median_step_ms'] for r in runs for e in r['epochs'][1:] or r['epochs']):.0f} / "
              f"{max(e['max_step_ms'] for r in runs for e in r['epochs'][1:] or r['epochs']):.0f} | "
              f"{cell([r['fit_tail_s'] for r in runs], '{:.2f}')} | {cell(steps, '{:.1f}')} | "
              f"{cell([r['pairs'] / r['epoch_s'] for r in runs], '{:.1f}')} | "
              f"{'-' if share is None else f'{100 * share:.1f}%'} | {len(runs)} |")
    for name in dict.fromkeys(n for n, _ in rows):
        fit = per_pair({size: runs for (n, size), runs in rows.items() if n == name})
        for key, title in (("steps_s", "training steps"), ("epoch_s", "whole epoch")):
            if key in fit:
                print(f"{name}: {title}: {fit[key]['pairs_per_s']:,.1f} pairs/s per extra pair, fixed part "
                      f"{fit[key]['fixed_s']:+.2f} s an epoch (two sizes)")
    for name, reference in references.items():
        if reference:
            theirs = [m["pairs_per_s"] for m in reference]
            size = min(s for n, s in rows if n == name)
            ours = [r["pairs"] / r["steps_s"] for r in rows[(name, size)]]
            epoch = [r["pairs"] / r["epoch_s"] for r in rows[(name, size)]]
            share = gemm_share(rows[(name, size)][0], statistics.median(theirs), info, "reference_train_flops_per_pair")
            print(f"{name}, {size:,} pairs: PyTorch reference {cell(theirs, '{:.1f}')} pairs/s"
                  + ("" if share is None else f" ({100 * share:.1f}% of GEMM peak)")
                  + f"; zoo / reference: steps {statistics.median(ours) / statistics.median(theirs):.2f}x, "
                  f"whole epoch {statistics.median(epoch) / statistics.median(theirs):.2f}x")
            their_cpu = [m["steady_epoch_cpu_s"] for m in reference if "steady_epoch_cpu_s" in m]
            if their_cpu:  # CPU time: the work whatever the wait, on a machine shared with other jobs
                our_cpu = statistics.median(r["steps_cpu_s"] for r in rows[(name, size)])
                print(f"{name}, {size:,} pairs: CPU seconds of a steady epoch's steps: zoo {our_cpu:.2f}, reference "
                      f"{statistics.median(their_cpu):.2f} ({statistics.median(their_cpu) / our_cpu:.2f}x)")


def shapes_only(args):
    """Prints the batch shapes and padding of the data under each distinct length grid of the presets."""
    import numpy as np

    import zoo
    from zoo.data.batching import plan_batches
    from zoo.data.tokenizer import Tokenizer
    from zoo.runs.datasets import length_grid

    examples = training_examples(args.data, args.roles)
    seen = set()
    print(f"{len(examples):,} pairs from {args.data}")
    for name in args.models:
        data = zoo.get_preset(name).data
        key = (data.max_premise_length, data.max_hypothesis_length, data.lowercase)
        if key in seen:
            continue
        seen.add(key)
        tokenizer, grid = Tokenizer(lowercase=data.lowercase), length_grid(data)
        lp = np.asarray([max(1, min(len(tokenizer.tokenize(e["premise"])), key[0] or 10 ** 9)) for e in examples])
        lh = np.asarray([max(1, min(len(tokenizer.tokenize(e["hypothesis"])), key[1] or 10 ** 9)) for e in examples])
        size = args.batch_size or zoo.get_preset(name).train.batch_size
        batches = plan_batches(lp, lh, grid, size, shuffle=True)
        padded = sum(size * (s[0] + s[1]) for _, s in batches)
        print(f"max lengths {key[:2]}: {grid}: {len({s for _, s in batches})} shapes in {len(batches)} batches; "
              f"real tokens {float((lp.sum() + lh.sum()) / padded):.1%} of padded positions")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["esim"], help="registered names (default: esim)")
    parser.add_argument("--data", default="snli_sample",
                        help="what `nli-zoo train --data` takes (default: the shipped SNLI rows, snli_sample)")
    parser.add_argument("--roles", default=None, help="as `nli-zoo train --roles` (which split is train)")
    parser.add_argument("--pairs", type=int, nargs="+", default=[1024, 2048],
                        help="training pairs an epoch, one measurement each (default: 1024 2048)")
    parser.add_argument("--eval-pairs", type=int, default=32, help="dev and test pairs of the run (default 32)")
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs after the first (default 2)")
    parser.add_argument("--runs", type=int, default=1, help="fresh processes per size (default 1)")
    parser.add_argument("--threads", type=int, default=0, help="TensorFlow threads of each process (default: all)")
    parser.add_argument("--autotune", action="store_true", help="turn tf.data's autotuner back on (before/after)")
    parser.add_argument("--loop", choices=LOOPS, default="auto",
                        help="the bi-LSTMs' loop, asked of the model as a user asks it (`model.lstm_loop`): auto "
                             "(what nli-zoo train runs: packed under TensorFlow on a CPU, fused under JAX), packed, "
                             "fused (every padded position, the loop before packing) or keras (Keras's own loops)")
    parser.add_argument("--keras-loops", dest="loop", action="store_const", const="keras",
                        help="the same as --loop keras")
    parser.add_argument("--images-every", type=int, default=None,
                        help="as `nli-zoo train --images-every` (default: the trainer's, 5)")
    parser.add_argument("--hidden-size", type=int, default=None, help="override the preset's hidden size")
    parser.add_argument("--batch-size", type=int, default=None, help="override the preset's batch size")
    parser.add_argument("--embedding-dim", type=int, default=300, help="random word vectors' size (default 300)")
    parser.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"))
    parser.add_argument("--compile-cache", default=None, help="as `nli-zoo train --compile-cache`")
    parser.add_argument("--gemm-seconds", type=float, default=1.0,
                        help="seconds per shape of the GEMM peak measurement (0: skip it)")
    parser.add_argument("--torch-reference", default=None, help="a checkout of github.com/coetaur0/ESIM (ESIM only)")
    parser.add_argument("--torch-python", default=None, help="the python of an environment with PyTorch")
    parser.add_argument("--profile", action="store_true", help="TensorFlow profile of the second epoch")
    parser.add_argument("--shapes-only", action="store_true", help="only print batch shapes and padding")
    parser.add_argument("--json", help="also write every figure to this JSON file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model, print JSON
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--torch-batches", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torch_reference and not args.torch_python:
        parser.error("--torch-reference needs --torch-python")
    if args.one:
        print(RESULT_MARK + json.dumps(measure(args)), flush=True)
        return 0
    if args.shapes_only:
        shapes_only(args)
        return 0
    info = machine.describe(args.gemm_seconds, sorted({1, args.threads or machine.cpu()["cores"]}))
    print("\n".join(machine.lines(info)), flush=True)
    rows, references, work = {}, {}, tempfile.mkdtemp(prefix="nli_zoo_bench_")
    for name in args.models:
        for size in args.pairs:
            rows[(name, size)] = []
            for run in range(args.runs):
                batches = (os.path.join(work, f"{name}_batches.npz")
                           if args.torch_reference and name == "esim" and run == 0 and size == args.pairs[0] else None)
                command = [sys.executable, os.path.abspath(__file__), "--one", name, "--size", str(size),
                           "--data", args.data, "--eval-pairs", str(args.eval_pairs), "--epochs", str(args.epochs),
                           "--embedding-dim", str(args.embedding_dim), "--jit-compile", args.jit_compile]
                command += ["--loop", args.loop]
                if args.images_every is not None:  # 0 (never) too
                    command += ["--images-every", str(args.images_every)]
                command += [flag for flag, on in (("--autotune", args.autotune),
                                                  ("--profile", args.profile)) if on]
                for option, value in (("--roles", args.roles), ("--threads", args.threads),
                                      ("--hidden-size", args.hidden_size), ("--batch-size", args.batch_size),
                                      ("--compile-cache", args.compile_cache), ("--torch-batches", batches)):
                    if value:
                        command += [option, str(value)]
                done = subprocess.run(command, capture_output=True, text=True)
                result = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
                if done.returncode or not result:
                    print(f"{name} ({size} pairs): run {run + 1} failed:\n{(done.stderr or done.stdout)[-3000:]}",
                          file=sys.stderr, flush=True)
                    break
                m = json.loads(result[0][len(RESULT_MARK):])
                rows[(name, size)].append(m)
                print(f"{name}, {size:,} pairs, run {run + 1}: first epoch {m['first_epoch_s']:.1f} s; steady: steps "
                      f"{m['steps_s']:.2f} s ({m['pairs'] / m['steps_s']:,.1f} pairs/s; CPU {m['steps_cpu_s']:.2f} s), "
                      f"epoch {m['epoch_s']:.2f} s; "
                      f"training ended {m['fit_tail_s']:.2f} s after the last epoch's end; epochs end at "
                      + ", ".join(f"{e['end_since_fit_s']:.2f}" for e in m["epochs"]) + " s after fit began",
                      flush=True)
                steady = m["epochs"][1:] or m["epochs"]
                print(f"  a steady epoch's end: validation {statistics.mean(e['validation_s'] for e in steady):.2f} s, "
                      f"then the run's callbacks {statistics.mean(e['callbacks_s'] for e in steady):.2f} s "
                      f"(checkpoints, backup, TensorBoard; images every {m['images_every']} epoch(s) and after "
                      f"the last); backend {m['backend']}, loop {m['loop']}", flush=True)
                if args.profile:
                    print_profile(name, m)
                if batches:
                    references[name] = torch_runs(args, m, batches)
            if not rows[(name, size)]:
                del rows[(name, size)]
    if rows:
        report(rows, references, info)
    if args.json:
        from zoo.fileio import write_json

        write_json(args.json, {"machine": info, "results": [{"model": n, "pairs": s, "runs": r}
                                                            for (n, s), r in rows.items()],
                               "per_pair": {n: per_pair({s: r for (m, s), r in rows.items() if m == n})
                                            for n in dict.fromkeys(n for n, _ in rows)},
                               "torch_reference": references})
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
