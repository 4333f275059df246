"""Tiny models for the tests, and the per-model harness every registered model goes through.

`check_model(name)` builds one tiny instance of a registered model and runs on it every check that is
cheap and must hold for every name (tests/test_models.py calls it once per name, in the fast tier): so a
newly registered model is tested without writing anything. The expensive paths (SavedModel, TFLite,
fresh-process load, overfitting, XLA, JAX) run once per model class, on the class's most demanding preset
(`EXPENSIVE`, `expensive_models()`), in the large tier. Random batches and random parse trees over their
tokens are here too, and the helpers of the `.keras` round trips (also run in a JAX subprocess, which
imports this module).
"""

import json
import os
import tempfile
import warnings

import numpy as np

import zoo
from zoo.data import trees as T

VOCAB = 40
EMBEDDING_DIM = 12
SMALL = {"hidden_size": 16, "operator_size": 32}  # small sizes keep the suite fast; structure is unchanged


def small_overrides(name):
    """Constructor overrides that shrink a model for tests (only keys its preset has)."""
    preset = zoo.get_preset(name).model
    return {k: v for k, v in SMALL.items() if k in preset}


def tiny_sizes(name):
    """Every override that shrinks `name` for tests: `SMALL`'s sizes and the tree-LSTMs' test depth
    (`shallow`), only keys its preset has."""
    return {**small_overrides(name), **shallow(name)}


def make_model(name, seed=0, **extra):
    """A tiny built model of `name` (test sizes, trees at test depth), weights seeded by `seed`."""
    import keras

    keras.utils.set_random_seed(seed)
    return zoo.create_model(name, vocabulary_size=VOCAB, embedding_dim=EMBEDDING_DIM,
                            **{"tunable_words": "all", **tiny_sizes(name), **extra})


def make_unbuilt_model(name, seed=0, **extra):
    """`make_model`'s model before any weight exists (`create_model(build=False)`)."""
    import keras

    keras.utils.set_random_seed(seed)
    return zoo.create_model(name, vocabulary_size=VOCAB, embedding_dim=EMBEDDING_DIM, build=False,
                            **{"tunable_words": "all", **tiny_sizes(name), **extra})


# The expensive paths: once per model class ----------------------------------------------------------
# Each model class's most demanding preset (its most features: attention both ways, a bi-LSTM encoder,
# parses read in the graph, in-model complete trees, the unmatchedness heuristics). The SavedModel and
# TFLite exports, the fresh-process load, the overfitting, XLA and JAX checks run on these names; every
# registered name goes through `check_model`. A new model class adds its line here
# (tests/test_models.py fails until it does).
EXPENSIVE = {
    "BowmanLSTM": "bowman_lstm",
    "ESIM": "esim",
    "HIM": "him",
    "HypothesisOnly": "hypothesis_only",
    "LuoUnmatched": "luo_unmatched_heuristics",
    "MatchLSTM": "mlstm_bilstm",
    "Paria": "paria_btree",
    "RocktaschelAttention": "rocktaschel_attention_two_way",
    "RocktaschelConditional": "rocktaschel_conditional",
    "RocktaschelWordByWord": "rocktaschel_wbw_two_way",
    "SyntacticTreeLSTM": "syntactic_tree_lstm",
    "WangJiangWordByWord": "wang_jiang_wbw",
}


def model_classes():
    """`{class name: [registered names]}` of the registry."""
    classes = {}
    for name in zoo.list_models():
        classes.setdefault(zoo.registry.get_spec(name).model_class.__name__, []).append(name)
    return classes


def expensive_models():
    """The names the expensive paths run on, one per model class (`EXPENSIVE`), in the registry's order."""
    chosen = set(EXPENSIVE.values())
    return [name for name in zoo.list_models() if name in chosen]


def model_inputs(model, batch, seed=0):
    """`batch`, plus random parse trees over its real tokens when `model` reads them (`reads_parse_trees`)."""
    if not model.reads_parse_trees:
        return batch
    return parsed_batch(batch, seed=seed)


def random_tree(rng, leaves):
    """A random full binary tree over `leaves` (a list of leaf names): random split points."""
    if len(leaves) == 1:
        return leaves[0]
    split = int(rng.integers(1, len(leaves)))
    return (random_tree(rng, leaves[:split]), random_tree(rng, leaves[split:]))


def parsed_batch(batch, seed=0):
    """`batch` plus random binary trees over its real tokens (as `make_tree_dataset` gives parses)."""
    rng = np.random.default_rng(seed)
    out = dict(batch)
    for key in ("premise", "hypothesis"):
        lengths = (batch[key] != 0).sum(1)
        nested = [random_tree(rng, [str(t) for t in range(n)]) if n else None for n in lengths]
        out[f"{key}_tree"] = T.pad_trees([T.tree_arrays(t) for t in nested], length=batch[key].shape[1])
    return out


# What Keras warns when a layer is called or loaded without a build() that creates all of its state.
UNBUILT_STATE_WARNINGS = ("unbuilt state", "does not have a `build()` method", "cannot be built automatically")


def unbuilt_state_warnings(caught):
    """The messages among `caught` (`warnings.catch_warnings(record=True)`) that say a layer was not built."""
    return [str(w.message) for w in caught if any(text in str(w.message) for text in UNBUILT_STATE_WARNINGS)]


def perturb_zero_kernels(model, seed=0):
    """Gives every 2-D kernel that starts at zero by choice (the attention models' W^p, Rocktäschel et al. Eq. 10,
    14) small random values: at zero it blocks the gradient of what feeds it at the first step only, so a check
    that one step moves every weight would see W^y, W^h and w still."""
    for weight in model.trainable_weights:
        if len(weight.shape) == 2 and not np.any(np.asarray(weight)):
            weight.assign(np.random.default_rng(seed).normal(0, 0.1, weight.shape).astype("float32"))


def random_pairs(batch=6, max_premise=7, max_hypothesis=5, seed=0):
    """Right-padded random id batches with varied real lengths (at least one token each)."""
    rng = np.random.default_rng(seed)
    premise = np.zeros((batch, max_premise), "int32")
    hypothesis = np.zeros((batch, max_hypothesis), "int32")
    for i in range(batch):
        lp, lh = rng.integers(1, max_premise + 1), rng.integers(1, max_hypothesis + 1)
        premise[i, :lp] = rng.integers(3, VOCAB, lp)
        hypothesis[i, :lh] = rng.integers(3, VOCAB, lh)
    return {"premise": premise, "hypothesis": hypothesis}


def pad(batch, extra_premise, extra_hypothesis):
    """The same batch with more padding columns."""
    return {"premise": np.pad(batch["premise"], ((0, 0), (0, extra_premise))),
            "hypothesis": np.pad(batch["hypothesis"], ((0, 0), (0, extra_hypothesis)))}


def check_padding_invariance(model, batch, atol=1e-5):
    """Padding a batch to other lengths changes no prediction and no attention weight of a real token."""
    base = {k: np.asarray(v) for k, v in model.explain(batch).items()}
    for extra in [(3, 0), (0, 4), (5, 2)]:
        padded = {k: np.asarray(v) for k, v in model.explain(pad(batch, *extra)).items()}
        np.testing.assert_allclose(padded["probabilities"], base["probabilities"], atol=atol)
        for key in ("attention", "attention_reverse"):
            if key in base:
                rows, cols = base[key].shape[1:]
                np.testing.assert_allclose(padded[key][:, :rows, :cols], base[key], atol=atol)
                assert np.all(padded[key][:, :, cols:] == 0), f"{key} gives weight to padding"


def check_attention_rows(model, batch, atol=1e-5):
    """Every attention row of a real token sums to one over the real tokens it attends over.

    A model with `attention_null_column = True` has one more `attention` column, first: NULL.
    A model whose maps index other positions than tokens (tree nodes) returns their boolean real-position
    masks as `premise_mask` `[B, Np]` and `hypothesis_mask` `[B, Nh]` in `explain()`."""
    outputs = {k: np.asarray(v) for k, v in model.explain(batch).items()}
    premise_real = outputs.get("premise_mask", batch["premise"] != 0)
    hypothesis_real = outputs.get("hypothesis_mask", batch["hypothesis"] != 0)
    checked = 0
    for key, (rows_real, cols_real) in (("attention", (hypothesis_real, premise_real)),
                                         ("attention_reverse", (premise_real, hypothesis_real))):
        if key not in outputs:
            continue
        att = outputs[key]
        if key == "attention" and getattr(model, "attention_null_column", False):
            # Wang & Jiang's NULL premise position: column 0, always real (rows may align with it).
            cols_real = np.concatenate([np.ones_like(cols_real[:, :1]), cols_real], axis=1)
        assert np.all(np.isfinite(att))
        assert np.all(att[~np.broadcast_to(cols_real[:, None, :], att.shape)] == 0)
        n_rows = att.shape[1]
        row_mask = rows_real if n_rows == rows_real.shape[1] else np.ones((len(att), n_rows), bool)
        sums = att.sum(-1)
        np.testing.assert_allclose(sums[row_mask], 1.0, atol=atol)
        np.testing.assert_allclose(sums[~row_mask], 0.0, atol=atol)
        checked += 1
    return checked


def overfit_accuracy(name, pairs, labels, epochs=60, learning_rate=1e-2, **extra):
    """Accuracy on `pairs`/`labels` after fitting them (no dropout) for at most `epochs`.

    The accuracy is always that of a forward pass in inference mode with the final weights (one eager
    call, where `evaluate` would trace a test step first: 0.5-2 s a model). Fitting stops early at the end
    of an epoch whose running training accuracy reached 99% and whose weights then score 99% in that pass:
    the running accuracy alone is measured while the weights move, and a model still swinging between
    epochs (0.89, 0.97, 0.91, 0.88, 1.00) can stop on a lucky epoch with weights that score 0.83.

    The pairs are reshuffled every epoch as `fit(shuffle=True)` does, from one repeated `tf.data` pipeline
    whose iterator Keras keeps from epoch to epoch (`steps_per_epoch`): from arrays, `fit` makes a new
    iterator every epoch, about 40 ms each, most of an epoch of two steps of a tiny model."""
    import keras
    import tensorflow as tf

    def accuracy(model):
        return float(np.mean(np.asarray(model(pairs, training=False)).argmax(-1) == np.asarray(labels)))

    class StopWhenFitted(keras.callbacks.Callback):
        final = None  # the accuracy of the weights training stopped with

        def on_epoch_end(self, epoch, logs=None):
            if (logs or {}).get("accuracy", 0.0) >= 0.99:
                self.final = accuracy(self.model)
                self.model.stop_training = self.final >= 0.99

    overrides = {"dropout": 0.0} if "dropout" in zoo.get_preset(name).model else {}
    model = make_model(name, **{**overrides, **extra})
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    build_training_state(model, pairs, labels)
    batch_size, stop = 32, StopWhenFitted()
    data = tf.data.Dataset.from_tensor_slices((pairs, labels)).shuffle(len(labels), reshuffle_each_iteration=True)
    model.fit(data.batch(batch_size).repeat(), steps_per_epoch=-(-len(labels) // batch_size), epochs=epochs,
              shuffle=False, verbose=0, callbacks=[stop])
    return stop.final if model.stop_training else accuracy(model)


def build_training_state(model, pairs, labels):
    """Creates a compiled model's optimizer and metric variables before its first training step.

    A step that creates variables is traced twice by `tf.function` (once to create them, once more to run),
    and Keras creates them in the first step on the TensorFlow backend: creating them here (the optimizer's
    slots for every trainable weight, the compiled metrics' state, reset again) leaves one trace, half the
    time of a tiny model's first epoch. Training is unchanged: the same zero slots and empty metrics."""
    from zoo.runs.optimizer import build_optimizer  # the library's, as the trainer builds it

    build_optimizer(model)
    few = {key: value[:2] for key, value in pairs.items()}
    model.compute_metrics(few, labels[:2], model(few), sample_weight=None)
    model.reset_metrics()


# The `.keras` round trips (tests/test_serialization.py, in this process and in a JAX subprocess) ----------
def shallow(name):
    """Overrides keeping the tree-LSTMs' level loops short: 6 levels cover every tree over the test
    batches' at most 7 words (the syntactic preset computes 48 over given parses)."""
    return {"max_depth": 6} if "max_depth" in zoo.get_preset(name).model else {}


def frozen_word_setup(name, num_tunable=5, run_eagerly=True):
    """A compiled model (no dropout) whose word vectors are pretrained and frozen except `num_tunable`
    rows (`tunable_words="oov"`), with a batch and labels. Eager steps cost less than compiling one for
    a single step on TensorFlow; on JAX the other way round."""
    import keras

    rng = np.random.default_rng(0)
    mask = np.zeros(VOCAB, bool)
    mask[rng.choice(np.arange(3, VOCAB), num_tunable, replace=False)] = True
    model = make_unbuilt_model(name, tunable_words="oov", num_tunable=num_tunable, dropout=0.0, **shallow(name))
    model.set_embeddings(rng.normal(size=(VOCAB, EMBEDDING_DIM)).astype("float32"), mask)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=run_eagerly)
    batch = model_inputs(model, random_pairs(batch=8))
    return model, batch, np.arange(8) % 3


def word_tables(model):
    """`(frozen, tunable)` word vectors of a model or of each member of an ensemble."""
    layers = [model.embedding] if model.embeds_words else model.embedding.layers
    return ([np.asarray(layer.table) for layer in layers], [np.asarray(layer.tunable) for layer in layers])


# The per-model harness: every registered name, one instance ---------------------------------------------
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
    `Layer` or `Model`, whose own arguments its `get_config` handles), `inspect.Parameter.empty` for a required
    one (every architecture setting of a model); a subclass may fix some of its bases'."""
    import inspect

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


def check_configs_hold_every_constructor_argument(model):
    """The model and each of its zoo layers: `get_config()` names every constructor argument, `from_config`
    rebuilds the same config, and an unknown argument is an error (no constructor swallows it)."""
    import keras
    import pytest

    from zoo.models.base import NLIModel
    from zoo.registry import KERAS_PACKAGE

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


def check_build_creates_every_weight(model):
    """`build()` creates every weight (a forward pass adds none, nothing stays unbuilt) and the summary's rows
    add up; returns the batch it ran and the model's `explain()` outputs on it."""
    model.build()
    built = [(w.path, tuple(w.shape)) for w in model.weights]
    assert all(layer.built for layer in sublayers(model)), model.name
    batch = model_inputs(model, random_pairs())
    expected = as_arrays(model.explain(batch))
    np.testing.assert_allclose(np.asarray(model(batch)), expected["logits"], atol=1e-6, rtol=0)
    assert [(w.path, tuple(w.shape)) for w in model.weights] == built, "the forward pass created weights"
    assert summary_rows_add_up(model)
    return batch, expected


def check_keras_round_trip(model, batch, expected, directory):
    """`keras.models.load_model` of the saved model gives the same class, config, weights, logits and
    `explain()` maps, and its summary's rows add up."""
    import keras

    path = os.path.join(directory, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    got = as_arrays(loaded.explain(batch))
    assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
    assert summary_rows_add_up(loaded)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, atol=1e-6, rtol=0, err_msg=key)


def check_config_round_trip(model):
    """A clone from `get_config()` given the model's weights gives its logits."""
    clone = type(model).from_config(model.get_config())
    clone.build_with_dummy_batch()
    clone.set_weights(model.get_weights())
    batch = random_pairs()
    np.testing.assert_allclose(np.asarray(clone(batch)), np.asarray(model(batch)), atol=1e-6)


def check_attention_maps(model, name):
    """`explain()` returns the maps the registry names, and each sums to one over the real tokens."""
    batch = random_pairs()
    returned = tuple(sorted(k for k in model.explain(batch) if k.startswith("attention")))
    assert returned == tuple(sorted(zoo.registry.get_spec(name).attention))
    assert check_attention_rows(model, batch) == len(returned)


def check_empty_sentences(model):
    """An empty premise and an empty hypothesis give finite outputs."""
    batch = random_pairs(batch=3)
    batch["premise"][0] = 0
    batch["hypothesis"][1] = 0
    for value in model.explain(batch).values():
        assert np.all(np.isfinite(np.asarray(value)))


def check_every_weight_gets_a_gradient(model):
    """Every trainable weight gets a finite, non-zero gradient from a loss over 8 pairs and two filler rows
    as the input pipeline makes them (empty sentences weighted 0, whose zero share of the loss must stay a
    zero, finite, share of every gradient). Call it on a model without dropout."""
    import tensorflow as tf

    batch = random_pairs(batch=8)
    batch = {key: np.concatenate([value, np.zeros_like(value[:2])]) for key, value in batch.items()}
    labels, weights = np.arange(10) % 3, np.asarray([1.0] * 8 + [0.0] * 2, "float32")
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


def check_gpu_path(model):
    """What can be checked on a CPU of the fast GPU path (zoo.training.kernels): every LSTM qualifies for
    cuDNN, Keras turns XLA off exactly when a cuDNN LSTM is present (and under a distribution strategy), and
    the masks the LSTMs get are ones cuDNN accepts: every row True then False (right padding), never all
    False. Runs the model on Keras's LSTM loop (what a GPU runs) from then on."""
    from unittest import mock

    import keras

    from zoo.training.kernels import gpu_plan, iter_layers

    plan = gpu_plan(model)
    assert plan["other_lstms"] == []
    assert plan["xla"] == (not plan["cudnn_lstms"])
    assert gpu_plan(model, distributed=True)["xla"] is False
    if model.reads_parse_trees:  # reads trees, no Keras LSTM
        return
    masks, original = [], keras.layers.LSTM.call

    def recording(self, sequences, initial_state=None, mask=None, training=False):
        if mask is not None:
            masks.append(np.asarray(mask))
        return original(self, sequences, initial_state=initial_state, mask=mask, training=training)

    batch = random_pairs(batch=5, seed=4)
    batch["hypothesis"][2] = 0   # an empty hypothesis (an empty request string gives one)
    batch["premise"][3] = 0      # and an empty premise
    batch = {k: np.pad(v, ((0, 0), (0, 3))) for k, v in batch.items()}
    model.lstm_loop = "keras"    # what a GPU runs (zoo.layers.loop_choice); a CPU packs the bi-LSTMs
    with mock.patch.object(keras.layers.LSTM, "call", recording):
        model.explain(batch)
    lstms = [layer for layer in iter_layers(model) if isinstance(layer, keras.layers.LSTM)]
    if not lstms:
        assert not masks
        return
    assert masks, "the LSTMs got no mask"
    for mask in masks:
        lengths = mask.sum(axis=1)
        assert np.array_equal(mask, np.arange(mask.shape[1])[None, :] < lengths[:, None]), "not right-padded"
        assert (lengths >= 1).all(), "a fully masked row: cuDNN refuses it"


_CHECKED = {}  # {(class, config as JSON): the first name checked with it}, this process


def check_model(name):
    """Every cheap check that must hold for the registered model `name`, on one tiny instance (test sizes,
    trees at test depth, no dropout): complete configs, `build()` creating every weight, the `.keras` and
    config round trips, no unbuilt-state warning, padding invariance, the attention maps and their rows,
    empty sentences, a gradient for every weight, the GPU path's LSTMs and masks.

    Names whose models are the same graph at test size (the same class and config: `mlstm` and
    `mlstm_300`, whose presets differ only in the hidden size the tests shrink) are checked once.

    Returns:
        the name first checked with the same graph (`name` itself when it is the first).
    """
    overrides = {"dropout": 0.0} if "dropout" in zoo.get_preset(name).model else {}
    model = make_unbuilt_model(name, **overrides)
    config = {k: v for k, v in model.get_config().items() if k != "name"}  # Keras numbers a class's instances
    key = (type(model).__name__, json.dumps(config, sort_keys=True, default=str))
    if key in _CHECKED:
        assert zoo.registry.get_spec(name).attention == zoo.registry.get_spec(_CHECKED[key]).attention
        return _CHECKED[key]
    check_configs_hold_every_constructor_argument(model)
    with warnings.catch_warnings(record=True) as caught, tempfile.TemporaryDirectory() as directory:
        warnings.simplefilter("always")
        batch, expected = check_build_creates_every_weight(model)
        check_keras_round_trip(model, batch, expected, directory)
    assert unbuilt_state_warnings(caught) == []
    check_config_round_trip(model)
    perturb_zero_kernels(model)  # the attention models' W^p off zero: attention then reaches the logits
    check_padding_invariance(model, random_pairs())
    check_attention_maps(model, name)
    check_empty_sentences(model)
    check_every_weight_gets_a_gradient(model)
    check_gpu_path(model)  # last: it leaves the model on Keras's LSTM loop
    _CHECKED[key] = name
    return name
