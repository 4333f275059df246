"""The fused bidirectional LSTM answers, learns and loads exactly like Keras's `Bidirectional(LSTM)`."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.support.jax_checks import jax_report
from tests.support.recurrent import both_paths, make_inputs, make_layer, same_step_on_either_loop
from zoo.layers import tensorflow_lstm
from zoo.layers.loop_choice import KERNEL_ROWS, choose_loop
from zoo.layers.recurrent import BidirectionalLSTM

TOLERANCE = 1e-5


def record_loops(layer, seen, rows=False):
    """Wraps `layer`'s packed and kernel loops so that each call appends its name (with `rows`, and its batch
    rows) to `seen`."""
    for name in ("packed_call", "block_call"):
        method = getattr(BidirectionalLSTM, name)

        def recorded(*args, method=method, name=name, **kwargs):
            seen.append((name, len(args[0])) if rows else name)
            return method(layer, *args, **kwargs)

        setattr(layer, name, recorded)


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
    step = tf.function(lambda x, m: layer(x, mask=m, training=True, loop="fused"),
                       input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None, None], tf.bool)])
    keras_loops = lambda x, m: np.asarray(layer(x, mask=m, loop="keras"))  # noqa: E731
    np.testing.assert_allclose(np.asarray(step(x, mask)), keras_loops(x, mask), atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(np.asarray(step(x[:, :3], mask[:, :3])), keras_loops(x[:, :3], mask[:, :3]),
                               atol=TOLERANCE, rtol=0)


def test_padding_changes_no_real_position():
    layer = make_layer()
    x, mask = make_inputs()
    longer = np.concatenate([x, np.random.default_rng(3).normal(size=(5, 4, 6)).astype("float32")], axis=1)
    longer_mask = np.concatenate([mask, np.zeros((5, 4), bool)], axis=1)
    short = np.asarray(layer(x, mask=mask, training=True, loop="fused"))
    long = np.asarray(layer(longer, mask=longer_mask, training=True, loop="fused"))
    np.testing.assert_allclose(long[:, :7], short, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("loop", ["fused", "packed"])
def test_fused_and_packed_gradients_equal_keras_gradients(loop):
    """The hand-written gradients (the fused loop's, the packed loop's over live rows only) are autodiff's
    of Keras's loops: for the inputs and every weight, empty and one-word sentences included."""
    layer = make_layer()
    x, mask = make_inputs()
    target = np.random.default_rng(2).normal(size=(5, 7, 8)).astype("float32")
    gradients, outputs = {}, {}
    for chosen in (loop, "keras"):
        inputs = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs[chosen] = layer(inputs, mask=mask, training=True, loop=chosen)
            loss = tf.reduce_sum(outputs[chosen] * target)
        gradients[chosen] = tape.gradient(loss, [inputs] + [v.value for v in layer.trainable_variables])
    np.testing.assert_allclose(np.asarray(outputs[loop]), np.asarray(outputs["keras"]), atol=TOLERANCE, rtol=0)
    for ours, theirs in zip(gradients[loop], gradients["keras"]):
        np.testing.assert_allclose(np.asarray(tf.convert_to_tensor(ours)), np.asarray(theirs), atol=1e-4, rtol=1e-4)


def test_packed_training_in_a_graph_with_open_shapes_and_all_empty_rows():
    """A training step traced once takes every batch shape, rows with nothing real included; padding
    changes no real position."""
    layer = make_layer()
    x, mask = make_inputs()
    step = tf.function(lambda x, m: layer(x, mask=m, training=True),
                       input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None, None], tf.bool)])
    assert layer.loop_for(training=True) == "packed"              # TensorFlow on a CPU: "auto" packs
    reference = np.asarray(layer(x, mask=mask, loop="keras"))    # Keras's loops
    np.testing.assert_allclose(np.asarray(step(x, mask)), reference, atol=TOLERANCE, rtol=0)
    longer = np.concatenate([x, np.ones((5, 4, 6), "float32")], axis=1)
    longer_mask = np.concatenate([mask, np.zeros((5, 4), bool)], axis=1)
    np.testing.assert_allclose(np.asarray(step(longer, longer_mask))[:, :7], reference, atol=TOLERANCE, rtol=0)
    empty = np.asarray(step(x[:2, :3], np.zeros((2, 3), bool)))
    assert empty.shape == (2, 3, 8) and np.all(empty == 0)
    assert layer.loop_for(training=True, xla=True) == "fused"    # an XLA step has fixed shapes: the fused loop


@pytest.mark.parametrize("loop", ["packed", "auto"])
def test_packed_and_kernel_inference_equal_keras_in_any_row_order_and_length(loop):
    """Inference on packed sequences, and on TensorFlow's own LSTM kernel for a few rows (what "auto" runs
    for Keras's predict and evaluate, the dev pass and the SavedModel on a CPU under TensorFlow), gives Keras's
    outputs for unsorted rows of every length, open shapes in a graph, and no mask at all; so does the fused
    loop's inference (XLA's). One graph takes a batch on either side of `KERNEL_ROWS`."""
    layer = make_layer()
    x, mask = make_inputs()
    assert layer.loop_for(loop=loop) == {"packed": "packed", "auto": "block"}[loop]
    assert layer.loop_for(xla=True, loop=loop) == {"packed": "fused", "auto": "keras"}[loop]
    seen = []
    record_loops(layer, seen)
    packed = tf.function(lambda x, m: layer(x, mask=m, training=False, loop=loop),
                         input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None, None], tf.bool)])
    keras_loops = lambda x, m=None: np.asarray(layer(x, mask=m, loop="keras"))  # noqa: E731
    reference = keras_loops(x, mask)
    ours = np.asarray(packed(x, mask))
    assert sorted(set(seen)) == {"packed": ["packed_call"], "auto": ["block_call", "packed_call"]}[loop]
    np.testing.assert_allclose(ours, reference, atol=TOLERANCE, rtol=0)
    assert np.all(ours[~mask] == 0)
    np.testing.assert_allclose(np.asarray(packed(x[:1, :3], mask[:1, :3])), keras_loops(x[:1, :3], mask[:1, :3]),
                               atol=TOLERANCE, rtol=0)           # one pair, another length: the same graph
    many = np.tile(x, (4, 1, 1)), np.tile(mask, (4, 1))        # 20 rows: more than KERNEL_ROWS, packed
    assert len(many[0]) > KERNEL_ROWS
    np.testing.assert_allclose(np.asarray(packed(*many)), keras_loops(*many), atol=TOLERANCE, rtol=0)
    unmasked = tf.function(lambda x: layer(x, training=False, loop=loop))
    np.testing.assert_allclose(np.asarray(unmasked(x)), keras_loops(x), atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(np.asarray(layer(x, mask=mask, loop="fused")), reference, atol=TOLERANCE, rtol=0)


def test_the_kernel_runs_eagerly_on_empty_rows_and_only_at_float32():
    layer = make_layer()
    x, mask = make_inputs()
    np.testing.assert_allclose(np.asarray(layer.block_call(x, mask)), layer(x, mask=mask, loop="keras"),
                               atol=TOLERANCE, rtol=0)
    empty = np.asarray(layer.block_call(x[:2, :3], np.zeros((2, 3), bool)))  # no real word at all: zeros
    assert empty.shape == (2, 3, 8) and np.all(empty == 0)
    assert choose_loop("auto", "tensorflow", "cpu", False, False, "bfloat16") == "packed"
    assert choose_loop("block", "tensorflow", "cpu", False, False, "float16") == "packed"


@pytest.mark.large
@pytest.mark.parametrize("design", tensorflow_lstm.DESIGNS)
def test_both_few_rows_designs_equal_keras_at_every_length_in_one_graph(design):
    """The step loop (`UNROLL` steps an iteration, then the rest one at a time) and TensorFlow's kernel give
    Keras's LSTM outputs in one graph with open shapes, for one and two rows of every length from none to past
    two unrolled iterations (every remainder), and padding after a row's words changes none of its outputs."""
    layer = make_layer()
    rng = np.random.default_rng(7)
    length = 2 * tensorflow_lstm.UNROLL + 2
    x = rng.normal(size=(2, length + 3, 6)).astype("float32")
    cells = layer.forward_layer.cell, layer.backward_layer.cell
    run = tf.function(lambda x, lengths: tensorflow_lstm.few_rows_bidirectional(x, lengths, *cells, design=design),
                      input_signature=[tf.TensorSpec([None, None, 6]), tf.TensorSpec([None], tf.int32)])
    for n in range(length + 1):
        for lengths in ([n], [n, max(n - 3, 0)], [max(n - 1, 0), n]):
            rows = len(lengths)
            mask = np.arange(length) < np.array(lengths)[:, None]
            ours = np.asarray(run(x[:rows, :length], np.array(lengths, "int32")))
            reference = np.asarray(layer(x[:rows, :length], mask=mask, loop="keras"))
            np.testing.assert_allclose(ours, reference, atol=TOLERANCE, rtol=0, err_msg=f"lengths {lengths}")
            assert np.all(ours[~mask] == 0)
            padded = np.asarray(run(x[:rows], np.array(lengths, "int32")))  # three more padding positions
            np.testing.assert_array_equal(padded[:, :length], ours)
    with pytest.raises(ValueError, match="design must be one of steps, kernel"):
        tensorflow_lstm.few_rows_bidirectional(x, np.array([1, 1], "int32"), *cells, design="fast")


@pytest.mark.parametrize("loop, rows, expected", [("auto", (1, 1), "block_call"), ("auto", (5, 3), "packed_call"),
                                                  ("packed", (5, 3), "packed_call")])
def test_a_pair_of_batches_runs_as_one_packed_batch(loop, rows, expected):
    """`call_pair` (ESIM's premises and hypotheses through one encoder): where the loop packs, or runs
    TensorFlow's kernel (one pair: `KERNEL_ROWS`), one call on both, padded to the longer; each side's
    outputs are what a call on it alone gives."""
    layer = make_layer()
    x, mask = make_inputs()
    seen = []
    record_loops(layer, seen, rows=True)
    first, first_mask = x[:rows[0]], mask[:rows[0]]
    second, second_mask = x[-rows[1]:, :4], mask[-rows[1]:, :4]
    outputs = layer.call_pair(first, second, first_mask, second_mask, loop=loop)
    assert seen == [(expected, sum(rows))]                      # both sides' rows, one loop
    for ours, (x_side, mask_side) in zip(outputs, ((first, first_mask), (second, second_mask))):
        assert ours.shape == x_side.shape[:2] + (8,)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(layer(x_side, mask=mask_side, loop="keras")),
                                   atol=TOLERANCE)
    layer.call_pair(first, second, first_mask, second_mask, loop="keras")
    assert seen == [(expected, sum(rows))]                      # Keras's loops: two calls, no packing


# (requested, backend, device, training, xla) -> loop: every row of zoo.layers.loop_choice's table
LOOP_TABLE = [
    (("keras", "tensorflow", "cpu", True, False), "keras"),
    (("fused", "torch", "cpu", True, False), "keras"),
    (("auto", "numpy", "cpu", False, False), "keras"),
    (("auto", "tensorflow", "gpu", True, False), "keras"),
    (("auto", "jax", "gpu", True, True), "keras"),
    (("auto", "tensorflow", "cpu", True, False), "packed"),
    (("auto", "tensorflow", "cpu", False, False), "block"),
    (("auto", "tensorflow", "cpu", True, True), "fused"),
    (("auto", "jax", "cpu", True, True), "fused"),
    (("auto", "jax", "cpu", True, False), "fused"),
    (("auto", "tensorflow", "cpu", False, True), "keras"),
    (("auto", "jax", "cpu", False, True), "keras"),
    (("packed", "tensorflow", "gpu", False, False), "packed"),
    (("packed", "tensorflow", "cpu", True, True), "fused"),
    (("packed", "jax", "cpu", False, False), "fused"),
    (("packed", "tensorflow", "cpu", False, False), "packed"),
    (("block", "tensorflow", "cpu", False, False), "block"),
    (("block", "tensorflow", "gpu", False, False), "block"),
    (("block", "tensorflow", "cpu", True, False), "packed"),
    (("block", "tensorflow", "cpu", False, True), "fused"),
    (("block", "jax", "cpu", False, False), "fused"),
    (("fused", "tensorflow", "cpu", False, False), "fused"),
    (("fused", "jax", "gpu", True, True), "fused"),
]


@pytest.mark.parametrize("arguments, loop", LOOP_TABLE)
def test_the_loop_is_chosen_by_one_table(arguments, loop):
    assert choose_loop(*arguments) == loop


@pytest.mark.large
def test_the_loop_choice_refuses_an_unknown_request_and_models_pass_theirs():
    with pytest.raises(ValueError, match="must be one of auto, packed, block, fused, keras"):
        choose_loop("yes", "tensorflow", "cpu", True, False)
    from tests.support import models as tc

    model = tc.make_model("esim")
    with pytest.raises(ValueError, match="lstm_loop must be one of"):
        model.lstm_loop = "yes"
    seen = []
    layer = model.input_encoder
    record_loops(layer, seen)
    batch = tc.random_pairs(batch=1)
    model.explain(batch)                                         # one pair on a CPU: the kernel (one call, both sides)
    model.lstm_loop = "keras"
    model.explain(batch)
    reference = np.asarray(model(batch))                        # Keras's loops
    model.lstm_loop = "auto"
    model.explain(batch, xla=True)                               # fixed shapes: Keras's loops
    assert seen == ["block_call"]
    predicted = model.predict(batch, verbose=0)                  # Keras's own inference too
    assert seen == ["block_call", "block_call"]
    np.testing.assert_allclose(predicted, reference, atol=TOLERANCE, rtol=0)


def test_config_round_trips_and_old_configs_load():
    layer = BidirectionalLSTM(3, name="encoder")
    assert [layer.forward_layer.name, layer.backward_layer.name] == ["forward_encoder", "backward_encoder"]
    copy = BidirectionalLSTM.from_config(BidirectionalLSTM(3, name="encoder", loop="keras").get_config())
    assert copy.units == 3 and copy.loop == "keras" and copy.backward_layer.go_backwards
    old = {k: v for k, v in BidirectionalLSTM(3, name="encoder").get_config().items() if k != "loop"}
    assert BidirectionalLSTM.from_config({**old, "fused": True}).loop == "fused"   # saved before `loop`
    with pytest.raises(ValueError, match="loop must be"):
        BidirectionalLSTM(3, name="x", loop="yes")


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


@pytest.mark.large
def test_fused_loop_and_its_gradient_under_jax(tmp_path_factory):
    """The fused loop against Keras's, and one training step on either loop (`jax.custom_gradient`), in the
    session's one JAX subprocess (tests/support/jax_checks.py)."""
    result = jax_report(tmp_path_factory)
    assert result["returncode"] == 0 and result["report"], result["stderr"]
    recurrent = result["report"]["recurrent"]
    assert recurrent["step_error"] is None, recurrent["step_error"]
    assert recurrent["difference"] <= TOLERANCE


@pytest.mark.large
@pytest.mark.parametrize("name, loop", [("esim", "auto"), ("esim", "fused"), ("paria_bilstm", "auto")])
def test_a_training_step_of_a_model_is_the_same_on_either_loop(name, loop):
    """Whole models: one SGD step with the zoo's loops ("auto": packed under TensorFlow, fused under JAX;
    "fused") and one with Keras's move every weight alike (dropout off, so that both steps see the same
    function); the model's `lstm_loop` is the switch a user has."""
    same_step_on_either_loop(name, loop)
