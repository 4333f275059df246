"""Bidirectional LSTMs: Keras's `Bidirectional(LSTM)` weights, run on a CPU as one loop with its own gradient
(training) or as one loop over packed sequences (served inference, `packed_inference`)."""

import contextlib
import functools
import threading

import keras
from keras import ops

from zoo.layers.serializable import serializable


@serializable
class BidirectionalLSTM(keras.layers.Bidirectional):
    """A `keras.layers.Bidirectional` over two `keras.layers.LSTM`s that trains faster on a CPU: there both
    directions run in one loop, the input products taken out of it, with a hand-written gradient.

    The weights are exactly those of `Bidirectional(LSTM(units, return_sequences=True))`: the same
    variables under the same attribute paths, so that checkpoints of either load into the other; so is the
    output `[B, L, 2 * units]` (forward states, then backward states; zeros at masked positions), for masks
    whose real positions come first in each row (right padding; every model of the zoo gives its
    recurrent layers such masks, `zoo.layers.masking.recurrent_mask`), and so are the gradients.

    Which loop runs (`fused`):
    - `"auto"` (default): the fused loop for a training step (`training=True`) on a CPU under TensorFlow or
      JAX; for inference inside `packed_inference` (the exported SavedModel's serving graph) on a CPU under
      TensorFlow, the packed loop (`packed_call`: no work on padding); otherwise Keras's own
      `Bidirectional` (evaluation, `predict`, XLA, TFLite). A GPU keeps what the GPU figures were measured
      on (TensorFlow: two cuDNN LSTMs; JAX: two `lax.scan`s).
    - `True` / `False`: the fused loop for every training step (and packing where asked) / never.

    The fused loop (the LSTM as Keras computes it, gates i, f, g, o):

        Z_x = X W + b                  every position at once, one [B*L, D] x [D, 4h] product per direction
        z_t = Z_x[t] + h_{t-1} U       the two directions stacked: one batched product [2, B, h] x [2, h, 4h];
                                       the backward direction reads position L - 1 - t
        c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),   h_t = σ(o) ⊙ tanh(c_t)

    and its gradient (`lstm_loop`) is a second loop, backwards in time, whose only product per step is
    dz_t Uᵀ; the gradients of U, W and X are then each one large product over all steps
    (∂U = Σ_t h_{t-1}ᵀ dz_t). Keras's LSTM computes x_t W inside its loop, once per step and direction, and
    leaves the gradient to automatic differentiation of the loop, which adds two small products per step
    (the weight gradients over a batch of 32) and keeps every intermediate; on a CPU those small products
    bound a training step (`scripts/benchmark_training.py --profile`).

    Masks: nothing is masked inside the loop. The backward direction reads the right padding first; there
    its input gate is exactly 0 (the pre-activation set to -1e4), so its state stays exactly zero until
    the sentence's last word, as Keras's loop holds it; the forward direction runs on through the padding
    after the sentence, which no real position reads; the outputs are then zeroed at masked positions.

    Args:
        units: the size of each direction.
        name: the layer's name; the directions are `forward_{name}` and `backward_{name}`.
        fused: `"auto"`, True or False (above).
        **kwargs: `keras.layers.Layer` arguments (`dtype`, `trainable`); the LSTMs and their
            concatenation are fixed here.
    """

    def __init__(self, units, name, fused="auto", **kwargs):
        if fused not in ("auto", True, False):
            raise ValueError(f"fused must be 'auto', True or False, got {fused!r}")
        fixed = sorted(set(kwargs) & {"layer", "backward_layer", "merge_mode", "weights"})
        if fixed:  # both LSTMs are made here and their states concatenated
            raise TypeError(f"BidirectionalLSTM fixes {', '.join(fixed)}; got them as arguments")
        # Both directions are made here: given only the forward LSTM, Bidirectional makes the backward one
        # by serialising and deserialising it, and inside `keras.models.load_model` that copy runs in an
        # object-sharing scope keyed by `id()`, which could hand back an earlier, freed layer's twin
        # ("Forward layer and backward layer should have different `go_backwards` value").
        forward = keras.layers.LSTM(units, return_sequences=True, name=f"forward_{name}")
        backward = keras.layers.LSTM(units, return_sequences=True, go_backwards=True, name=f"backward_{name}")
        super().__init__(forward, backward_layer=backward, name=name, **kwargs)
        self.units = units
        self.fused = fused

    def uses_fused_loop(self):
        """Whether a training step (`training=True`) runs the fused loop on this backend and device."""
        if self.fused != "auto":
            return self.fused
        if keras.backend.backend() not in ("tensorflow", "jax"):
            return False
        devices = keras.distribution.list_devices()
        return not devices or devices[0].lower().startswith("cpu")

    def call(self, sequences, initial_state=None, mask=None, training=None):
        if initial_state is None and not training and _PACKING.on and self.uses_packed_loop():
            return self.packed_call(sequences, mask)
        if initial_state is not None or not training or not self.uses_fused_loop():
            return super().call(sequences, initial_state=initial_state, mask=mask, training=training)
        return self.fused_call(sequences, mask)

    def uses_packed_loop(self):
        """Whether inference under `packed_inference` runs the packed loop: on a CPU under TensorFlow (its
        row counts change from step to step, which XLA and JAX's tracing cannot take)."""
        return self.fused is not False and keras.backend.backend() == "tensorflow" and self.uses_fused_loop()

    def packed_call(self, x, mask=None):
        """Inference on packed sequences: no product on a padding position (`packed_inference`).

        The rows are sorted longest first and the backward direction reads each sentence reversed within
        its own length, so that at step t the rows still inside their sentence are the first n_t of both
        directions. The input products X W + b are one product per direction over the real tokens only
        (gathered time-major); each step then multiplies only the n_t live rows' states by U (both
        directions in one batched product [2, n_t, h] x [2, h, 4h]). Outputs are zeros at masked positions,
        as Keras's; same masks as the fused loop (right padding).
        """
        forward, backward = self.forward_layer.cell, self.backward_layer.cell
        h, dtype = self.units, x.dtype
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        if mask is None:
            lengths = ops.full((batch,), length, "int32")
        else:
            lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        order = ops.argsort(-lengths)                                                         # longest first
        lengths = ops.take(lengths, order)
        x = ops.take(x, order, axis=0)
        positions = ops.expand_dims(ops.arange(length, dtype="int32"), 0)                     # [1, L]
        real = positions < ops.expand_dims(lengths, 1)                                        # [B, L]
        reversed_within = ops.where(real, ops.expand_dims(lengths, 1) - 1 - positions, positions)
        backward_x = ops.take_along_axis(x, ops.expand_dims(reversed_within, -1), axis=1)
        live = ops.sum(ops.cast(ops.transpose(real), "int32"), axis=1)                        # [L]: n_t
        tokens = ops.reshape(ops.nonzero(ops.reshape(ops.transpose(real), (-1,)))[0], (-1,))  # time-major
        dim = ops.shape(x)[2]
        packed = ops.stack([ops.take(ops.reshape(ops.transpose(v, (1, 0, 2)), (-1, dim)), tokens, axis=0)
                            for v in (x, backward_x)])                                        # [2, N, D]
        kernel = ops.cast(ops.stack([forward.kernel.value, backward.kernel.value]), dtype)
        bias = ops.cast(ops.stack([forward.bias.value, backward.bias.value]), dtype)
        z = ops.add(ops.matmul(packed, kernel), ops.expand_dims(bias, 1))                     # [2, N, 4h]
        recurrent = ops.cast(ops.stack([forward.recurrent_kernel.value, backward.recurrent_kernel.value]), dtype)
        offsets = ops.cumsum(live) - live

        def step(carry, item):
            h_prev, c_prev = carry
            offset, n = item[0], item[1]
            h_live, c_live = h_prev[:, :n], c_prev[:, :n]
            gates = ops.add(ops.slice(z, (0, offset, 0), (2, n, 4 * h)), ops.matmul(h_live, recurrent))
            i, f, g, o = ops.split(gates, 4, axis=-1)
            c = ops.add(ops.multiply(ops.sigmoid(f), c_live), ops.multiply(ops.sigmoid(i), ops.tanh(g)))
            h_t = ops.multiply(ops.sigmoid(o), ops.tanh(c))
            carry = (ops.concatenate([h_t, h_prev[:, n:]], axis=1), ops.concatenate([c, c_prev[:, n:]], axis=1))
            return carry, carry  # Keras's TF scan: outputs shaped as the carry

        zeros = ops.zeros((2, batch, h), dtype)
        # one scanned tensor [L, 2]: Keras's TF scan fails on several of unknown length (keras 3.15)
        _, (states, _) = ops.scan(step, (zeros, zeros), ops.stack([offsets, live], axis=1))  # [L, 2, B, h]
        forward_states = ops.transpose(states[:, 0], (1, 0, 2))
        backward_states = ops.take_along_axis(ops.transpose(states[:, 1], (1, 0, 2)),
                                              ops.expand_dims(reversed_within, -1), axis=1)
        outputs = ops.multiply(ops.concatenate([forward_states, backward_states], axis=-1),
                               ops.expand_dims(ops.cast(real, dtype), -1))                    # [B, L, 2h]
        return ops.take(outputs, ops.argsort(order), axis=0)                                  # rows back in order

    def fused_call(self, x, mask=None):
        """The fused loop (class docstring): `x` `[B, L, D]`, `mask` `[B, L]` -> `[B, L, 2h]`."""
        forward, backward = self.forward_layer.cell, self.backward_layer.cell
        h, dtype = self.units, x.dtype
        batch = ops.shape(x)[0]
        x = ops.transpose(x, (1, 0, 2))                                                       # [L, B, D]
        # Z_x, one product per direction over every position, time-major from the start (the transposes
        # then move D-wide rows, not 4h-wide ones; no slicing of a joint product, whose gradient would copy)
        z_forward = ops.add(ops.matmul(x, ops.cast(forward.kernel.value, dtype)), ops.cast(forward.bias.value, dtype))
        z_backward = ops.add(ops.matmul(x, ops.cast(backward.kernel.value, dtype)),
                             ops.cast(backward.bias.value, dtype))                            # [L, B, 4h] each
        if mask is not None:
            real = ops.expand_dims(ops.transpose(ops.cast(mask, "bool")), -1)                 # [L, B, 1]
            closed = ops.logical_and(ops.logical_not(real), ops.arange(4 * h) < h)           # [L, B, 4h]: gate i
            z_backward = ops.where(closed, ops.cast(-1e4, dtype), z_backward)                # σ(-1e4) is 0 exactly
        steps = ops.concatenate([z_forward, ops.flip(z_backward, axis=0)], axis=1)           # [L, 2B, 4h]
        recurrent = ops.cast(ops.stack([forward.recurrent_kernel.value, backward.recurrent_kernel.value]), dtype)
        states = lstm_loop(steps, recurrent)                                                   # [L, 2B, h]
        outputs = ops.concatenate([states[:, :batch], ops.flip(states[:, batch:], axis=0)], axis=-1)  # [L, B, 2h]
        if mask is not None:
            outputs = ops.multiply(outputs, ops.cast(real, dtype))
        return ops.transpose(outputs, (1, 0, 2))                                              # [B, L, 2h]

    def get_config(self):
        config = super().get_config()
        for key in ("layer", "backward_layer", "merge_mode"):  # fixed by __init__
            config.pop(key, None)
        config.update(units=self.units, fused=self.fused)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@ops.custom_gradient
def lstm_loop(steps, recurrent):
    """LSTM states of `D` stacked directions over time, with a hand-written gradient.

    Args:
        steps: `[L, D*B, 4h]`, the input products and biases of every step (direction d in rows d*B ...).
        recurrent: `[D, h, 4h]`, each direction's recurrent kernel U (gates i, f, g, o).

    Returns:
        the states h_t `[L, D*B, h]`.
    """
    directions, h = ops.shape(recurrent)[0], ops.shape(recurrent)[1]
    rows = ops.shape(steps)[1]
    batch = rows // directions

    def times_recurrent(state, kernel):  # [D*B, k] x [D, k, m] -> [D*B, m], direction by direction
        product = ops.matmul(ops.reshape(state, (directions, batch, -1)), kernel)
        return ops.reshape(product, (rows, -1))

    def forward_step(carry, z_x):
        h_prev, c_prev, _ = carry
        gates = ops.add(z_x, times_recurrent(h_prev, recurrent))                            # [D*B, 4h]
        i, f, g, o = ops.split(gates, 4, axis=-1)
        i, f, g, o = ops.sigmoid(i), ops.sigmoid(f), ops.tanh(g), ops.sigmoid(o)
        c = ops.add(ops.multiply(f, c_prev), ops.multiply(i, g))
        h_t = ops.multiply(o, ops.tanh(c))
        activated = ops.concatenate([i, f, g, o], axis=-1)
        return (h_t, c, activated), (h_t, c, activated)  # Keras's TF scan: outputs shaped as the carry

    zeros = ops.zeros((rows, h), steps.dtype)
    _, (states, cells, activated) = ops.scan(forward_step, (zeros, zeros, ops.zeros_like(steps[0])), steps)

    def gradient(*args, upstream=None):
        if upstream is None:
            (upstream,) = args                                                                # dL/dh_t [L, D*B, h]
        previous_cells = ops.concatenate([ops.expand_dims(zeros, 0), cells[:-1]], axis=0)   # c_{t-1}
        transposed = ops.transpose(recurrent, (0, 2, 1))                                     # Uᵀ [D, 4h, h]
        # one scanned tensor per step: Keras's TF scan fails on several of unknown length (keras 3.15)
        inputs = ops.concatenate([upstream, activated, cells, previous_cells], axis=-1)      # [L, D*B, 7h]

        def backward_step(carry, item):
            dh_next, dc_next, _ = carry
            dh_t, i, f, g, o, c, c_prev = ops.split(item, [h, 2 * h, 3 * h, 4 * h, 5 * h, 6 * h], axis=-1)
            dh = ops.add(dh_t, dh_next)
            tanh_c = ops.tanh(c)
            dc = ops.add(dc_next, ops.multiply(ops.multiply(dh, o), ops.subtract(1.0, ops.square(tanh_c))))
            dz = ops.concatenate([ops.multiply(ops.multiply(dc, g), ops.multiply(i, ops.subtract(1.0, i))),
                                  ops.multiply(ops.multiply(dc, c_prev), ops.multiply(f, ops.subtract(1.0, f))),
                                  ops.multiply(ops.multiply(dc, i), ops.subtract(1.0, ops.square(g))),
                                  ops.multiply(ops.multiply(dh, tanh_c), ops.multiply(o, ops.subtract(1.0, o)))],
                                 axis=-1)                                                    # dL/dz_t [D*B, 4h]
            carry = (times_recurrent(dz, transposed), ops.multiply(dc, f), dz)                # dh_{t-1}, dc_{t-1}
            return carry, carry

        _, (_, _, dz) = ops.scan(backward_step, (zeros, zeros, ops.zeros_like(steps[0])), inputs, reverse=True)
        previous_states = ops.concatenate([ops.expand_dims(zeros, 0), states[:-1]], axis=0)  # h_{t-1}
        by_direction = lambda t: ops.reshape(ops.transpose(ops.reshape(t, (-1, directions, batch, ops.shape(t)[-1])),
                                                           (1, 0, 2, 3)), (directions, -1, ops.shape(t)[-1]))
        d_recurrent = ops.matmul(ops.transpose(by_direction(previous_states), (0, 2, 1)), by_direction(dz))
        return dz, d_recurrent                                                               # [L, D*B, 4h], [D, h, 4h]

    return states, gradient


class _Packing(threading.local):
    on = False


_PACKING = _Packing()


def packed_inference(function):
    """`function` with every `BidirectionalLSTM` it runs for inference (on a CPU under TensorFlow) on packed
    sequences (`BidirectionalLSTM.packed_call`): no work on padding, as PyTorch's packed LSTMs.

    The choice is made while `function` runs, so wrap what a `tf.function` traces, e.g.
    `tf.function(packed_inference(model.explain))` (the exported SavedModel's serving graph). Not for XLA
    (`jit_compile=True`), whose shapes are fixed: there the steps' row counts could not change.
    """

    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        with _packing():
            return function(*args, **kwargs)

    return wrapped


@contextlib.contextmanager
def _packing():
    before, _PACKING.on = _PACKING.on, True
    try:
        yield
    finally:
        _PACKING.on = before


def bidirectional_lstm(units, name):
    """A `BidirectionalLSTM` of `units` per direction named `name` (the zoo's bi-LSTM)."""
    return BidirectionalLSTM(units, name=name)
