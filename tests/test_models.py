"""Behaviour every registered model must show (timm-style: parametrised over the whole registry).

Every registered name goes through the per-model harness (`tests.support.models.check_model`: one tiny
instance, every cheap check) in the fast tier; the expensive paths (overfitting, XLA, JAX) run once per
model class, on its most demanding preset (`tests.support.models.EXPENSIVE`), in the large tier."""

import numpy as np
import pytest

import zoo
from tests.support import models as tc
from tests.support.jax_checks import jax_report

MODELS = zoo.list_models()
EXPENSIVE = tc.expensive_models()


@pytest.mark.large
def test_every_model_class_runs_under_jax(tmp_path_factory):
    """The most demanding preset of every model class jitted and trained one step on the JAX backend, in the
    session's one JAX subprocess (tests/support/jax_checks.py, shared with tests/test_serialization.py and
    tests/test_recurrent.py)."""
    result = jax_report(tmp_path_factory)
    assert result["returncode"] == 0 and result["report"], result["stderr"]
    report = {name: r for name, r in result["report"].items() if name in MODELS}
    assert sorted(report) == sorted(EXPENSIVE)
    for name, r in report.items():
        # the outputs are the loaded model's compiled explain() run with this model's weights: the same function
        assert r["same_graph"], f"{name}: the loaded model's jaxpr is not the original's, so its outputs say nothing"
        assert r["finite"] and np.isfinite(r["loss"]), (name, r)
        assert not r["unchanged"], f"{name}: one JAX training step left weights unchanged: {r}"


def test_every_model_class_has_one_expensive_preset():
    """`EXPENSIVE` names one registered model of each model class: a new class adds its line there."""
    classes = tc.model_classes()
    assert sorted(tc.EXPENSIVE) == sorted(classes), "add the new model class to tests/support/models.py's EXPENSIVE"
    for cls, name in tc.EXPENSIVE.items():
        assert name in classes[cls], (cls, name, classes[cls])


@pytest.mark.parametrize("name", MODELS)
def test_every_model_passes_the_harness(name):
    tc.check_model(name)


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


@pytest.mark.large
@pytest.mark.parametrize("name", EXPENSIVE)
def test_overfits_64_pairs(name):
    pairs = tc.random_pairs(batch=64, seed=1)
    labels = np.random.default_rng(1).integers(0, 3, 64)
    assert tc.overfit_accuracy(name, pairs, labels) >= 0.95


@pytest.mark.large
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


def test_unknown_constructor_argument_is_an_error():
    with pytest.raises(ValueError, match="unknown argument"):
        zoo.create_model("rocktaschel_wbw", vocabulary_size=10, hidden_sise=5)
    with pytest.raises(ValueError, match="unknown model"):
        zoo.create_model("rocktaschel_wbv", vocabulary_size=10)


def test_list_models_pattern():
    assert zoo.list_models("rocktaschel_wbw*") == ["rocktaschel_wbw", "rocktaschel_wbw_two_way"]
    assert "bowman_lstm" in zoo.list_models()
