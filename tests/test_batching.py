"""Shape-stable batches: a bounded number of batch shapes whatever the data size, filler rows that
count in nothing, and the tf.data pipeline agreeing with its numpy twin."""

import re

import keras
import numpy as np
import pytest

from tests.support.models import make_model, random_pairs
from zoo.data.batching import EMPTY_ROW, LengthGrid, fill_batch, plan_batches
from zoo.data.snli import load_snli
from zoo.training.losses import NLILoss


def sample_lengths():
    """Token counts of the shipped SNLI rows' sentences (leaves of their binary parses)."""
    splits, _ = load_snli("snli_sample")
    examples = [e for split in splits.values() for e in split]
    leaves = lambda parse: len(re.findall(r"[^\s()]+", parse))  # noqa: E731
    return (np.asarray([leaves(e["premise_binary_parse"]) for e in examples]),
            np.asarray([leaves(e["hypothesis_binary_parse"]) for e in examples]))


def test_grid_cells_and_padding():
    grid = LengthGrid.for_max_lengths(100, 100)
    assert grid.premise_boundaries == (14, 22, 36, 100) and grid.hypothesis_boundaries == (10, 20, 100)
    assert grid.num_cells == len(grid.shapes) == 12
    p, h = grid.padded_lengths([1, 14, 15, 99], [10, 11, 21, 3])
    assert p.tolist() == [14, 14, 22, 100] and h.tolist() == [10, 20, 100, 10]
    assert grid.cells([14, 15], [10, 11]).tolist() == [0, 4]
    # Boundaries above the maximum length disappear; no maximum leaves the last bucket open.
    assert LengthGrid.for_max_lengths(30, 12).shapes == [(14, 10), (14, 12), (22, 10), (22, 12), (30, 10), (30, 12)]
    open_grid = LengthGrid.for_max_lengths(None, 5)
    assert open_grid.premise_boundaries == (14, 22, 36, None)
    assert open_grid.padded_lengths([40], [5])[0].tolist() == [40]
    with pytest.raises(ValueError, match="increasing"):
        LengthGrid((10, 5), (3,))


def test_shapes_stay_bounded_on_550k_snli_like_pairs():
    premise, hypothesis = sample_lengths()
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(premise), 550_000)  # SNLI's training size with the sample's lengths
    grid = LengthGrid.for_max_lengths(100, 100)
    for bucket in (True, False):
        batches = plan_batches(premise[pick], hypothesis[pick], grid, 32, shuffle=True, seed=1, bucket=bucket)
        shapes = {shape for _, shape in batches}
        assert len(shapes) <= 12 and shapes <= set(grid.shapes)
        assert sum(len(i) for i, _ in batches) == 550_000
    # Bucketed batches are full but for at most one per cell.
    batches = plan_batches(premise[pick], hypothesis[pick], grid, 32, shuffle=True, seed=1)
    assert sum(len(i) < 32 for i, _ in batches) <= 12


def test_fill_batch_weights_the_filler_rows_zero():
    indices, weights = fill_batch([7, 3, 5], 5)
    assert indices.tolist() == [7, 3, 5, EMPTY_ROW, EMPTY_ROW] and weights.tolist() == [1, 1, 1, 0, 0]


def test_pipeline_gives_the_planned_shapes():
    from zoo.data.pipeline import ShapeLog, make_dataset
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    splits, _ = load_snli("snli_sample")
    examples = splits["train"]
    tokenizer = Tokenizer()
    tokens = tokenizer.tokenize_batch([e["premise"] for e in examples] + [e["hypothesis"] for e in examples])
    vocab = Vocabulary.build(tokens)
    lengths = np.asarray([len(t) for t in tokens])
    grid = LengthGrid.for_max_lengths(100, 100)
    planned = {shape for _, shape in plan_batches(lengths[:len(examples)], lengths[len(examples):], grid, 32)}
    log = ShapeLog()
    ds = make_dataset(examples, vocab, tokenizer, 32, shuffle=True, max_premise_length=100,
                      max_hypothesis_length=100, shape_log=log)
    rows = sum(int(w.numpy().sum()) for _, _, w in ds)
    assert rows == len(examples)
    assert {(p, h) for _, p, h in log.shapes} == planned and {b for b, _, _ in log.shapes} == {32}
    assert log.describe().startswith(f"{len(planned)} shape(s): 32x14/10")


@pytest.mark.parametrize("filler", ["empty", "copies"])
def test_filler_rows_count_in_no_loss_gradient_or_metric(filler):
    """Weighted 0, filler rows change no loss, gradient or metric, whether they are the pipeline's empty
    sentences or copies of a real pair."""
    model = make_model("rocktaschel_wbw")
    batch = random_pairs(batch=5, seed=3)
    labels = np.asarray([0, 1, 2, 1, 0], "int32")
    indices, weights = fill_batch(np.arange(3), 5)
    rows = np.where(indices == EMPTY_ROW, 0, indices)                       # "copies": the first pair again
    filled = {k: v[rows] if filler == "copies" else np.where(weights[:, None] > 0, v[rows], 0)
              for k, v in batch.items()}
    short = {k: v[:3] for k, v in batch.items()}
    loss = NLILoss(l2=1e-3, weights=[w for w in model.trainable_weights if len(w.shape) > 1])

    def value_and_grads(inputs, y, w=None):
        import tensorflow as tf

        with tf.GradientTape() as tape:
            value = loss(y, model(inputs, training=False), sample_weight=w)
        return float(value), tape.gradient(value, model.trainable_weights)

    full_value, full_grads = value_and_grads(filled, labels[rows], weights)
    short_value, short_grads = value_and_grads(short, labels[:3])
    assert full_value == pytest.approx(short_value, rel=1e-6)
    for a, b in zip(full_grads, short_grads):
        if a is not None:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    # Without the weights, the filler rows would change the loss.
    assert float(loss(labels[rows], model(filled))) != pytest.approx(short_value, rel=1e-4)
    metric = keras.metrics.SparseCategoricalAccuracy()
    metric.update_state(labels[rows], model(filled), sample_weight=weights)
    short_metric = keras.metrics.SparseCategoricalAccuracy()
    short_metric.update_state(labels[:3], model(short))
    assert float(metric.result()) == float(short_metric.result())
