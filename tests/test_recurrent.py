"""The fused bidirectional LSTM answers, learns and loads exactly like Keras's `Bidirectional(LSTM)`."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support.recurrent import both_paths, make_inputs, make_layer, same_step_on_either_loop
from zoo.layers.recurrent import BidirectionalLSTM, packed_inference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 1e-5


def test_fused_loop_equals_keras_bidirectional_on_right_padded_sentences():
    layer = make_layer()
    x, mask = make_inputs()
    fused, reference = both_paths(layer, x, mask)
    assert fused.shape == (5, 7, 8)
    np.testing.assert_allclose(fused, reference, atol=TOLERANCE, rtol=0)
    assert np.all(fused[~mask] == 0)                             # zeros at padding, as Keras's
    fused, reference = both_paths(layer, x, None)
    np.testing.assert_allclose(fused, reference, atol=TOLERANCE, rtol=0)


def test_fused_loop_in_a_graph_with_open_lengths():
    """Training feeds batches whose sentence length is unknown when the step is traced."""
    layer = make_layer()
    x, mask = make_inputs()
    layer.fused = True
    step = tf.function(lambda x, m: layer(x, mask=m, training=True),
                       input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None, None], tf.bool)])
    np.testing.assert_allclose(np.asarray(step(x, mask)), np.asarray(layer(x, mask=mask)), atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(np.asarray(step(x[:, :3], mask[:, :3])), np.asarray(layer(x[:, :3], mask=mask[:, :3])),
                               atol=TOLERANCE, rtol=0)                 # inference: Keras's loops


def test_padding_changes_no_real_position():
    layer = make_layer()
    x, mask = make_inputs()
    longer = np.concatenate([x, np.random.default_rng(3).normal(size=(5, 4, 6)).astype("float32")], axis=1)
    longer_mask = np.concatenate([mask, np.zeros((5, 4), bool)], axis=1)
    layer.fused = True
    short = np.asarray(layer(x, mask=mask, training=True))
    long = np.asarray(layer(longer, mask=longer_mask, training=True))
    np.testing.assert_allclose(long[:, :7], short, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("loop", [True, "packed"])
def test_fused_and_packed_gradients_equal_keras_gradients(loop):
    """The hand-written gradients (the fused loop's, the packed loop's over live rows only) are autodiff's
    of Keras's loops: for the inputs and every weight, empty and one-word sentences included."""
    layer = make_layer()
    x, mask = make_inputs()
    target = np.random.default_rng(2).normal(size=(5, 7, 8)).astype("float32")
    gradients, outputs = {}, {}
    for fused in (loop, False):
        layer.fused = fused
        inputs = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs[fused] = layer(inputs, mask=mask, training=True)
            loss = tf.reduce_sum(outputs[fused] * target)
        gradients[fused] = tape.gradient(loss, [inputs] + [v.value for v in layer.trainable_variables])
    np.testing.assert_allclose(np.asarray(outputs[loop]), np.asarray(outputs[False]), atol=TOLERANCE, rtol=0)
    for ours, theirs in zip(gradients[loop], gradients[False]):
        np.testing.assert_allclose(np.asarray(tf.convert_to_tensor(ours)), np.asarray(theirs), atol=1e-4, rtol=1e-4)


def test_packed_training_in_a_graph_with_open_shapes_and_all_empty_rows():
    """A training step traced once takes every batch shape, rows with nothing real included; padding
    changes no real position."""
    layer = make_layer()
    x, mask = make_inputs()
    step = tf.function(lambda x, m: layer(x, mask=m, training=True),
                       input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None, None], tf.bool)])
    assert layer.packs(training=True)                             # TensorFlow on a CPU: "auto" packs
    reference = np.asarray(layer(x, mask=mask))                  # Keras's loops (inference)
    np.testing.assert_allclose(np.asarray(step(x, mask)), reference, atol=TOLERANCE, rtol=0)
    longer = np.concatenate([x, np.ones((5, 4, 6), "float32")], axis=1)
    longer_mask = np.concatenate([mask, np.zeros((5, 4), bool)], axis=1)
    np.testing.assert_allclose(np.asarray(step(longer, longer_mask))[:, :7], reference, atol=TOLERANCE, rtol=0)
    empty = np.asarray(step(x[:2, :3], np.zeros((2, 3), bool)))
    assert empty.shape == (2, 3, 8) and np.all(empty == 0)
    layer.xla = True                                             # an XLA step has fixed shapes: the fused loop
    assert not layer.packs(training=True) and layer.uses_fused_loop()


def test_packed_inference_equals_keras_in_any_row_order_and_length():
    """Served inference on packed sequences (rows sorted inside, each direction only on live rows): Keras's
    outputs for unsorted rows of every length, open shapes in a graph, and no mask at all."""
    layer = make_layer()
    x, mask = make_inputs()
    packed = tf.function(packed_inference(lambda x, m: layer(x, mask=m, training=False)),
                         input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None, None], tf.bool)])
    reference = np.asarray(layer(x, mask=mask))                  # Keras's loops
    ours = np.asarray(packed(x, mask))
    np.testing.assert_allclose(ours, reference, atol=TOLERANCE, rtol=0)
    assert np.all(ours[~mask] == 0)
    np.testing.assert_allclose(np.asarray(packed(x[:1, :3], mask[:1, :3])), np.asarray(layer(x[:1, :3], mask=mask[:1, :3])),
                               atol=TOLERANCE, rtol=0)           # one pair, another length: the same graph
    unmasked = tf.function(packed_inference(lambda x: layer(x, training=False)))
    np.testing.assert_allclose(np.asarray(unmasked(x)), np.asarray(layer(x)), atol=TOLERANCE, rtol=0)
    layer.fused = False                                          # Keras's loops asked for: no packing either
    assert not layer.uses_packed_loop()


def test_inference_packs_only_inside_packed_inference():
    """Inference packs only where `packed_inference` wraps it (elsewhere Keras's loops, which XLA and the
    TFLite converter can trace); a training step packs under "auto" and keeps the fused loop when asked."""
    layer = make_layer()
    x, mask = make_inputs()
    seen = []
    layer.packed_call = lambda *args, **kw: seen.append(kw.get("training")) or BidirectionalLSTM.packed_call(
        layer, *args, **kw)
    layer(x, mask=mask)
    assert seen == []
    packed_inference(lambda: layer(x, mask=mask))()
    assert seen == [False]
    layer(x, mask=mask, training=True)
    assert seen == [False, True]
    layer.fused = True
    layer(x, mask=mask, training=True)
    packed_inference(lambda: layer(x, mask=mask))()
    assert seen == [False, True, False]


def test_auto_fuses_on_a_cpu_and_config_round_trips():
    layer = BidirectionalLSTM(3, name="encoder")
    assert layer.uses_fused_loop()                                # this machine has no GPU
    assert [layer.forward_layer.name, layer.backward_layer.name] == ["forward_encoder", "backward_encoder"]
    copy = BidirectionalLSTM.from_config(BidirectionalLSTM(3, name="encoder", fused=False).get_config())
    assert copy.units == 3 and copy.fused is False and copy.backward_layer.go_backwards
    with pytest.raises(ValueError, match="fused must be"):
        BidirectionalLSTM(3, name="x", fused="yes")


def test_weights_load_from_a_keras_bidirectional_checkpoint(tmp_path):
    """The same variables under the same paths: a checkpoint of a model holding a plain Bidirectional(LSTM)
    loads into the same model holding a BidirectionalLSTM (the zoo's models hold them as attributes)."""
    class Holder(keras.Model):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def call(self, x):
            return self.encoder(x)

    def model_of(layer):
        model = Holder(layer)
        model(np.zeros((1, 2, 6), "float32"))
        return model

    keras.utils.set_random_seed(4)
    plain = model_of(keras.layers.Bidirectional(
        keras.layers.LSTM(4, return_sequences=True, name="forward_bi"),
        backward_layer=keras.layers.LSTM(4, return_sequences=True, go_backwards=True, name="backward_bi"), name="bi"))
    plain.save_weights(tmp_path / "plain.weights.h5")
    ours = model_of(BidirectionalLSTM(4, name="bi"))
    ours.load_weights(tmp_path / "plain.weights.h5")
    x, _ = make_inputs()
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(plain(x)), atol=TOLERANCE, rtol=0)


JAX_SCRIPT = """
import json, sys
import numpy as np
import keras
assert keras.backend.backend() == "jax"
from tests.support.recurrent import both_paths, make_inputs, make_layer, same_step_on_either_loop
layer = make_layer()
x, mask = make_inputs()
fused, reference = both_paths(layer, x, mask)
# jax.custom_gradient: one training step moves every weight as Keras's loops do
same_step_on_either_loop("esim", "auto")
print("JAX_DIFFERENCE " + json.dumps(float(np.abs(fused - reference).max())))
"""


def test_fused_loop_and_its_gradient_under_jax():
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", JAX_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("JAX_DIFFERENCE ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    assert json.loads(lines[-1].split(" ", 1)[1]) <= TOLERANCE


@pytest.mark.parametrize("name, loop", [("esim", "auto"), ("esim", True), ("paria_bilstm", "auto")])
def test_a_training_step_of_a_model_is_the_same_on_either_loop(name, loop):
    """Whole models: one SGD step with the zoo's loops ("auto": packed under TensorFlow, fused under JAX;
    True: fused) and one with Keras's move every weight alike (dropout off, so that both steps see the same
    function)."""
    same_step_on_either_loop(name, loop)
