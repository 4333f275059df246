"""A bi-LSTM's inference on a few rows under TensorFlow (`BidirectionalLSTM.block_call`), in one of two designs.

- `"steps"` (default, `steps_bidirectional`): the input products Z_x = X W + b of every step are taken once,
  before the loop (one product per direction); each step of a `tf.while_loop` then reads only the recurrent
  kernel U `[h, 4h]` and its own row of Z_x: z_t = Z_x[t] + h_{t-1} U, then the gates, in a few ops (one
  sigmoid over all four gates' pre-activations, one tanh over g's). The loop takes `UNROLL` steps per
  iteration, so that the loop's own bookkeeping (a counter, a condition, the carried states) is paid once per
  `UNROLL` steps; the steps left over run in a second, one-step loop.
- `"kernel"` (`block_bidirectional`): TensorFlow's own LSTM kernel, `tf.raw_ops.BlockLSTMV2` (in every
  TensorFlow build and so in TF Serving's): one op per direction for the whole sequence, each step one
  product [x_t; h_{t-1}] [W; U] + b in C++ with Keras's gate order (i, f, c, o) and no peepholes or clipping.
  Its per-op cost is lowest, but every step reads [W; U] `[D + h, 4h]` (twice U at D = h), and [W; U] is
  copied (concatenated) once per call.

Bytes a step reads, one direction, float32, at D = h: the kernel 4(D + h) 4h = 32 h² (2.88 MB at h = 300),
the step loop 4 h 4h = 16 h² (1.44 MB) plus its row of Z_x (16 h bytes a row). Neither fits a 512 KiB L2;
the step loop's U fits a 2 MB one, the kernel's [W; U] does not. Where U comes from L2 or L3, a step's
product is bound by that read (a few rows make it a matrix-vector product); the step loop's bookkeeping,
some twenty small ops a step, is the price of halving it.

Both directions run as two independent loops (or ops), side by side on two inter-op threads.

This is the one module of `zoo.layers` that imports TensorFlow. `zoo.layers.recurrent` imports it only when
`zoo.layers.loop_choice` chose the `"block"` loop, which it does only under Keras's TensorFlow backend (as
Keras's own LSTM reaches cuDNN through its TensorFlow backend); every other loop is Keras ops.
"""

import tensorflow as tf

from zoo.layers.loop_choice import DEFAULT_DESIGN, DESIGNS

DESIGN = DEFAULT_DESIGN  # read while tracing: the design `few_rows_bidirectional` builds (`few_rows_loop`)
UNROLL = 4        # steps per iteration of the step loop


def few_rows_bidirectional(x, lengths, forward, backward, design=None):
    """Both directions of a bi-LSTM over right-padded rows, in `design` (None: `DESIGN`).

    Args:
        x: `[B, L, D]` inputs (float32).
        lengths: `[B]` int32, each row's real length (its real positions come first).
        forward, backward: the two `keras.layers.LSTMCell`s (`kernel`, `recurrent_kernel`, `bias`).
        design: `"steps"` or `"kernel"` (the module's docstring).

    Returns:
        `[B, L, 2h]`: forward states, then backward states; zeros at padding, as Keras's `Bidirectional`.
    """
    design = design or DESIGN
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    run = steps_bidirectional if design == "steps" else block_bidirectional
    return run(x, lengths, forward, backward)


def block_bidirectional(x, lengths, forward, backward):
    """`few_rows_bidirectional` on `BlockLSTMV2` (the `"kernel"` design)."""
    length = tf.shape(x)[1]
    steps = tf.cast(_longest(lengths), tf.int64)
    x = tf.transpose(x, (1, 0, 2))                                                       # [L, B, D]

    def reversed_within(t):  # each row reversed within its own length: the backward direction reads it forwards
        return tf.reverse_sequence(t, lengths, seq_axis=0, batch_axis=1)

    states_forward = _block_lstm(x, steps, forward)                                      # [L, B, h]
    states_backward = reversed_within(_block_lstm(reversed_within(x), steps, backward))
    return _batch_major(tf.concat([states_forward, states_backward], -1), lengths, length)


def steps_bidirectional(x, lengths, forward, backward):
    """`few_rows_bidirectional` on a step loop that reads only U (the `"steps"` design)."""
    length = tf.shape(x)[1]
    steps = tf.maximum(_longest(lengths), 1)  # at least one step: no loop of none (its states are zeroed)
    x = tf.transpose(x[:, :steps], (1, 0, 2))                                           # [T, B, D]
    lengths = tf.minimum(lengths, steps)

    def reversed_within(t):
        return tf.reverse_sequence(t, lengths, seq_axis=0, batch_axis=1)

    states_forward = _step_loop(_input_products(x, forward), forward)                   # [T, B, h]
    states_backward = reversed_within(_step_loop(_input_products(reversed_within(x), backward), backward))
    states = tf.concat([states_forward, states_backward], -1)                            # [T, B, 2h]
    states = tf.pad(states, [[0, length - steps], [0, 0], [0, 0]])                       # [L, B, 2h]
    return _batch_major(states, lengths, length)


def _longest(lengths):
    return tf.reduce_max(tf.concat([lengths, [0]], 0))


def _batch_major(states, lengths, length):
    """Time-major states `[L, B, 2h]` -> `[B, L, 2h]`, zeros at padding (the forward direction runs on
    through a shorter row's padding until the longest row ends)."""
    real = tf.expand_dims(tf.transpose(tf.sequence_mask(lengths, length, states.dtype)), -1)  # [L, B, 1]
    return tf.transpose(states * real, (1, 0, 2))


def _input_products(x, cell):
    """Z_x = X W + b `[T, B, 4h]` of time-major `x` `[T, B, D]`: one product over every step."""
    shape = tf.shape(x)
    z = tf.matmul(tf.reshape(x, (-1, shape[2])), cell.kernel.value) + cell.bias.value
    return tf.reshape(z, (shape[0], shape[1], -1))


def _step_loop(z, cell):
    """h_t `[T, B, h]` of one LSTM from its input products `z` `[T, B, 4h]` (T >= 1): z_t = Z_x[t] + h_{t-1} U,
    `UNROLL` steps per iteration, then the steps left over one at a time."""
    recurrent = cell.recurrent_kernel.value                                              # U [h, 4h]
    units = recurrent.shape[0]
    steps, rows = tf.shape(z)[0], tf.shape(z)[1]
    blocks = steps // UNROLL
    outputs = tf.TensorArray(z.dtype, size=steps, element_shape=tf.TensorShape([None, units]))

    def step(z_t, h, c):  # Keras's LSTM, gates i, f, g, o
        z_t = z_t + tf.matmul(h, recurrent)
        i, f, _, o = tf.split(tf.sigmoid(z_t), 4, axis=-1)
        c = f * c + i * tf.tanh(z_t[:, 2 * units:3 * units])
        return o * tf.tanh(c), c

    def unrolled(t, h, c, outputs):
        for k, z_t in enumerate(tf.unstack(z[t * UNROLL:(t + 1) * UNROLL], UNROLL)):
            h, c = step(z_t, h, c)
            outputs = outputs.write(t * UNROLL + k, h)
        return t + 1, h, c, outputs

    def single(t, h, c, outputs):
        h, c = step(z[t], h, c)
        return t + 1, h, c, outputs.write(t, h)

    zeros = tf.zeros((rows, units), z.dtype)
    _, h, c, outputs = tf.while_loop(lambda t, *_: t < blocks, unrolled, (0, zeros, zeros, outputs))
    _, _, _, outputs = tf.while_loop(lambda t, *_: t < steps, single, (blocks * UNROLL, h, c, outputs))
    return outputs.stack()                                                               # [T, B, h]


def _block_lstm(x, steps, cell):
    """h_t `[L, B, h]` of one LSTM over time-major `x` `[L, B, D]` for `steps` steps (zeros after them)."""
    units = tf.shape(cell.recurrent_kernel)[0]
    rows = tf.shape(x)[1]
    zeros = tf.zeros((rows, units), x.dtype)
    no_peephole = tf.zeros((units,), x.dtype)
    weights = tf.concat([cell.kernel.value, cell.recurrent_kernel.value], 0)            # [W; U] [D + h, 4h]
    outputs = tf.raw_ops.BlockLSTMV2(seq_len_max=steps, x=x, cs_prev=zeros, h_prev=zeros, w=weights,
                                     wci=no_peephole, wcf=no_peephole, wco=no_peephole, b=cell.bias.value,
                                     cell_clip=-1.0, use_peephole=False)                 # cell_clip < 0: none
    return outputs[6]                                                                    # h [L, B, h]
