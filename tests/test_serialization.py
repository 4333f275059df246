"""Keras-native models: registered under one package, built by `build()`, complete configs, `.keras` round trips.

Every registered model is saved with `model.save("x.keras")` and read back with `keras.models.load_model`
on the TensorFlow backend (in the per-model harness, `tests.support.models.check_model`, with its complete
configs and `build()`) and, for each model class's most demanding preset, in one subprocess on JAX; the
loaded model must give the same logits and `explain()` maps, and still train.
"""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import zoo
from tests.support import models as tc
from tests.support.jax_checks import jax_report
from tests.support.models import frozen_word_setup, word_tables
from zoo.models.base import NLIModel
from zoo.registry import KERAS_PACKAGE

MODELS = zoo.list_models()


def zoo_classes():
    """Every Keras layer or model class defined in `zoo.layers` and `zoo.models`."""
    import keras

    import zoo.layers
    import zoo.models

    found = []
    for package in (zoo.layers, zoo.models):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            found += [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                      if cls.__module__ == module.__name__ and issubclass(cls, keras.layers.Layer)]
    return found


def test_every_layer_and_model_is_registered_under_one_package():
    import keras

    classes = zoo_classes()
    assert NLIModel in classes and {zoo.registry.get_spec(name).model_class for name in MODELS} <= set(classes)
    for cls in classes:
        key = f"{KERAS_PACKAGE}>{cls.__name__}"
        assert keras.saving.get_registered_name(cls) == key, cls
        assert keras.saving.get_registered_object(key) is cls, cls


@pytest.mark.large
@pytest.mark.parametrize("name", ["rocktaschel_wbw", "him", "syntactic_tree_lstm"])
def test_loaded_model_trains_on_with_its_frozen_words(name, tmp_path):
    """The frozen/tunable split of the word vectors, the optimiser's state and (HIM) both members survive
    the round trip, and one more training step moves the loaded model exactly as it moves the original."""
    import keras

    model, batch, labels = frozen_word_setup(name)
    model.fit(batch, labels, batch_size=8, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert int(loaded.optimizer.iterations) == 1
    assert [w.path for w in loaded.trainable_weights] == [w.path for w in model.trainable_weights]
    for layer in ([loaded.embedding] if loaded.embeds_words else loaded.embedding.layers):
        assert not layer.table.trainable and layer.tunable.trainable and layer.tunable_words == "oov"
    frozen, tunable = word_tables(loaded)
    for net in (model, loaded):
        net.fit(batch, labels, batch_size=8, epochs=1, verbose=0)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)
    frozen_after, tunable_after = word_tables(loaded)
    for before, after in zip(frozen, frozen_after):
        np.testing.assert_array_equal(before, after)
    assert all(not np.array_equal(before, after) for before, after in zip(tunable, tunable_after))
    np.testing.assert_allclose(np.asarray(loaded.explain(batch)["logits"]), np.asarray(model.explain(batch)["logits"]),
                               atol=1e-6, rtol=0)


@pytest.mark.large
def test_every_model_class_round_trips_under_jax(tmp_path_factory):
    """The same round trip on the JAX backend, the most demanding preset of every model class in the session's
    one JAX subprocess (tests/support/jax_checks.py, shared with tests/test_models.py), and one model trained
    after loading."""
    result = jax_report(tmp_path_factory)
    assert result["returncode"] == 0 and result["report"], result["stderr"]
    report = dict(result["report"])
    assert report.pop("unbuilt_warnings") == []
    report.pop("recurrent")  # tests/test_recurrent.py's
    fit = report.pop("fit_after_load")
    assert np.isfinite(fit["loss"]) and fit["frozen_kept"] and fit["tunable_moved"], fit
    assert sorted(report) == sorted(tc.expensive_models())
    for name, r in report.items():
        assert r["same_class"] and r["same_config"] and r["same_graph"] and r["keys"] and r["diff"] <= 1e-6, \
            (name, r)
