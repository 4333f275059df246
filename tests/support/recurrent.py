"""The bidirectional LSTM's test helpers (tests/test_recurrent.py, in this process and in a JAX subprocess):
inputs with right padding, a layer with non-trivial weights, the fused loop's and Keras's outputs, and one
training step of a whole model on the zoo's loop and on Keras's.
"""

import keras
import numpy as np

from tests.support import models as tc
from zoo.layers.recurrent import BidirectionalLSTM
from zoo.training.kernels import iter_layers


def make_inputs(seed=0, batch=5, length=7, dim=6):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, dim)).astype("float32")
    lengths = np.array([7, 3, 1, 5, 0])[:batch]                   # full, short, one word, empty
    mask = np.arange(length)[None, :] < lengths[:, None]
    mask[4, 0] = True                                             # the zoo's recurrent_mask: position 0 is real
    return x, mask


def make_layer(units=4, dim=6):
    layer = BidirectionalLSTM(units, name="bi")
    layer.build((None, None, dim))
    rng = np.random.default_rng(1)
    for variable in layer.weights:  # non-trivial weights, biases included
        variable.assign(rng.normal(scale=0.5, size=variable.shape).astype("float32"))
    return layer


def both_paths(layer, x, mask):
    """The fused loop's and Keras's outputs of a training step (the layers have no dropout)."""
    fused = np.asarray(layer(x, mask=mask, training=True, loop="fused"))
    reference = np.asarray(layer(x, mask=mask, training=True, loop="keras"))
    return fused, reference


def same_step_on_either_loop(name, loop):
    """Asserts that one SGD step of model `name` with the zoo's loops (`loop` "auto": packed under TensorFlow,
    fused under JAX; "fused") and one with Keras's move every weight alike (dropout off, so that both steps
    see the same function); the loop is asked as a user asks it, through the model's `lstm_loop`."""
    batch, labels = tc.random_pairs(batch=4), np.arange(4) % 3
    weights = {}
    for chosen in (loop, "keras"):
        model = tc.make_model(name, dropout=0.0) if name == "esim" else tc.make_model(name)
        assert any(isinstance(layer, BidirectionalLSTM) for layer in iter_layers(model))
        model.lstm_loop = chosen
        model.compile(optimizer=keras.optimizers.SGD(0.5),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.train_on_batch(batch, labels)
        weights[chosen] = [np.asarray(v) for v in model.trainable_variables]
    for ours, theirs in zip(weights[loop], weights["keras"]):
        np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-4)
