"""The additive attention step shared by the attention LSTMs.

Rocktäschel et al. (2016) Eq. 7-9 and 11-13 and Wang & Jiang (2016) Eq. 6 all score each memory
position j (a premise output vector y_j) against a query q with

    m_j = tanh(W^y y_j + q)          (q = W^h h_t [+ W^r r_{t-1}] [+ W^m h^m_{k-1}])
    alpha = softmax_j(w^T m_j)        over the real memory positions only
    context = sum_j alpha_j y_j

`W^y Y` never depends on the step, so callers compute it once, outside any recurrence, and pass it in.
"""

import keras
from keras import ops

from zoo.layers.masking import masked_softmax
from zoo.layers.serializable import serializable


@serializable
class AttentionScore(keras.layers.Layer):
    """The score vector w of additive attention: maps `M` `[B, L, k]` to `w^T M` `[B, L]`.

    Written as an einsum with a rank-1 weight (not a `Dense(1)`), so that its gradient inside a
    recurrent loop needs no dynamic transpose and compiles under XLA.
    """

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="glorot_uniform")
        self.built = True

    def call(self, m):
        return ops.einsum("blk,k->bl", m, self.w)


def additive_attention(memory, memory_projection, query_projection, memory_mask, score):
    """One additive attention read over a fixed memory.

    Args:
        memory: `[B, L, d]` vectors to read (Y).
        memory_projection: `[B, L, k]` precomputed `W^y Y`.
        query_projection: `[B, k]` the step's query term (already projected).
        memory_mask: `[B, L]` boolean, True at real positions.
        score: an `AttentionScore` (the vector w).

    Returns:
        `(context [B, d], weights [B, L] float32)`; weights sum to one over real positions.
    """
    m = ops.tanh(memory_projection + ops.expand_dims(query_projection, 1))  # [B, L, k]   Eq. 7 / 11
    scores = score(m)                                                     # [B, L]      Eq. 8 / 12
    weights = masked_softmax(scores, memory_mask)                           # [B, L] float32
    context = ops.einsum("bl,bld->bd", ops.cast(weights, memory.dtype), memory)  # Eq. 9 / 13
    return context, weights
