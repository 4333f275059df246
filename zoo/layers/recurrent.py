"""Bidirectional LSTMs: Keras's `Bidirectional(LSTM)` weights, run on a CPU as one loop over packed sequences
(training under TensorFlow, served inference) or as one fused loop (training under JAX or XLA), each with
its own gradient (the loops: `zoo.layers.lstm_loops`)."""

import contextlib
import functools
import threading

import keras
from keras import ops

from zoo.layers.lstm_loops import lstm_loop, packed_lstm, packed_lstm_loop
from zoo.layers.serializable import serializable
from zoo.layers.traversal import iter_layers


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
    - `"auto"` (default): on a CPU, for a training step (`training=True`), the packed loop under TensorFlow
      (`packed_call`: no work on padding) and the fused loop under JAX or when the step compiles with XLA
      (`xla`, set by `zoo.training.kernels.use_xla_loops`: XLA's shapes are fixed); for inference inside
      `packed_inference` (the exported SavedModel's serving graph) on a CPU under TensorFlow, the packed
      loop; otherwise Keras's own `Bidirectional` (evaluation, `predict`, TFLite). A GPU keeps what the GPU
      figures were measured on (TensorFlow: two cuDNN LSTMs; JAX: two `lax.scan`s).
    - `True`: the fused loop for every training step (packing only inside `packed_inference`).
    - `"packed"`: the packed loop for every training step where it can run (TensorFlow without XLA), else
      the fused loop.
    - `False`: Keras's loops only.

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
        fused: `"auto"`, True, `"packed"` or False (above).
        **kwargs: `keras.layers.Layer` arguments (`dtype`, `trainable`); the LSTMs and their
            concatenation are fixed here.
    """

    def __init__(self, units, name, fused="auto", **kwargs):
        if fused not in ("auto", True, "packed", False):
            raise ValueError(f"fused must be 'auto', True, 'packed' or False, got {fused!r}")
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
        self.xla = False  # the training step compiles with XLA: no packing then (fixed shapes); follow_jit_compile

    def uses_fused_loop(self):
        """Whether a training step (`training=True`) runs the fused loop on this backend and device."""
        if self.fused != "auto":
            return self.fused is not False
        if keras.backend.backend() not in ("tensorflow", "jax"):
            return False
        devices = keras.distribution.list_devices()
        return not devices or devices[0].lower().startswith("cpu")

    def call(self, sequences, initial_state=None, mask=None, training=None, transform=None):
        if initial_state is None and self.packs(training):
            return self.packed_call(sequences, mask, training=bool(training), transform=transform)
        if transform is not None:
            sequences = transform(sequences)
        if initial_state is not None or not training or not self.uses_fused_loop():
            return super().call(sequences, initial_state=initial_state, mask=mask, training=training)
        return self.fused_call(sequences, mask)

    def uses_packed_loop(self):
        """Whether the packed loop can run here: on a CPU under TensorFlow without XLA (its row counts change
        from step to step, which XLA and JAX's tracing cannot take)."""
        return (self.fused is not False and not self.xla and keras.backend.backend() == "tensorflow"
                and self.uses_fused_loop())

    def packs(self, training):
        """Whether this call runs `packed_call`: a training step (`fused` "auto" or "packed"), or inference
        inside `packed_inference`, where the packed loop can run."""
        if training:
            return self.fused in ("auto", "packed") and self.uses_packed_loop()
        return _PACKING.on and self.uses_packed_loop()

    def packed_call(self, x, mask=None, training=False, transform=None):
        """A bi-LSTM on packed sequences: no product on a padding position (`packed_inference`, and training
        steps on a CPU under TensorFlow).

        The rows are sorted longest first and the backward direction reads each sentence reversed within
        its own length, so that at step t the rows still inside their sentence are the first n_t of both
        directions. The input products X W + b are one product per direction over the real tokens only
        (gathered time-major); each step then multiplies only the n_t live rows' states by U (both
        directions in one batched product [2, n_t, h] x [2, h, 4h]), for as many steps as the longest
        sentence has words. Training runs `packed_lstm_loop`, whose gradient loops over the same live rows.
        Outputs are zeros at masked positions, as Keras's; same masks as the fused loop (right padding).

        `transform` (any `call`): a position-wise function applied to the inputs first (e.g. ESIM's F); here
        it runs on the real tokens only, elsewhere on every position.
        """
        forward, backward = self.forward_layer.cell, self.backward_layer.cell
        batch, length, dim = ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[2]
        if mask is None:
            lengths = ops.full((batch,), length, "int32")
        else:
            lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        order = ops.argsort(-lengths)                                    # sorted row k is row order[k] of x
        sorted_lengths = ops.take(lengths, order)
        positions = ops.expand_dims(ops.arange(length, dtype="int32"), 0)                     # [1, L]
        real = positions < ops.expand_dims(sorted_lengths, 1)                                 # [B, L], sorted
        live = ops.sum(ops.cast(real, "int32"), axis=0)                                       # [L]: n_t
        tokens = ops.reshape(ops.nonzero(ops.reshape(ops.transpose(real), (-1,)))[0], (-1,))  # time-major, N
        # the real tokens, time-major, read straight from x: (step t, sorted row k) is x[order[k], t]
        source = ops.expand_dims(order, 0) * length + ops.transpose(positions)                # [L, B]
        inputs = ops.take(ops.reshape(x, (-1, dim)), ops.take(ops.reshape(source, (-1,)), tokens), axis=0)  # [N, D]
        if transform is not None:
            inputs = transform(inputs)                                   # position-wise: real tokens only
        # (k, t) -> its row in the packed steps: offset_t + k; the backward direction's step t reads
        # position len_k - 1 - t; padding -> N, a row of zeros
        offsets = ops.cumsum(live) - live
        index = ops.where(real, ops.expand_dims(offsets, 0) + ops.expand_dims(ops.arange(batch, dtype="int32"), 1),
                          ops.shape(tokens)[0])                                               # [B, L]
        reversed_within = ops.where(real, ops.expand_dims(sorted_lengths, 1) - 1 - positions, positions)
        backward_index = ops.take_along_axis(index, reversed_within, axis=1)                  # [B, L]
        backward_rows = ops.take(ops.reshape(ops.transpose(backward_index), (-1,)), tokens)   # [N]
        dtype = inputs.dtype
        z = ops.stack([ops.add(ops.matmul(v, ops.cast(cell.kernel.value, dtype)), ops.cast(cell.bias.value, dtype))
                       for v, cell in ((inputs, forward), (ops.take(inputs, backward_rows, axis=0), backward))])
        kernels = [ops.cast(cell.recurrent_kernel.value, dtype) for cell in (forward, backward)]  # Z_x [2, N, 4h]
        steps = ops.minimum(ops.max(ops.concatenate([lengths, ops.ones((1,), "int32")])), length)
        live = ops.slice(live, (0,), (steps,))
        states = packed_lstm_loop(z, ops.stack(kernels), live) if training else packed_lstm(z, kernels, live)
        states = ops.concatenate([states, ops.zeros((2, 1, self.units), dtype)], axis=1)      # [2, N + 1, h]
        rank = ops.argsort(order)                                                             # rows back in order
        forward_states = ops.take(states[0], ops.take(index, rank, axis=0), axis=0)          # [B, L, h]
        backward_states = ops.take(states[1], ops.take(backward_index, rank, axis=0), axis=0)
        return ops.concatenate([forward_states, backward_states], axis=-1)                    # [B, L, 2h]

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


def follow_jit_compile(model):
    """Tells every `BidirectionalLSTM` inside `model` whether `model`'s steps compile with XLA
    (`model.jit_compile`, as `compile` resolved it): there a training step runs the fused loop, since the
    packed loop's shapes change from step to step. The zoo's models call it from
    `make_train_function`, `NLIClassifier` from `compile`."""
    xla = bool(getattr(model, "jit_compile", False))
    for layer in iter_layers(model):
        if isinstance(layer, BidirectionalLSTM):
            layer.xla = xla


def bidirectional_lstm(units, name):
    """A `BidirectionalLSTM` of `units` per direction named `name` (the zoo's bi-LSTM)."""
    return BidirectionalLSTM(units, name=name)
