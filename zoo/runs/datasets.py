"""A run's data as its model reads it: the preset's length grid, tf.data pipeline and evaluation order.

Training (`zoo.training`) and scoring a run (`zoo.runs.evaluation`) build their batches here, so a run is
evaluated on exactly the inputs it was trained on.
"""

import numpy as np


def tokenize_sentences(tokenizer, examples):
    """The tokens of every premise, then of every hypothesis: one list per sentence (`2N` lists).

    Word-vector windows (Wang & Jiang's ±4 words) and the vocabulary read sentences, never pairs.
    """
    texts = [e["premise"] for e in examples] + [e["hypothesis"] for e in examples]
    batch = getattr(tokenizer, "tokenize_batch", None)
    return batch(texts) if batch is not None else [tokenizer.tokenize(t) for t in texts]


def length_grid(preset):
    """The `LengthGrid` of a preset's maximum lengths (the batch shapes of its runs)."""
    from zoo.data.batching import LengthGrid

    data = preset["data"]
    return LengthGrid.for_max_lengths(data["max_premise_length"], data["max_hypothesis_length"])


def make_dataset(examples, vocab, tokenizer, preset, batch_size=None, shuffle=False, seed=0, bucket=True,
                 shape_log=None, report_trees=None):
    """The shape-stable tf.data pipeline of one split for the preset's model.

    A model with `trees="syntactic"` also gets each pair's parse trees (`zoo.data.trees`); a sentence
    without a usable parse (none in tfds SNLI, malformed, or deeper than the model's `max_depth`) gets
    a complete binary tree, and the count is printed with the name `report_trees`.

    Returns:
        a dataset of `(features, labels, weights)` (see `zoo.data.pipeline.make_dataset`).
    """
    from zoo.data.pipeline import make_dataset as make_pipeline

    data = preset["data"]
    common = dict(vocab=vocab, tokenizer=tokenizer, batch_size=batch_size or preset["train"]["batch_size"],
                  max_premise_length=data["max_premise_length"], max_hypothesis_length=data["max_hypothesis_length"],
                  bucket=bucket, shuffle=shuffle, seed=seed, grid=length_grid(preset), shape_log=shape_log)
    if preset["model"].get("trees") != "syntactic":
        return make_pipeline(examples, **common)
    from zoo.data.trees import make_tree_dataset

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
