"""`nli-zoo tune`'s measurement: the candidate few-rows loops timed on the machine at hand, on the path users run.

A model of the registry with bi-LSTMs (ESIM by default) at its preset size, random weights, a 2,000-word
vocabulary, is traced once per candidate as the serving graph traces it (`zoo.export.saved_model.build_archive`:
`tf.function(model.explain)` inside the endpoint's function, token ids `[B, L]` of open shapes), each trace
under its loop (`zoo.layers.recurrent.few_rows_loop`, read while tracing):

- at one pair (2 rows): `"steps"` and `"kernel"`, the two designs of `zoo.layers.tensorflow_lstm`;
- at two pairs (4 rows), unless `kernel_rows=False`: the few-rows loop in each design (`KERNEL_ROWS` 4) and the
  packed loop (`KERNEL_ROWS` 2, the default), which decides whether two pairs take the few-rows loop too.

Each round calls every candidate on the same random pairs (premises of 6-23 words, hypotheses of 4-11, as
SNLI's), one warm-up call first; a round's figure is the median milliseconds per call, and the candidates take
turns in alternating order from round to round (so that a drift of the machine does not favour one). Each
candidate's figure is the median over the rounds (with the min and max). The design is the default ("steps")
unless the other is faster at one pair by `TUNE_MARGIN` (5%) or more; the kernel rows are 4 where the chosen
design's few-rows loop beats the packed loop at two pairs by that margin, else 2: a difference inside the
rounds' noise keeps the default.
"""

import datetime
import logging
import statistics
import time

import numpy as np
import tensorflow as tf

from zoo.export.loop_tuning import RECORD_FORMAT
from zoo.fileio.cpu import cpu, machine_id, software
from zoo.layers.loop_choice import (
    DEFAULT_DESIGN,
    DESIGNS,
    KERNEL_ROWS,
    TUNE_CALLS,
    TUNE_MARGIN,
    TUNE_MODEL,
    TUNE_ROUNDS,
)

logger = logging.getLogger(__name__)

VOCABULARY = 2_000
PREMISE_WORDS, HYPOTHESIS_WORDS = (6, 24), (4, 12)  # [low, high) words a sentence, as SNLI's
TWO_PAIR_ROWS = 4       # the kernel rows that let two pairs take the few-rows loop
PACKED = "packed x2"


def candidates(kernel_rows=True):
    """`[(name, pairs, design, kernel rows)]`: each design at one pair; with `kernel_rows`, each design's few-rows
    loop and the packed loop at two pairs."""
    out = [(design, 1, design, KERNEL_ROWS) for design in DESIGNS]
    if kernel_rows:
        out += [(f"{design} x2", 2, design, TWO_PAIR_ROWS) for design in DESIGNS]
        out += [(PACKED, 2, None, KERNEL_ROWS)]  # the packed loop: no design
    return out


def build_model(model_name, seed=0, **overrides):
    """`model_name` at its preset size (with `overrides` of model settings) with random weights; ValueError where
    it runs no bi-LSTM (nothing to tune) or reads parse trees (the timed inputs are token ids alone)."""
    import keras

    from zoo.layers.recurrent import BidirectionalLSTM
    from zoo.layers.traversal import iter_layers
    from zoo.registry import create_model

    keras.utils.set_random_seed(seed)
    model = create_model(model_name, vocabulary_size=VOCABULARY, **overrides)
    if not any(isinstance(layer, BidirectionalLSTM) for layer in iter_layers(model)):
        raise ValueError(f"{model_name} has no bi-LSTM, so the few-rows loop never runs in it: tune a model that "
                         "has one (esim, the default)")
    if model.reads_parse_trees:
        raise ValueError(f"{model_name} reads parse trees: tune a model that reads token ids alone (esim, the "
                         "default)")
    return model


def random_batches(pairs, count, seed=0):
    """`count` batches of `pairs` random pairs: `{"premise", "hypothesis"}` int32 ids, right-padded with 0."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        batch = {}
        for key, (low, high) in (("premise", PREMISE_WORDS), ("hypothesis", HYPOTHESIS_WORDS)):
            lengths = rng.integers(low, high, pairs)
            ids = np.zeros((pairs, lengths.max()), "int32")
            for row, length in enumerate(lengths):
                ids[row, :length] = rng.integers(3, VOCABULARY, length)
            batch[key] = tf.constant(ids)
        batches.append(batch)
    return batches


def traced(model, design, kernel_rows):
    """The probabilities of `model` on token ids, as the serving graph runs them, traced under the loop."""
    from zoo.layers.recurrent import few_rows_loop

    explain = tf.function(model.explain, autograph=False)  # its own: a trace keeps the loop it was traced under
    spec = {key: tf.TensorSpec([None, None], tf.int32) for key in ("premise", "hypothesis")}
    function = tf.function(lambda inputs: explain(inputs)["probabilities"], input_signature=[spec], autograph=False)
    with few_rows_loop(design, kernel_rows):
        function.get_concrete_function()
    return function


def time_round(function, batches):
    """The median milliseconds per call of `function` over `batches` (one warm-up call first)."""
    function(batches[0]).numpy()
    times = []
    for batch in batches:
        start = time.perf_counter()
        function(batch).numpy()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def measure(model, rounds=TUNE_ROUNDS, calls=TUNE_CALLS, kernel_rows=True, seed=0):
    """`{candidate: {"pairs", "design", "kernel_rows", "median_ms", "min_ms", "max_ms", "rounds", "round_ms"}}`
    of `model` (the module's docstring)."""
    chosen = candidates(kernel_rows)
    functions, data = {}, {}
    for name, pairs, design, rows in chosen:
        logger.info(f"tracing {name}")
        functions[name] = traced(model, design, rows)
        data.setdefault(pairs, random_batches(pairs, calls, seed + pairs))
    figures = {name: [] for name, *_ in chosen}
    for round_ in range(rounds):
        order = chosen if round_ % 2 == 0 else chosen[::-1]
        for name, pairs, *_ in order:
            figures[name].append(time_round(functions[name], data[pairs]))
        logger.info(f"round {round_ + 1}/{rounds}: " + ", ".join(f"{name} {figures[name][-1]:.2f} ms"
                                                                        for name, *_ in chosen))
    return {name: {"pairs": pairs, "design": design, "loop": "few-rows" if design else "packed", "kernel_rows": rows,
                   "median_ms": statistics.median(figures[name]), "min_ms": min(figures[name]),
                   "max_ms": max(figures[name]), "rounds": len(figures[name]), "round_ms": figures[name]}
            for name, pairs, design, rows in chosen}


def faster(candidate, default):
    """Whether `candidate`'s median is faster than `default`'s by at least `TUNE_MARGIN`."""
    return candidate["median_ms"] <= (1 - TUNE_MARGIN) * default["median_ms"]


def choose(results):
    """`{"design", "kernel_rows"}` from `measure`'s results (the module's docstring): the default design unless
    another is `TUNE_MARGIN` faster at one pair; two pairs take the few-rows loop only where it is `TUNE_MARGIN`
    faster than the packed loop."""
    design = DEFAULT_DESIGN
    best = min(DESIGNS, key=lambda d: results[d]["median_ms"])
    if faster(results[best], results[DEFAULT_DESIGN]):
        design = best
    rows = KERNEL_ROWS
    two_pairs = results.get(f"{design} x2")
    if two_pairs and PACKED in results and faster(two_pairs, results[PACKED]):
        rows = TWO_PAIR_ROWS
    return {"design": design, "kernel_rows": rows}


def tune_record(model_name=TUNE_MODEL, rounds=TUNE_ROUNDS, calls=TUNE_CALLS, kernel_rows=True, seed=0,
                **overrides):
    """Times the candidates on `model_name` (`measure`) and returns this machine's tuning record: the machine
    (id, CPU, TensorFlow's thread layout), the choice, each candidate's figures, the model and its settings
    timed, the date and the software's versions (`zoo.export.loop_tuning.write_record` writes it)."""
    from zoo.quiet import describe_thread_layout

    started = datetime.datetime.now().astimezone()
    model = build_model(model_name, seed, **overrides)
    results = measure(model, rounds, calls, kernel_rows, seed)
    facts = cpu()
    settings = {key: value for key, value in model.get_config().items()
                if key in ("hidden_size", "embedding_dim") or key in overrides}
    return {"format": RECORD_FORMAT, "date": started.isoformat(timespec="seconds"),
            "machine": {"id": machine_id(facts), "cpu": facts,
                        "threads": {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                                    "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
                                    "layout": describe_thread_layout(tf)}},
            "choice": choose(results), "candidates": results,
            "model": {"name": model_name, "settings": settings, "vocabulary": VOCABULARY},
            "calls_per_round": calls, "software": software(("tensorflow", "keras", "nli-zoo"))}


def table(record):
    """The record as printable lines: one per candidate (median, min, max ms), then the choice."""
    lines = [f"{'candidate':<12} {'pairs':>5} {'median ms':>10} {'min ms':>8} {'max ms':>8}"]
    for name, figures in record["candidates"].items():
        lines.append(f"{name:<12} {figures['pairs']:>5} {figures['median_ms']:>10.2f} {figures['min_ms']:>8.2f} "
                     f"{figures['max_ms']:>8.2f}")
    choice = record["choice"]
    lines.append(f"chosen: {choice['design']}, kernel rows {choice['kernel_rows']} (one pair is 2 rows)")
    return lines
