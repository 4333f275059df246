"""Tiny models for the tests, and the behavioural checks every registered model goes through.

`tests/test_models.py` runs the checks for every name in the registry, so a newly registered model is tested
without writing anything; a model file's own test calls them on its model. Random batches and random parse
trees over their tokens are here too, and the helpers of the `.keras` round trips (also run in a JAX
subprocess, which imports this module).
"""

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


def make_model(name, seed=0, **extra):
    import keras

    keras.utils.set_random_seed(seed)
    return zoo.create_model(name, vocabulary_size=VOCAB, embedding_dim=EMBEDDING_DIM,
                            **{"tunable_words": "all", **small_overrides(name), **extra})


def make_unbuilt_model(name, seed=0, **extra):
    """`make_model`'s model before any weight exists (`create_model(build=False)`)."""
    import keras

    keras.utils.set_random_seed(seed)
    return zoo.create_model(name, vocabulary_size=VOCAB, embedding_dim=EMBEDDING_DIM, build=False,
                            **{"tunable_words": "all", **small_overrides(name), **extra})


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
