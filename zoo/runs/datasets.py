"""A run's data as its model reads it: the length grid of its settings, its tf.data batches
(`make_model_batches`), the evaluation order, and the counted notes on cut and empty sentences.

Training (`zoo.training`) and scoring a run (`zoo.runs.evaluation`) build their batches here, so a run is
evaluated on exactly the inputs it was trained on.
"""

import logging
import sys
import time

import numpy as np

from zoo.data.batching import LengthGrid
from zoo.data.pipeline import make_dataset
from zoo.data.tree_pipeline import make_tree_dataset

logger = logging.getLogger(__name__)
trees_logger = logger.getChild("trees")  # the binary parses' lines: `[trees]`

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
        line = (f"tokenizing {what + ' ' if what else ''}sentences: {len(tokens):,} of {len(texts):,} "
                f"({time.time() - started:.0f} s)")
        logger.info(line, extra={"start": "\r" if tty else "", "end": "" if tty and len(tokens) < len(texts) else "\n"})
    return tokens


def length_grid(data):
    """The `LengthGrid` of the run's maximum lengths (the batch shapes of its runs).

    Args:
        data: the run's `DataSettings`.
    """
    return LengthGrid.for_max_lengths(data.max_premise_length, data.max_hypothesis_length)


def length_notes(examples, tokenizer, data, what=None, tokens=None):
    """Counts the pairs the run's maximum lengths cut and the empty sentences (zero tokens) of one split, and
    prints them in one line when there are any: both are answered (a cut sentence by its first tokens, an
    empty one by the model's reading of padding only), so the count says how many answers that concerns.

    Args:
        examples: the pairs.
        tokenizer: the run's `Tokenizer`.
        data: the run's `DataSettings` (`max_premise_length`, `max_hypothesis_length`).
        what: the split's name in the printed line (None: nothing printed).
        tokens: the split's sentences already tokenized (`tokenize_sentences`: premises, then hypotheses).

    Returns:
        `{"pairs", "premises_cut", "hypotheses_cut", "empty_premises", "empty_hypotheses"}` and the maximum
        lengths (`max_premise_length`, `max_hypothesis_length`).
    """
    tokens = tokenize_sentences(tokenizer, examples) if tokens is None else tokens
    n = len(examples)
    premises, hypotheses = tokens[:n], tokens[n:]

    def cut(sentences, limit):
        return 0 if limit is None else sum(len(t) > limit for t in sentences)

    notes = {"pairs": n, "max_premise_length": data.max_premise_length,
             "max_hypothesis_length": data.max_hypothesis_length,
             "premises_cut": cut(premises, data.max_premise_length),
             "hypotheses_cut": cut(hypotheses, data.max_hypothesis_length),
             "empty_premises": sum(not t for t in premises), "empty_hypotheses": sum(not t for t in hypotheses)}
    if what is not None:
        line = describe_length_notes(notes)
        if line:
            logger.warning(f"{what}: {line}")
    return notes


def describe_length_notes(notes):
    """The counts of `length_notes` as one phrase ("" when nothing was cut and nothing is empty)."""
    parts = []
    for key, side, limit in (("premises_cut", "premise", "max_premise_length"),
                             ("hypotheses_cut", "hypothesis", "max_hypothesis_length")):
        if notes.get(key):
            parts.append(f"{notes[key]:,} {side}(s) cut to their first {notes[limit]} tokens")
    for key, side in (("empty_premises", "premise"), ("empty_hypotheses", "hypothesis")):
        if notes.get(key):
            parts.append(f"{notes[key]:,} empty {side}(s) (no tokens; answered all the same)")
    return (f"of {notes['pairs']:,} pairs, " + ", ".join(parts)) if parts else ""


def make_model_batches(examples, vocab, tokenizer, settings, batch_size=None, shuffle=False, seed=0, bucket=True,
                       shape_log=None, report_trees=None, epoch=None):
    """The shape-stable tf.data batches of one split as the run's model reads them (built on
    `zoo.data.pipeline.make_dataset`, with the run's lengths and grid, and the parse trees a tree model
    reads).

    A model with `trees="syntactic"` also gets each pair's parse trees (`zoo.data.trees`); a sentence
    without a usable parse (none in tfds SNLI, malformed, or deeper than the model's `max_depth`) gets
    a complete binary tree, and the count is printed with the name `report_trees`.

    `epoch` (a `tf.Variable` the training loop sets at each epoch's start) makes the shuffle order a
    function of `(seed, epoch)`, so that a resumed run sees the data in the uninterrupted run's order.
    The dataset's cardinality is the number of batches of an epoch (progress bars show a total).

    Args:
        settings: the run's `zoo.settings.RunSettings`.
        batch_size: pairs per batch (default: the run's `train.batch_size`).

    Returns:
        a dataset of `(features, labels, weights)` (see `zoo.data.pipeline.make_dataset`).
    """
    data = settings.data
    common = dict(vocab=vocab, tokenizer=tokenizer, batch_size=batch_size or settings.train.batch_size,
                  max_premise_length=data.max_premise_length, max_hypothesis_length=data.max_hypothesis_length,
                  bucket=bucket, shuffle=shuffle, seed=seed, grid=length_grid(data), shape_log=shape_log,
                  epoch=epoch)
    started = time.time()
    if len(examples) * 2 >= PROGRESS_FROM:
        logger.info(f"encoding {report_trees + ' ' if report_trees else ''}pairs for tf.data "
                    f"({len(examples):,}: tokenize, look up ids, count the batches)")
    if settings.trees != "syntactic":
        dataset = make_dataset(examples, **common)
        if len(examples) * 2 >= PROGRESS_FROM:
            logger.info(f"encoded in {time.time() - started:.0f} s: {int(dataset.cardinality()):,} batches")
        return dataset
    report = {}
    dataset = make_tree_dataset(examples, trees="syntactic", on_error="complete", max_depth=settings.max_depth,
                                report=report, **common)
    trees_logger.warning(f"{report_trees or 'data'}: binary parses, {report['fallback_complete']} sentence(s) "
                         f"without a usable parse use complete trees; deepest tree {report['max_level']} level(s)")
    return dataset


def by_shape(examples, tokenizer, data):
    """An order of `examples` that groups pairs of one grid cell (so in-order batches are bucketed).

    Evaluation batches pairs in this order and puts predictions back with its inverse, so results stay
    in the examples' order (per-genre breakdowns, prediction files) without bucketing's reordering.

    Args:
        data: the run's `DataSettings`.
    """
    if not examples:
        return np.zeros(0, np.int64)
    tokens = tokenize_sentences(tokenizer, examples)
    n = len(examples)
    lp = np.asarray([len(t) for t in tokens[:n]])
    lh = np.asarray([len(t) for t in tokens[n:]])
    if data.max_premise_length is not None:
        lp = np.minimum(lp, data.max_premise_length)
    if data.max_hypothesis_length is not None:
        lh = np.minimum(lh, data.max_hypothesis_length)
    return np.argsort(length_grid(data).cells(lp, lh), kind="stable")

