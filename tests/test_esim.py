"""ESIM specifics (Chen et al. 2017): alignment both ways, enhancement, pooling over real words only,
the parameter count at the paper's size (the harness in test_models.py covers the rest)."""

import numpy as np

import zoo
from tests.support import models as tc
from zoo.layers.alignment import dot_scores, enhance, mean_max_pool, soft_align


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
    m = np.asarray(enhance(a, a_tilde))                       # (14): [ā; ã; ā − ã; ā ⊙ ã]
    np.testing.assert_allclose(m[..., 6:9], a - a_tilde, rtol=1e-6)
    np.testing.assert_allclose(m[..., 9:], a * a_tilde, rtol=1e-6)


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
    assert preset["train"]["learning_rate"] == 4e-4 and preset["train"]["batch_size"] == 32
    assert preset["data"]["oov"] == "chen"
