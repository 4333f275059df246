"""Bidirectional LSTMs: Keras's `Bidirectional(LSTM)` weights, run on a CPU as one loop over packed sequences
(training and inference under TensorFlow) or as one fused loop (training under JAX or XLA), each with its
own gradient (the loops: `zoo.layers.lstm_loops`; which one runs: `zoo.layers.loop_choice`)."""

import contextlib

import keras
from keras import ops

from zoo.layers.loop_choice import DESIGNS, KERNEL_ROWS, check_request, choose_loop, device_kind
from zoo.layers.lstm_loops import lstm_loop, lstm_states, packed_lstm, packed_lstm_loop
from zoo.layers.masking import real_lengths
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

    Which loop runs is chosen per call by `zoo.layers.loop_choice.choose_loop` (its table) from the backend,
    the device, `training`, whether the graph compiles with fixed shapes (`xla`, told by the caller: the
    zoo's models pass their own `jit_compile`) and the loop asked for (the call's `loop`, else the layer's):
    on a CPU under TensorFlow, the packed loop for training and for inference on more than `KERNEL_ROWS` rows
    (`packed_call`: no work on padding) and `zoo.layers.tensorflow_lstm`'s few-rows loop for inference on
    fewer (`block_call`); under XLA or JAX, the fused loop for a training step and Keras's `Bidirectional` for
    inference; on a GPU, Keras's (cuDNN under TensorFlow, `lax.scan` under JAX).

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
        loop: the loop asked for: `"auto"` (default), `"packed"`, `"block"`, `"fused"` or `"keras"`
            (`zoo.layers.loop_choice`); a call's `loop` argument wins over it.
        **kwargs: `keras.layers.Layer` arguments (`dtype`, `trainable`); the LSTMs and their
            concatenation are fixed here.
    """

    def __init__(self, units, name, loop="auto", **kwargs):
        check_request(loop, "loop")
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
        self.loop = loop

    def loop_for(self, training=False, xla=False, loop=None):
        """The loop a call with these arguments runs here (`zoo.layers.loop_choice.choose_loop`)."""
        return choose_loop(loop or self.loop, keras.backend.backend(), device_kind(), bool(training), bool(xla),
                           self.compute_dtype)

    def call(self, sequences, initial_state=None, mask=None, training=None, xla=False, loop=None, transform=None):
        """`sequences` `[B, L, D]` -> `[B, L, 2h]`.

        Args:
            xla: whether the caller's graph compiles with fixed shapes (a step with `jit_compile=True`, the
                SavedModel's XLA path, the TFLite converter): no packed loop there.
            loop: the loop asked for in this call (None: the layer's `loop`).
            transform: a position-wise function applied to `sequences` first (e.g. ESIM's F); on the packed
                loop it runs on the real tokens only.
        """
        chosen = "keras" if initial_state is not None else self.loop_for(training, xla, loop)
        if chosen == "block":
            return ops.cond(ops.shape(sequences)[0] <= KERNEL_ROWS, lambda: self.block_call(sequences, mask, transform),
                            lambda: self.packed_call(sequences, mask, transform=transform))
        if chosen == "packed":
            return self.packed_call(sequences, mask, training=bool(training), transform=transform)
        if transform is not None:
            sequences = transform(sequences)
        if chosen == "fused":
            return self.fused_call(sequences, mask, training=bool(training))
        return super().call(sequences, initial_state=initial_state, mask=mask, training=training)

    def call_pair(self, first, second, first_mask, second_mask, training=None, xla=False, loop=None,
                  transform=None):
        """The layer on two batches of sequences (e.g. premises and hypotheses): `(outputs of first, outputs
        of second)`.

        For inference on the packed loop with at most `JOINED_ROWS` rows a side, both run as one batch of
        2B rows padded to the longer length: one loop of max(L1, L2) steps instead of two of L1 and L2 (the
        padding costs nothing there: no product on a padding position). A step's products at a few rows
        are bound by reading the recurrent kernel, not by the rows, so halving the steps pays at batch 1;
        at 32 rows, and for training steps, whose gradient loop carries every row of the joined batch, two
        calls are faster (`scripts/benchmark_serving.py` measures both; docs/speed.md). Elsewhere (other
        loops, larger batches) two calls, without that padding. On the `"block"`
        loop one pair's two joined rows run TensorFlow's kernel (`KERNEL_ROWS`): two ops of max(L1, L2)
        steps, one per direction, side by side on two inter-op threads."""
        def separate():
            return tuple(self(x, mask=m, training=training, xla=xla, loop=loop, transform=transform)
                         for x, m in ((first, first_mask), (second, second_mask)))

        chosen = self.loop_for(training, xla, loop)
        if training or chosen not in ("packed", "block"):
            return separate()
        rows = ops.shape(first)[0]
        first, second = ops.cast(first, self.compute_dtype), ops.cast(second, self.compute_dtype)

        def joined(run):
            lengths = (ops.shape(first)[1], ops.shape(second)[1])
            length = ops.maximum(*lengths)
            padded = [(ops.pad(x, ((0, 0), (0, length - n), (0, 0))), ops.pad(m, ((0, 0), (0, length - n))))
                      for x, m, n in ((first, first_mask, lengths[0]), (second, second_mask, lengths[1]))]
            outputs = run(ops.concatenate([padded[0][0], padded[1][0]], axis=0),
                          ops.concatenate([padded[0][1], padded[1][1]], axis=0))     # [2B, L, 2h]
            return outputs[:rows, :lengths[0]], outputs[rows:, :lengths[1]]

        def packed(x, mask):
            return self.packed_call(x, mask, transform=transform)

        def packed_pair():  # each branch runs its loop directly: no second choice inside it
            return ops.cond(rows <= JOINED_ROWS, lambda: joined(packed),
                            lambda: (packed(first, first_mask), packed(second, second_mask)))

        if chosen == "packed":
            return packed_pair()
        return ops.cond(2 * rows <= KERNEL_ROWS, lambda: joined(lambda x, mask: self.block_call(x, mask, transform)),
                        packed_pair)

    def packed_call(self, x, mask=None, training=False, transform=None):
        """A bi-LSTM on packed sequences: no product on a padding position (training and inference on a CPU
        under TensorFlow).

        The rows are sorted longest first and the backward direction reads each sentence reversed within
        its own length, so that at step t the rows still inside their sentence are the first n_t of both
        directions. The input products X W + b are one product per direction over the real tokens only
        (gathered time-major); each step then multiplies only the n_t live rows' states by U (one product
        [n_t, h] x [h, 4h] per direction), for as many steps as the longest
        sentence has words. Training runs `packed_lstm_loop`, whose gradient loops over the same live rows.
        Outputs are zeros at masked positions, as Keras's; same masks as the fused loop (right padding).

        `transform` (any `call`): a position-wise function applied to the inputs first (e.g. ESIM's F); here
        it runs on the real tokens only, elsewhere on every position.
        """
        forward, backward = self.forward_layer.cell, self.backward_layer.cell
        batch, length, dim = ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[2]
        lengths = real_lengths(mask, x)
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
        rows = ops.shape(tokens)[0] + 1
        states = ops.reshape(ops.concatenate([states, ops.zeros((2, 1, self.units), dtype)], axis=1),
                             (2 * rows, self.units))                                  # [2(N + 1), h]: forward, backward
        rank = ops.argsort(order)                                                             # rows back in order
        # both directions in one gather (its gradient one scatter): [B, L, 2] rows of the flat states
        both = ops.stack([ops.take(index, rank, axis=0), ops.take(backward_index, rank, axis=0) + rows], axis=-1)
        return ops.reshape(ops.take(states, both, axis=0), (batch, length, 2 * self.units))  # [B, L, 2h]

    def block_call(self, x, mask=None, transform=None):
        """Inference on a few rows (`zoo.layers.tensorflow_lstm`'s step loop, which reads only U per step,
        or TensorFlow's own LSTM kernel; the `"block"` loop, TensorFlow only): `x` `[B, L, D]`, `mask`
        `[B, L]` (right padding) -> `[B, L, 2h]`, zeros at masked positions. Every row runs for as many
        steps as the longest has words; at a few rows a step costs its weights' read, not its rows.
        `transform` runs on every position here."""
        from zoo.layers.tensorflow_lstm import few_rows_bidirectional  # TensorFlow only: this loop's kernels

        if transform is not None:
            x = transform(x)
        return few_rows_bidirectional(x, real_lengths(mask, x), self.forward_layer.cell, self.backward_layer.cell)

    def fused_call(self, x, mask=None, training=True):
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
        states = lstm_loop(steps, recurrent) if training else lstm_states(steps, recurrent)   # [L, 2B, h]
        outputs = ops.concatenate([states[:, :batch], ops.flip(states[:, batch:], axis=0)], axis=-1)  # [L, B, 2h]
        if mask is not None:
            outputs = ops.multiply(outputs, ops.cast(real, dtype))
        return ops.transpose(outputs, (1, 0, 2))                                              # [B, L, 2h]

    def get_config(self):
        config = super().get_config()
        for key in ("layer", "backward_layer", "merge_mode"):  # fixed by __init__
            config.pop(key, None)
        config.update(units=self.units, loop=self.loop)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "fused" in config:  # saved before the loop was named: fused "auto" / "packed" / True / False
            config["loop"] = LEGACY_FUSED[config.pop("fused")]
        return cls(**config)


JOINED_ROWS = 8  # call_pair: inference batches up to this many rows a side run as one packed loop

# the `fused` argument of models saved before `loop`: its values as loops asked for
LEGACY_FUSED = {"auto": "auto", "packed": "packed", True: "fused", False: "keras"}


def set_few_rows_loop(design=None, kernel_rows=None):
    """Sets, for the bi-LSTMs traced from now on, the few-rows loop's design (`zoo.layers.tensorflow_lstm.DESIGN`,
    under TensorFlow only) and the largest batch in rows that runs it (`KERNEL_ROWS`); None keeps a value.
    Both are read while tracing, so a traced graph keeps what was set when it was traced.

    Returns:
        `(design, kernel_rows)` as they were before (`few_rows_loop` puts them back).
    """
    global KERNEL_ROWS
    if design is not None and design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if kernel_rows is not None and int(kernel_rows) < 1:
        raise ValueError(f"kernel_rows must be a positive whole number, got {kernel_rows!r}")
    previous_design = None
    if keras.backend.backend() == "tensorflow":
        from zoo.layers import tensorflow_lstm  # TensorFlow only: the module of the designs

        previous_design = tensorflow_lstm.DESIGN
        tensorflow_lstm.DESIGN = design or previous_design
    previous_rows = KERNEL_ROWS
    KERNEL_ROWS = int(kernel_rows or previous_rows)
    return previous_design, previous_rows


@contextlib.contextmanager
def few_rows_loop(design=None, kernel_rows=None):
    """`set_few_rows_loop` for what is traced inside the block; the values before it are put back after."""
    previous = set_few_rows_loop(design, kernel_rows)
    try:
        yield
    finally:
        set_few_rows_loop(*previous)


def bidirectional_lstm(units, name):
    """A `BidirectionalLSTM` of `units` per direction named `name` (the zoo's bi-LSTM)."""
    return BidirectionalLSTM(units, name=name)
