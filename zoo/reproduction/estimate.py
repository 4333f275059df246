"""`nli-zoo reproduce --dry-run`: what a reproduction would train, each run's state, and the time of an epoch
on this machine, estimated from a few timed training steps.

For each unit (a model with its row's settings) the estimate reads the data and word vectors as training
does (`zoo.training.inputs`), builds and compiles the model as training does (`zoo.training.model`),
counts the batches of an epoch from the training pairs' lengths (`zoo.data.batching.count_batches`, as the
pipeline does) and times `steps` training steps (`train_on_batch`) on batches of a random sample of the
training pairs, after one untimed pass over the same batches (each batch shape is traced there). An
epoch is estimated as the mean step time times the batches of an epoch: validation, checkpoints and the
other callbacks are not counted, nor the first epoch's tracing.
"""

import logging
import os
import platform
import statistics
import tempfile
import time

import numpy as np

from zoo.reproduction.plan import SWEEPS_DIR
from zoo.runs import layout
from zoo.runs.record import load_record
from zoo.runs.results import read_results

logger = logging.getLogger(__name__)

DEFAULT_STEPS = 10


def run_state(run_dir, epochs=None):
    """`"finished"`, `"trains further from N to M epochs"`, `"resumes after epoch N"` or `"new"`: what the real
    command does with the run when it asks for `epochs` (a finished run that trained all its epochs and is
    asked for more trains on, as `zoo.runs.layout.prepare_run_dir` decides)."""
    if os.path.exists(os.path.join(run_dir, layout.RESULTS_FILE)):
        trained = load_record(run_dir).settings.train.epochs
        results = read_results(run_dir)
        ran = len(results.history) if results is not None else 0
        if epochs is not None and epochs > trained and ran >= trained:
            return f"finished at {trained} epoch(s): trains further to {epochs}"
        return "finished"
    history = layout.read_json(os.path.join(run_dir, layout.HISTORY_FILE)) or {}
    epochs = len(history.get("epochs") or [])
    return f"resumes after epoch {epochs}" if epochs else "new"


def machine():
    """This machine in a few words: the CPU's model name and the GPUs TensorFlow sees."""
    import tensorflow as tf

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            names = [line.split(":", 1)[1].strip() for line in file if line.startswith("model name")]
        cpu = f"{names[0]} ({len(names)} logical CPUs)" if names else cpu
    except OSError:
        pass
    gpus = tf.config.list_physical_devices("GPU")
    return cpu + (f", {len(gpus)} GPU(s) visible to TensorFlow" if gpus else ", no GPU")


def estimate(spec, directory, steps=DEFAULT_STEPS):
    """The plan of a reproduction with a time per epoch for each unit.

    Returns:
        `{"machine", "units": [{"unit", "model", "runs": [[seed, run_dir, state]], "batch_size",
        "batches_per_epoch", "epochs", "timed_steps", "step_seconds_mean", "step_seconds_median",
        "epoch_seconds"}]}`.
    """
    import keras

    from zoo.training.config import RunConfig

    sweep_dir = os.path.join(directory, SWEEPS_DIR, "dry-run")
    units, splits_cache, tokens_cache = [], {}, {}
    for unit in spec.units:
        runs = []
        for seed in spec.seeds:
            run_dir = spec.train_options({"unit": unit.name}, seed, sweep_dir)["run_dir"]
            runs.append([seed, run_dir, None])
        config = RunConfig.create(**spec.train_options({"unit": unit.name}, spec.seeds[0], sweep_dir))
        for run in runs:
            run[2] = run_state(run[1], config.train.epochs)
        logger.info(f"{unit.name}: timing {steps} training steps")
        entry = {"unit": unit.name, "model": unit.model, "runs": runs, "batch_size": config.train.batch_size,
                 "epochs": config.train.epochs}
        entry.update(time_steps(config, steps, splits_cache, tokens_cache))
        keras.backend.clear_session()
        units.append(entry)
    return {"machine": machine(), "units": units, "steps": steps}


def time_steps(config, steps, splits_cache, tokens_cache):
    """`{"batches_per_epoch", "timed_steps", "step_seconds_mean", "step_seconds_median", "epoch_seconds"}`."""
    import keras
    import tensorflow as tf

    from zoo.data.batching import count_batches
    from zoo.data.tokenizer import Tokenizer
    from zoo.runs.datasets import length_grid, make_model_batches
    from zoo.training import inputs
    from zoo.training.model import build_model

    key = (config.source, config.max_train_examples, config.max_eval_examples, config.fields, config.labels,
           config.roles)
    if key not in splits_cache:
        splits_cache[key] = inputs.load_splits(config.source, config.max_train_examples, config.max_eval_examples,
                                               fields=config.fields, labels=config.labels, roles=config.roles)[0]
    splits = splits_cache[key]
    tokenizer = Tokenizer(lowercase=config.data.lowercase)
    if (key, config.data.lowercase) not in tokens_cache:
        tokens_cache[(key, config.data.lowercase)] = inputs.tokenize_splits(tokenizer, splits)
    tokens = tokens_cache[(key, config.data.lowercase)]
    with tempfile.TemporaryDirectory() as scratch:  # vocab.txt is written there, not in a run directory
        vocab, embeddings, _ = inputs.vocabulary_and_vectors(config.embeddings, config.data, scratch, False,
                                                             tokenizer, splits, seed=config.seed, tokens=tokens,
                                                             random_dim=config.random_vectors_dim)
    keras.utils.set_random_seed(config.seed)
    model = build_model(config.model, config.settings, len(vocab), embeddings, tf.distribute.get_strategy(),
                        jit_compile=config.jit)
    train, data = splits["train"], config.data
    sentences = tokens["train"]
    premise = [len(t) for t in sentences[:len(train)]]
    hypothesis = [len(t) for t in sentences[len(train):]]
    if data.max_premise_length:
        premise = np.minimum(premise, data.max_premise_length)
    if data.max_hypothesis_length:
        hypothesis = np.minimum(hypothesis, data.max_hypothesis_length)
    batch_size = config.train.batch_size
    batches = count_batches(premise, hypothesis, length_grid(data), batch_size, bucket=config.bucket)
    chosen = np.random.default_rng(config.seed).choice(len(train), min(len(train), batch_size * steps), replace=False)
    dataset = make_model_batches([train[i] for i in sorted(chosen)], vocab, tokenizer, config.settings, shuffle=True,
                                 seed=config.seed, bucket=config.bucket)
    sample = list(dataset.take(steps))
    for features, labels, weights in sample:  # traces each batch shape once
        model.train_on_batch(features, labels, sample_weight=weights)
    seconds = []
    for features, labels, weights in sample:
        started = time.perf_counter()
        model.train_on_batch(features, labels, sample_weight=weights)
        seconds.append(time.perf_counter() - started)
    mean = statistics.fmean(seconds)
    return {"batches_per_epoch": batches, "timed_steps": len(seconds), "step_seconds_mean": mean,
            "step_seconds_median": statistics.median(seconds), "epoch_seconds": mean * batches}


def describe(plan, ensembles=()):
    """The dry run's lines: the machine, each unit's runs and its estimated epoch, the ensembles."""
    lines = [f"on {plan['machine']}: each epoch estimated from {plan['steps']} timed training steps "
             "(validation and callbacks not counted)"]
    for unit in plan["units"]:
        lines.append(f"  {unit['unit']}: {unit['batches_per_epoch']:,} batches of {unit['batch_size']} per epoch x "
                     f"{unit['step_seconds_mean'] * 1000:.0f} ms (median {unit['step_seconds_median'] * 1000:.0f} ms) "
                     f"= about {_duration(unit['epoch_seconds'])} per epoch; at most {unit['epochs']} epoch(s)")
        for seed, run_dir, state in unit["runs"]:
            lines.append(f"    seed {seed}: {run_dir} ({state})")
    for row, members in ensembles:
        lines.append(f"  row {row}: combined from {' and '.join(members)} of each seed (evaluated, not trained)")
    return lines


def _duration(seconds):
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
