"""TensorFlow's own LSTM kernel, for a bi-LSTM's inference on a few rows (`BidirectionalLSTM.block_call`).

`BlockLSTMV2` is a core TensorFlow op (tensorflow/core/kernels/rnn/lstm_ops.cc, in every TensorFlow build and
so in TF Serving's): one op runs a whole sequence, each step one product [x_t; h_{t-1}] [W; U] + b in C++,
with Keras's gate order (i, f, c, o) and no peepholes or clipping, so Keras's LSTM weights go in as they are.
A while loop of Keras ops pays TensorFlow's executor per op and step instead (some thirty small ops a step
of the packed loop), which at one pair costs more than the products themselves; two directions, as two
ops, run side by side on two inter-op threads.

This is the one module of `zoo.layers` that imports TensorFlow. `zoo.layers.recurrent` imports it only when
`zoo.layers.loop_choice` chose the `"block"` loop, which it does only under Keras's TensorFlow backend (as
Keras's own LSTM reaches cuDNN through its TensorFlow backend); every other loop is Keras ops.
"""

import tensorflow as tf


def block_bidirectional(x, lengths, forward, backward):
    """Both directions of a bi-LSTM over right-padded rows, on `BlockLSTMV2`.

    Args:
        x: `[B, L, D]` inputs (float32).
        lengths: `[B]` int32, each row's real length (its real positions come first).
        forward, backward: the two `keras.layers.LSTMCell`s (`kernel`, `recurrent_kernel`, `bias`).

    Returns:
        `[B, L, 2h]`: forward states, then backward states; zeros at padding, as Keras's `Bidirectional`.
    """
    length = tf.shape(x)[1]
    steps = tf.cast(tf.reduce_max(tf.concat([lengths, [0]], 0)), tf.int64)            # the longest row
    x = tf.transpose(x, (1, 0, 2))                                                       # [L, B, D]

    def reversed_within(t):  # each row reversed within its own length: the backward direction reads it forwards
        return tf.reverse_sequence(t, lengths, seq_axis=0, batch_axis=1)

    states_forward = _block_lstm(x, steps, forward)                                      # [L, B, h]
    states_backward = reversed_within(_block_lstm(reversed_within(x), steps, backward))
    real = tf.expand_dims(tf.transpose(tf.sequence_mask(lengths, length, x.dtype)), -1)  # [L, B, 1]
    # the forward direction runs on through a shorter row's padding (until the longest row ends): zeroed here
    return tf.transpose(tf.concat([states_forward, states_backward], -1) * real, (1, 0, 2))  # [B, L, 2h]


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
