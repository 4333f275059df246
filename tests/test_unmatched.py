"""Luo, Roman, Tamkin's unmatchedness u = 1 / (ℓ · ||w||²) (Eq. 12-14): properties over random cases."""

import numpy as np
import tensorflow as tf

from tests.support import models as tc
from zoo.layers.alignment import unmatchedness
from zoo.layers.masking import masked_softmax


def _random_case(rng, batch=8, rows=6, cols=7, scale=5.0):
    scores = rng.normal(scale=scale, size=(batch, rows, cols)).astype("float32")
    row_len = rng.integers(1, rows + 1, batch)
    col_len = rng.integers(1, cols + 1, batch)
    row_mask = np.arange(rows)[None] < row_len[:, None]
    col_mask = np.arange(cols)[None] < col_len[:, None]
    weights = np.asarray(masked_softmax(scores, row_mask[:, :, None] & col_mask[:, None, :]))
    return weights, row_mask, col_mask, col_len


def test_u_lies_between_one_over_length_and_one():
    rng = np.random.default_rng(0)
    for scale in (0.1, 1.0, 5.0, 50.0):                       # near uniform ... near one-hot
        for _ in range(25):
            weights, row_mask, col_mask, col_len = _random_case(rng, scale=scale)
            u = np.asarray(unmatchedness(weights, row_mask, col_mask))
            low = np.broadcast_to(1.0 / col_len[:, None], u.shape)
            assert np.all(u[row_mask] >= low[row_mask] * (1 - 1e-5))
            assert np.all(u[row_mask] <= 1 + 1e-5)
            assert np.all(u[~row_mask] == 0)


def test_u_is_one_for_uniform_and_one_over_length_for_one_hot():
    col_mask = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], bool)
    row_mask = np.ones((2, 3), bool)
    uniform = (col_mask / col_mask.sum(1, keepdims=True))[:, None, :].repeat(3, 1).astype("float32")
    np.testing.assert_allclose(np.asarray(unmatchedness(uniform, row_mask, col_mask)), 1.0, rtol=1e-6)
    one_hot = np.zeros((2, 3, 5), "float32")
    one_hot[:, :, 0] = 1.0
    u = np.asarray(unmatchedness(one_hot, row_mask, col_mask))
    np.testing.assert_allclose(u, [[0.25] * 3, [0.5] * 3], rtol=1e-6)


def test_empty_other_sentence_and_gradients_are_finite():
    weights = tf.Variable(np.zeros((1, 2, 3), "float32"))
    with tf.GradientTape() as tape:
        u = unmatchedness(weights, np.array([[True, False]]), np.zeros((1, 3), bool))
        total = tf.reduce_sum(u)
    np.testing.assert_array_equal(np.asarray(u), [[1.0, 0.0]])  # nothing to match: fully unmatched
    assert np.all(np.isfinite(tape.gradient(total, weights).numpy()))


def test_luo_models_explain_unmatchedness():
    batch = tc.random_pairs(batch=4)
    for name in ("luo_matrix", "luo_unmatched_append", "luo_unmatched_heuristics"):
        out = {k: np.asarray(v) for k, v in tc.make_model(name).explain(batch).items()}
        assert out["unmatchedness_a"].shape == batch["premise"].shape
        assert out["unmatchedness_b"].shape == batch["hypothesis"].shape
        assert np.all(out["unmatchedness_a"][batch["premise"] == 0] == 0)
        lh = (batch["hypothesis"] != 0).sum(1)
        real = batch["premise"] != 0
        assert np.all(out["unmatchedness_a"][real] >= np.broadcast_to(1.0 / lh[:, None], real.shape)[real] - 1e-5)
