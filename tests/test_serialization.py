"""Keras-native models: registered under one package, built by `build()`, complete configs, `.keras` round trips.

Every registered model is saved with `model.save("x.keras")` and read back with `keras.models.load_model`
on the TensorFlow backend (one test per model) and, in one subprocess, on JAX; the loaded model must give
the same logits and `explain()` maps, and still train.
"""

import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pytest

import zoo
from tests.support import models as tc
from tests.support.jax_checks import jax_report
from tests.support.models import frozen_word_setup, shallow, word_tables
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


def sublayers(layer):
    """Every layer inside `layer`, itself excluded, each once (sublayers held directly or in lists)."""
    import keras

    seen, stack, found = {id(layer)}, [layer], []
    while stack:
        for value in vars(stack.pop()).values():
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(item, keras.layers.Layer) and id(item) not in seen:
                    seen.add(id(item))
                    found.append(item)
                    stack.append(item)
    return found


def constructor_arguments(cls, keras_base):
    """`{name: default}` of the named arguments of `cls.__init__` and of its bases' below `keras_base` (Keras'
    `Layer` or `Model`, whose own arguments its `get_config` handles); a subclass may fix some of its bases'."""
    arguments = {}
    for klass in cls.__mro__:
        if klass is keras_base:
            break
        if "__init__" in vars(klass):
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    arguments.setdefault(p.name, p.default)
    return arguments


def summary_rows_add_up(model):
    """Whether the parameters `model.summary()` lists per layer add up to its total (no layer counted twice)."""
    return sum(layer.count_params() for layer in model.layers) == model.count_params()


def as_arrays(outputs):
    return {key: np.asarray(value) for key, value in outputs.items()}


def test_every_layer_and_model_is_registered_under_one_package():
    import keras

    classes = zoo_classes()
    assert NLIModel in classes and {zoo.registry.get_spec(name).model_class for name in MODELS} <= set(classes)
    for cls in classes:
        key = f"{KERAS_PACKAGE}>{cls.__name__}"
        assert keras.saving.get_registered_name(cls) == key, cls
        assert keras.saving.get_registered_object(key) is cls, cls


@pytest.mark.parametrize("name", MODELS)
def test_configs_hold_every_constructor_argument(name):
    """Models and each of their layers: `get_config()` names every constructor argument, `from_config`
    rebuilds the same config, and an unknown argument is an error (no constructor swallows it)."""
    import keras

    model = tc.make_unbuilt_model(name, **shallow(name))
    for obj in [model] + [layer for layer in sublayers(model) if keras.saving.get_registered_name(
            type(layer)).startswith(f"{KERAS_PACKAGE}>")]:
        cls, config = type(obj), obj.get_config()
        arguments = constructor_arguments(cls, keras.Model if isinstance(obj, NLIModel) else keras.layers.Layer)
        for argument in set(arguments) - set(config):
            # Only an argument the class fixes itself (a base's, passed on by the class) may be left out.
            with pytest.raises(TypeError):
                cls.from_config({**config, argument: arguments[argument]})
        assert cls.from_config(config).get_config() == config, cls.__name__
        with pytest.raises((TypeError, ValueError)):
            cls.from_config({**config, "no_such_argument": 1})


@pytest.mark.parametrize("name", MODELS)
def test_keras_round_trip_gives_identical_outputs(name, tmp_path):
    """`build()` creates every weight (a forward pass adds none, nothing stays unbuilt), the summary's rows
    add up, and `load_model` of a saved model gives the same weights, logits and `explain()` maps; no
    unbuilt-state warning from building, calling, saving or loading."""
    import keras

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = tc.make_unbuilt_model(name, **shallow(name))
        model.build()
        built = [(w.path, tuple(w.shape)) for w in model.weights]
        assert all(layer.built for layer in sublayers(model)), name
        batch = tc.model_inputs(model, tc.random_pairs())
        expected = as_arrays(model.explain(batch))
        np.testing.assert_allclose(np.asarray(model(batch)), expected["logits"], atol=1e-6, rtol=0)
        assert [(w.path, tuple(w.shape)) for w in model.weights] == built, "the forward pass created weights"
        assert summary_rows_add_up(model)
        model.save(tmp_path / "model.keras")
        loaded = keras.models.load_model(tmp_path / "model.keras")
        got = as_arrays(loaded.explain(batch))
    assert tc.unbuilt_state_warnings(caught) == []
    assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
    assert summary_rows_add_up(loaded)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, atol=1e-6, rtol=0, err_msg=key)


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


def test_every_model_round_trips_under_jax(tmp_path_factory):
    """The same round trip on the JAX backend, every registered model in the session's one JAX subprocess
    (tests/support/jax_checks.py, shared with tests/test_models.py), and one model trained after loading."""
    result = jax_report(tmp_path_factory)
    assert result["returncode"] == 0 and result["report"], result["stderr"]
    report = dict(result["report"])
    assert report.pop("unbuilt_warnings") == []
    report.pop("recurrent")  # tests/test_recurrent.py's
    fit = report.pop("fit_after_load")
    assert np.isfinite(fit["loss"]) and fit["frozen_kept"] and fit["tunable_moved"], fit
    assert sorted(report) == MODELS
    for name, r in report.items():
        assert r["same_class"] and r["same_config"] and r["same_graph"] and r["keys"] and r["diff"] <= 1e-6, \
            (name, r)
