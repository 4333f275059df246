"""ESIM specifics (Chen et al. 2017): alignment both ways, enhancement, pooling over real words only,
the parameter count at the paper's size (the harness in test_models.py covers the rest)."""

import keras
import numpy as np
import pytest

import zoo
from tests.support import models as tc
from zoo.layers.alignment import (dot_scores, enhance_folded, fold_enhanced_kernel, folded_dense,
                                  mean_max_pool, soft_align)


def test_pooling_ignores_padding_and_guards_empty_sentences():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], bool)
    garbage = values.copy()
    garbage[~mask] = 1e6                                      # padding rows hold anything
    pooled = np.asarray(mean_max_pool(garbage, mask))
    np.testing.assert_allclose(pooled[0, :4], values[0, :3].mean(0), rtol=1e-5)
    np.testing.assert_allclose(pooled[0, 4:], values[0, :3].max(0), rtol=1e-5)
    np.testing.assert_allclose(pooled[1, 4:], values[1].max(0), rtol=1e-5)
    np.testing.assert_array_equal(pooled[2], 0.0)


def test_soft_alignment_matches_equations_11_to_13():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 4, 3)).astype("float32")
    b = rng.normal(size=(2, 3, 3)).astype("float32")
    a_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    b_mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    a_tilde, b_tilde, w_a, w_b = (np.asarray(t) for t in soft_align(dot_scores(a, b), a, b, a_mask, b_mask))
    la, lb = 3, 2                                             # the first pair's real lengths
    e = a[0, :la] @ b[0, :lb].T                               # (11)
    ref_a = np.exp(e) / np.exp(e).sum(1, keepdims=True)       # (12)
    ref_b = (np.exp(e) / np.exp(e).sum(0, keepdims=True)).T   # (13)
    np.testing.assert_allclose(w_a[0, :la, :lb], ref_a, rtol=1e-5)
    np.testing.assert_allclose(w_b[0, :lb, :la], ref_b, rtol=1e-5)
    np.testing.assert_allclose(a_tilde[0, :la], ref_a @ b[0, :lb], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b_tilde[0, :lb], ref_b @ a[0, :la], rtol=1e-5, atol=1e-6)
    assert np.all(w_a[0, la:] == 0) and np.all(w_a[0, :, lb:] == 0)
    assert np.all(w_b[0, lb:] == 0) and np.all(w_b[0, :, la:] == 0)
    m = np.asarray(enhance_folded(a, a_tilde))                # (14) without ā − ã: [ā; ã; ā ⊙ ã]
    np.testing.assert_allclose(m[..., :3], a, rtol=1e-6)
    np.testing.assert_allclose(m[..., 6:], a * a_tilde, rtol=1e-6)


@pytest.mark.parametrize("extra", [0, 1, 5])
def test_folded_projection_equals_the_dense_layer_on_the_papers_m(extra):
    """F(m) with m = [x̄; x̃; x̄ − x̃; x̄ ⊙ x̃; r] (Eq. 14-15, r: a variant's further features) equals F's
    folded kernel on m' = [x̄; x̃; x̄ ⊙ x̃; r]: the same Dense weights, the same outputs."""
    rng = np.random.default_rng(2)
    width = 4
    bar, tilde = (rng.normal(size=(2, 3, width)).astype("float32") for _ in range(2))
    rest = rng.normal(size=(2, 3, extra)).astype("float32")
    layer = keras.layers.Dense(6, activation="relu", bias_initializer="random_normal")
    layer.build((None, None, 4 * width + extra))
    m = np.concatenate([bar, tilde, bar - tilde, bar * tilde, rest], axis=-1)
    m_folded = np.concatenate([np.asarray(enhance_folded(bar, tilde)), rest], axis=-1)
    assert m_folded.shape[-1] == 3 * width + extra
    expected = np.asarray(layer(m))
    assert (expected > 0).any() and (expected == 0).any()      # both sides of the ReLU are exercised
    np.testing.assert_allclose(np.asarray(folded_dense(layer, width)(m_folded)), expected, rtol=1e-5, atol=1e-6)
    kernel = np.asarray(layer.kernel)
    folded = np.asarray(fold_enhanced_kernel(kernel, width))
    np.testing.assert_allclose(folded[:width], kernel[:width] + kernel[2 * width:3 * width], rtol=1e-6)
    np.testing.assert_allclose(folded[width:2 * width], kernel[width:2 * width] - kernel[2 * width:3 * width],
                               rtol=1e-6)
    np.testing.assert_array_equal(folded[2 * width:], kernel[3 * width:])


def test_explain_gives_both_directions():
    model = tc.make_model("esim")
    batch = tc.random_pairs(batch=3)
    out = {k: np.asarray(v) for k, v in model.explain(batch).items()}
    assert out["attention"].shape == (3, 5, 7) and out["attention_reverse"].shape == (3, 7, 5)


def test_parameter_count_at_paper_size():
    """Table 1: 4.3M for 600D ESIM (BiLSTMs of 300 per direction, F 300, one 300-d tanh layer)."""
    model = zoo.create_model("esim", vocabulary_size=10, embedding_dim=300)
    assert model.count_params_without_embeddings() == 4_326_303
    preset = zoo.get_preset("esim")
    assert preset.train.learning_rate == 4e-4 and preset.train.batch_size == 32
    assert preset.data.oov == "chen"
