"""The measuring process of scripts/benchmark_training.py: one training run through `zoo.training.train`
(the function behind `nli-zoo train`) in a fresh process, its thread pools set before anything runs, timed
by a callback after the run's own; and the data it trains on, read by the library's loaders.

    python scripts/training_child.py SPEC      # SPEC: the JSON of benchmark_training.child_spec

The result is one line of `zoo.measurements.child`.
"""

import json
import os
import statistics
import sys
import tempfile
import time
from types import SimpleNamespace

from zoo.measurements import child as protocol
from zoo.measurements.machine import esim_flops

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# TensorFlow and the zoo's training are imported inside `measure` and the helpers it calls, not here: the
# benchmark's own process never loads TensorFlow, and each measuring process sets its pools first.


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
LOOPS = ("auto", "packed", "fused", "keras")


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


# One measurement ------------------------------------------------------------------------------------------
def measure(args):
    """Trains `args.one` through `zoo.training.train` on `args.size` pairs; returns its figures (`args`: the
    benchmark's spec, `benchmark_training.child_spec`)."""
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
            figures[key] = 3 * float(np.mean([esim_flops(p, h, figures["hidden_size"], figures["embedding_dim"],
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


def main(argv=None):
    spec = json.loads((argv or sys.argv[1:])[0])
    protocol.emit(measure(SimpleNamespace(**spec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
