"""A run's data as its model reads it: the preset's length grid, tf.data pipeline and evaluation order.

Training (`zoo.training`) and scoring a run (`zoo.runs.evaluation`) build their batches here, so a run is
evaluated on exactly the inputs it was trained on.
"""

import sys
import time

import numpy as np

# Sentences from which tokenizing says what it does and how far it got (SNLI's 550k pairs take ~25 s).
PROGRESS_FROM = 100_000
PROGRESS_CHUNK = 100_000


def tokenize_sentences(tokenizer, examples, what=None):
    """The tokens of every premise, then of every hypothesis: one list per sentence (`2N` lists).

    Word-vector windows (Wang & Jiang's ±4 words) and the vocabulary read sentences, never pairs. From
    `PROGRESS_FROM` sentences on, a line says what is being tokenized and how far it got (every
    `PROGRESS_CHUNK` sentences: one line each when stdout is not a terminal, one updated line when it is).

    Args:
        tokenizer: the run's `Tokenizer`.
        examples: the pairs.
        what: the name of the split in the progress line (e.g. `"train"`).
    """
    texts = [e["premise"] for e in examples] + [e["hypothesis"] for e in examples]
    batch = getattr(tokenizer, "tokenize_batch", None)
    tokenize = batch if batch is not None else (lambda chunk: [tokenizer.tokenize(t) for t in chunk])
    if len(texts) < PROGRESS_FROM:
        return tokenize(texts)
    tty = sys.stdout.isatty()
    started, tokens = time.time(), []
    for start in range(0, len(texts), PROGRESS_CHUNK):
        tokens += tokenize(texts[start:start + PROGRESS_CHUNK])
        line = (f"[data] tokenizing {what + ' ' if what else ''}sentences: {len(tokens):,} of {len(texts):,} "
                f"({time.time() - started:.0f} s)")
        print(("\r" + line) if tty else line, end="" if tty and len(tokens) < len(texts) else "\n", flush=True)
    return tokens


def length_grid(preset):
    """The `LengthGrid` of a preset's maximum lengths (the batch shapes of its runs)."""
    from zoo.data.batching import LengthGrid

    data = preset["data"]
    return LengthGrid.for_max_lengths(data["max_premise_length"], data["max_hypothesis_length"])


def make_dataset(examples, vocab, tokenizer, preset, batch_size=None, shuffle=False, seed=0, bucket=True,
                 shape_log=None, report_trees=None, epoch=None):
    """The shape-stable tf.data pipeline of one split for the preset's model.

    A model with `trees="syntactic"` also gets each pair's parse trees (`zoo.data.trees`); a sentence
    without a usable parse (none in tfds SNLI, malformed, or deeper than the model's `max_depth`) gets
    a complete binary tree, and the count is printed with the name `report_trees`.

    `epoch` (a `tf.Variable` the training loop sets at each epoch's start) makes the shuffle order a
    function of `(seed, epoch)`, so that a resumed run sees the data in the uninterrupted run's order.
    The dataset's cardinality is the number of batches of an epoch (progress bars show a total).

    Returns:
        a dataset of `(features, labels, weights)` (see `zoo.data.pipeline.make_dataset`).
    """
    from zoo.data.pipeline import make_dataset as make_pipeline

    data = preset["data"]
    common = dict(vocab=vocab, tokenizer=tokenizer, batch_size=batch_size or preset["train"]["batch_size"],
                  max_premise_length=data["max_premise_length"], max_hypothesis_length=data["max_hypothesis_length"],
                  bucket=bucket, shuffle=shuffle, seed=seed, grid=length_grid(preset), shape_log=shape_log,
                  epoch=epoch)
    started = time.time()
    if len(examples) * 2 >= PROGRESS_FROM:
        print(f"[data] encoding {report_trees + ' ' if report_trees else ''}pairs for tf.data ({len(examples):,}: "
              "tokenize, look up ids, count the batches)", flush=True)
    if preset["model"].get("trees") != "syntactic":
        dataset = make_pipeline(examples, **common)
        if len(examples) * 2 >= PROGRESS_FROM:
            print(f"[data] encoded in {time.time() - started:.0f} s: {int(dataset.cardinality()):,} batches",
                  flush=True)
        return dataset
    from zoo.data.tree_pipeline import make_tree_dataset

    report = {}
    dataset = make_tree_dataset(examples, trees="syntactic", on_error="complete",
                                max_depth=preset["model"].get("max_depth"), report=report, **common)
    print(f"[trees] {report_trees or 'data'}: binary parses, {report['fallback_complete']} sentence(s) without "
          f"a usable parse use complete trees; deepest tree {report['max_level']} level(s)", flush=True)
    return dataset


def by_shape(examples, tokenizer, preset):
    """An order of `examples` that groups pairs of one grid cell (so in-order batches are bucketed).

    Evaluation batches pairs in this order and puts predictions back with its inverse, so results stay
    in the examples' order (per-genre breakdowns, prediction files) without bucketing's reordering.
    """
    if not examples:
        return np.zeros(0, np.int64)
    data = preset["data"]
    tokens = tokenize_sentences(tokenizer, examples)
    n = len(examples)
    lp = np.asarray([len(t) for t in tokens[:n]])
    lh = np.asarray([len(t) for t in tokens[n:]])
    if data.get("max_premise_length") is not None:
        lp = np.minimum(lp, data["max_premise_length"])
    if data.get("max_hypothesis_length") is not None:
        lh = np.minimum(lh, data["max_hypothesis_length"])
    return np.argsort(length_grid(preset).cells(lp, lh), kind="stable")
