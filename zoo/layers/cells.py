"""Recurrent cells whose every step attends over a fixed premise memory.

Keras 3's `RNN` layer has no `constants` argument, so the premise tensors that every step reads are
handed to the cell with `cell.bind_memory(...)` just before the `RNN` layer runs it, and released with
`cell.release_memory()` afterwards. Everything that does not depend on the previous step (the
projection of the premise, the projection of each step's input) is computed by the caller, once,
outside the loop; a cell step holds only the work that needs the previous state.
"""

import keras
from keras import ops

from zoo.layers.attention import AttentionScore, additive_attention


class _MemoryCell(keras.layers.Layer):
    """Holds the premise memory a recurrent attention cell reads at every step."""

    def bind_memory(self, memory, memory_projection, memory_mask):
        """Sets the premise outputs Y `[B, L, d]`, their projection `W^y Y` `[B, L, k]` and mask `[B, L]`."""
        self._memory = (memory, memory_projection, memory_mask)

    def release_memory(self):
        self._memory = None

    def _read_memory(self):
        memory = getattr(self, "_memory", None)
        if memory is None:
            raise RuntimeError(f"{type(self).__name__}: bind_memory() must be called before the cell runs")
        return memory


class WordByWordAttentionCell(_MemoryCell):
    """Rocktäschel et al. (2016) word-by-word attention, Eq. 11-13, as one recurrent step.

    Per hypothesis position t, with state r_{t-1} and step input `W^h h_t` (precomputed):

        M_t = tanh(W^y Y + (W^h h_t + W^r r_{t-1}) ⊗ e_L)      (11)
        α_t = softmax(w^T M_t)                                  (12)
        r_t = Y α_t^T + tanh(W^t r_{t-1})                        (13)

    The step output is α_t `[B, L]` (float32), so an `RNN(..., return_sequences=True)` returns the
    whole attention map; the final state is r_N.

    Args:
        units: k, the size of r and of the projections.
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        init = "glorot_uniform"
        self.recurrent_attention_kernel = self.add_weight(  # W^r
            name="W_r", shape=(self.units, self.units), initializer=init)
        self.transition_kernel = self.add_weight(  # W^t
            name="W_t", shape=(self.units, self.units), initializer=init)
        self.score = AttentionScore(name="w")  # w
        self.score.build((None, None, self.units))
        self.built = True

    def call(self, query_projection, states, training=False):
        memory, memory_projection, memory_mask = self._read_memory()
        previous = states[0]                                                     # r_{t-1} [B, k]
        query = query_projection + ops.matmul(previous, self.recurrent_attention_kernel)  # (11)
        context, weights = additive_attention(
            memory, memory_projection, query, memory_mask, self.score)    # (11)-(12)
        current = context + ops.tanh(ops.matmul(previous, self.transition_kernel))  # (13)
        return weights, [current]

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units)
        return config
