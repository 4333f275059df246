"""Behaviour every registered model must show (timm-style: parametrised over the whole registry)."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.support import models as tc

MODELS = zoo.list_models()
ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=None)
def built(name):
    """`tc.make_model(name)`, built once per process for the tests below that only run it (no training, no
    weight set): padding, attention rows, empty sentences, the config round trip (its clone is apart)."""
    return tc.make_model(name)


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
    model = tc.make_model(name, dropout=0.0) if "dropout" in zoo.get_preset(name)["model"] else tc.make_model(name)
    batch = tc.random_pairs(batch=8)
    labels = np.arange(8) % 3
    with tf.GradientTape() as tape:
        logits = model(batch, training=True)
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
    grads = tape.gradient(loss, model.trainable_weights)
    assert np.isfinite(loss.numpy())
    for weight, grad in zip(model.trainable_weights, grads):
        assert grad is not None, f"{weight.path} gets no gradient"
        grad = tf.convert_to_tensor(grad)
        assert np.all(np.isfinite(grad.numpy())), f"{weight.path} has a non-finite gradient"
        assert np.any(grad.numpy() != 0), f"{weight.path} has an all-zero gradient"


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


JAX_SCRIPT = """
import json
import numpy as np
import keras
assert keras.backend.backend() == "jax", keras.backend.backend()
import sys
import jax
import zoo
from tests.support import models as tc
report = {}
for name in sys.argv[1:]:
    # build() creates every weight without a forward pass (tests/test_serialization.py checks it); explain()
    # runs jitted, as Keras's own predict and fit run under JAX: an eager first call compiles every op apart,
    # at twice to four times the cost (the eager path: tests/test_recurrent.py's JAX step of esim)
    # tc.shallow: the tree models' level loops cover the batch's at most 7 words, not the presets' 48 levels
    model = tc.make_unbuilt_model(name, **tc.shallow(name))
    model.build()
    batch = tc.random_pairs(batch=4)

    def explain(values, batch):
        with keras.StatelessScope(state_mapping=list(zip(model.variables, values))):
            return model.explain(batch)

    outputs = jax.jit(explain)([v.value for v in model.variables], batch)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [np.array(v) for v in model.trainable_variables]
    loss = float(model.train_on_batch(batch, np.arange(4) % 3))
    # Adam moves every weight whose gradient is non-zero; a weight without gradient stays bit-identical.
    report[name] = {"loss": loss,
                    "finite": bool(all(np.all(np.isfinite(np.asarray(v))) for v in outputs.values())),
                    "unchanged": [v.path for b, v in zip(before, model.trainable_variables)
                                  if np.array_equal(b, np.array(v))]}
print("JAX_REPORT " + json.dumps(report))
"""


JAX_CHUNKS = 1  # one process for every model (the file runs on one xdist worker: pytest.ini, --dist loadfile)


@pytest.mark.parametrize("chunk", range(JAX_CHUNKS))
def test_every_model_runs_under_jax(chunk):
    names = MODELS[chunk::JAX_CHUNKS]
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", JAX_SCRIPT, *names], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("JAX_REPORT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    report = json.loads(lines[-1][len("JAX_REPORT "):])
    assert sorted(report) == sorted(names)
    for name, r in report.items():
        assert r["finite"] and np.isfinite(r["loss"]), (name, r)
        assert not r["unchanged"], f"{name}: one JAX training step left weights unchanged: {r}"
