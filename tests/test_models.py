"""Behaviour every registered model must show (timm-style: parametrised over the whole registry)."""

import functools

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.support import models as tc
from tests.support.jax_checks import jax_report

MODELS = zoo.list_models()


@functools.lru_cache(maxsize=None)
def built(name):
    """`tc.make_model(name)`, built once per process for the tests below that only run it (no training, no
    weight set): padding, attention rows, empty sentences, the config round trip (its clone is apart)."""
    return tc.make_model(name)


def test_every_model_runs_under_jax(tmp_path_factory):
    """Every model jitted and trained one step on the JAX backend, in the session's one JAX subprocess
    (tests/support/jax_checks.py, shared with tests/test_serialization.py and tests/test_recurrent.py); first
    in this file, the first on its worker (conftest.py's LONGEST_FIRST), so the others find its report written."""
    result = jax_report(tmp_path_factory)
    assert result["returncode"] == 0 and result["report"], result["stderr"]
    report = {name: r for name, r in result["report"].items() if name in MODELS}
    assert sorted(report) == sorted(MODELS)
    for name, r in report.items():
        # the outputs are the loaded model's compiled explain() run with this model's weights: the same function
        assert r["same_graph"], f"{name}: the loaded model's jaxpr is not the original's, so its outputs say nothing"
        assert r["finite"] and np.isfinite(r["loss"]), (name, r)
        assert not r["unchanged"], f"{name}: one JAX training step left weights unchanged: {r}"


@pytest.mark.parametrize("name", MODELS)
def test_padding_never_changes_a_prediction(name):
    tc.check_padding_invariance(built(name), tc.random_pairs())


@pytest.mark.parametrize("name", MODELS)
def test_attention_rows_sum_to_one_over_real_tokens(name):
    model = built(name)
    batch = tc.random_pairs()
    returned = tuple(sorted(k for k in model.explain(batch) if k.startswith("attention")))
    assert returned == tuple(sorted(zoo.registry.get_spec(name).attention))
    assert tc.check_attention_rows(model, batch) == len(returned)


@pytest.mark.parametrize("name", MODELS)
def test_empty_sentences_give_finite_outputs(name):
    batch = tc.random_pairs(batch=3)
    batch["premise"][0] = 0
    batch["hypothesis"][1] = 0
    outputs = built(name).explain(batch)
    for value in outputs.values():
        assert np.all(np.isfinite(np.asarray(value)))


@pytest.mark.parametrize("name", MODELS)
def test_every_weight_gets_a_gradient(name):
    model = tc.make_model(name, dropout=0.0) if "dropout" in zoo.get_preset(name).model else tc.make_model(name)
    batch = tc.random_pairs(batch=8)
    # and two filler rows as the input pipeline makes them: empty sentences weighted 0, whose zero share of
    # the loss must stay a zero (finite) share of every gradient
    batch = {key: np.concatenate([value, np.zeros_like(value[:2])]) for key, value in batch.items()}
    labels, weights = np.arange(10) % 3, np.asarray([1.0] * 8 + [0.0] * 2, "float32")
    tc.perturb_zero_kernels(model)
    with tf.GradientTape() as tape:
        logits = model(batch, training=True)
        losses = tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        loss = tf.reduce_sum(weights * losses) / 8.0
    grads = tape.gradient(loss, model.trainable_weights)
    assert np.isfinite(loss.numpy())
    for weight, grad in zip(model.trainable_weights, grads):
        assert grad is not None, f"{weight.path} gets no gradient"
        grad = tf.convert_to_tensor(grad)
        assert np.all(np.isfinite(grad.numpy())), f"{weight.path} has a non-finite gradient"
        assert np.any(grad.numpy() != 0), f"{weight.path} has an all-zero gradient"


@pytest.mark.parametrize("name", ["rocktaschel_attention", "rocktaschel_wbw_two_way", "wang_jiang_wbw"])
def test_the_attention_models_start_as_conditional_encoding(name):
    # W^p starts at zero: h* = tanh(W^p r + W^x h_N) (Rocktäschel et al. Eq. 10, 14) is tanh(W^x h_N) at first,
    # so the premise's average r does not drown h_N and the loss leaves ln 3 in the first epoch
    model = tc.make_model(name)
    assert not np.any(np.asarray(model.attended_projection.kernel))
    assert np.any(np.asarray(model.last_projection.kernel))
    batch = tc.random_pairs(batch=4)
    logits = np.asarray(model(batch))
    shuffled = dict(batch, premise=batch["premise"][::-1])  # another premise, same hypothesis
    assert logits.shape == (4, 3) and np.all(np.isfinite(logits))
    if name == "wang_jiang_wbw":  # its hypothesis LSTM does not read the premise: h* ignores it at first
        np.testing.assert_allclose(np.asarray(model(shuffled)), logits, atol=1e-6)


@pytest.mark.parametrize("name", MODELS)
def test_overfits_64_pairs(name):
    pairs = tc.random_pairs(batch=64, seed=1)
    labels = np.random.default_rng(1).integers(0, 3, 64)
    assert tc.overfit_accuracy(name, pairs, labels) >= 0.95


@pytest.mark.parametrize("name", ["rocktaschel_wbw", "rocktaschel_attention_two_way", "mlstm", "esim"])
def test_trains_under_xla(name):
    import keras

    model = tc.make_model(name)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    batch = tc.random_pairs(batch=8)
    tc.build_training_state(model, batch, np.arange(8) % 3)  # one trace (and XLA compilation) per shape
    first = model.train_on_batch(batch, np.arange(8) % 3)
    for _ in range(3):
        last = model.train_on_batch(pad(batch), np.arange(8) % 3)
    assert np.isfinite(first) and np.isfinite(last)


def pad(batch):
    return tc.pad(batch, 2, 1)


@pytest.mark.parametrize("name", MODELS)
def test_config_round_trip(name):
    model = built(name)
    clone = type(model).from_config(model.get_config())
    clone.build_with_dummy_batch()
    clone.set_weights(model.get_weights())
    batch = tc.random_pairs()
    np.testing.assert_allclose(np.asarray(clone(batch)), np.asarray(model(batch)), atol=1e-6)


def test_unknown_constructor_argument_is_an_error():
    with pytest.raises(ValueError, match="unknown argument"):
        zoo.create_model("rocktaschel_wbw", vocabulary_size=10, hidden_sise=5)
    with pytest.raises(ValueError, match="unknown model"):
        zoo.create_model("rocktaschel_wbv", vocabulary_size=10)


def test_list_models_pattern():
    assert zoo.list_models("rocktaschel_wbw*") == ["rocktaschel_wbw", "rocktaschel_wbw_two_way"]
    assert "bowman_lstm" in zoo.list_models()
