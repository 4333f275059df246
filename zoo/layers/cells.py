"""Recurrent cells that read tensors fixed for the whole loop: premise memories, tree structure.

Keras 3's `RNN` layer has no `constants` argument, so the tensors that every step reads are handed to
the cell with `cell.bind(...)` (`bind_memory(...)` for the premise memory of the attention cells) just
before the `RNN` layer runs it, and released with `cell.release()` afterwards (`BoundCell`, also the
base of the tree-LSTM's level cell in `tree_lstm.py`). Everything that does not depend on the
previous step (the projection of the premise, the projection of each step's input) is computed by the
caller, once, outside the loop; a cell step holds only the work that needs the previous state.
"""

import keras
from keras import ops

from zoo.layers.attention import AttentionScore, additive_attention
from zoo.layers.serializable import serializable


@serializable
class BoundCell(keras.layers.Layer):
    """A recurrent cell with tensors bound for one run of its loop (`bind`, `bound`, `release`)."""

    def bind(self, *tensors):
        """Sets the tensors every step reads (computed once, outside the loop)."""
        self._bound = tensors

    def release(self):
        self._bound = None

    def bound(self):
        """The bound tensors; a `RuntimeError` when the cell runs without them."""
        tensors = getattr(self, "_bound", None)
        if tensors is None:
            raise RuntimeError(f"{type(self).__name__}: bind() must be called before the cell runs")
        return tensors


@serializable
class _MemoryCell(BoundCell):
    """Holds the premise memory a recurrent attention cell reads at every step."""

    def bind_memory(self, memory, memory_projection, memory_mask):
        """Sets the premise outputs Y `[B, L, d]`, their projection `W^y Y` `[B, L, k]` and mask `[B, L]`."""
        self.bind(memory, memory_projection, memory_mask)

    def release_memory(self):
        self.release()

    def _read_memory(self):
        return self.bound()


@serializable
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
        self.score = AttentionScore(name="w")  # w

    def build(self, input_shape=None):
        """W^r, W^t `[k, k]` and w `[k]`; the step input `W^h h_t` is `[B, k]`."""
        init = "glorot_uniform"
        self.recurrent_attention_kernel = self.add_weight(  # W^r
            name="W_r", shape=(self.units, self.units), initializer=init)
        self.transition_kernel = self.add_weight(  # W^t
            name="W_t", shape=(self.units, self.units), initializer=init)
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


@serializable
class MatchLSTMCell(_MemoryCell):
    """Wang & Jiang (2016) match-LSTM (mLSTM), Eq. 2-3 and 6-8, as one recurrent step.

    Per hypothesis position k, with state (h^m_{k-1}, c^m_{k-1}) and the precomputed step input
    `[W^t h^t_k ; W^{m*}_t h^t_k + b^{m*}]` (`[B, d + 4d]`):

        e_kj  = w^e · tanh(W^s h^s_j + W^t h^t_k + W^m h^m_{k-1})          (6)
        α_k   = softmax_j(e_kj)          over NULL and the real premise words    (3)
        a_k   = Σ_j α_kj h^s_j                                                   (2)
        m_k   = [a_k ; h^t_k]                                                    (7)
        i, f, o = σ(W^{m*} m_k + V^{m*} h^m_{k-1} + b^{m*}),
        c^m_k = f ⊙ c^m_{k-1} + i ⊙ tanh(W^{mc} m_k + V^{mc} h^m_{k-1} + b^{mc}),
        h^m_k = o ⊙ tanh(c^m_k)                                                  (8)

    `W^{m*} m_k` splits into `W^{m*}_a a_k + W^{m*}_t h^t_k`. The second term does not depend on the
    step and comes in with the input; the first is linear in α_k, so the caller binds the premise
    memory already multiplied by `W^{m*}_a` (`[B, L, 4d]`): the read `Σ_j α_kj (W^{m*}_a h^s_j)` *is*
    `W^{m*}_a a_k`. Likewise `W^s h^s_j` is bound precomputed. Inside the loop there is only what needs
    h^m_{k-1}: `W^m h^m_{k-1}`, the scores, the read, `V^{m*} h^m_{k-1}` and the LSTM update.

    Memory binding: `bind_memory(W^{m*}_a H^s, W^s H^s, mask)` with the NULL position h^s_0 = 0 already
    prepended by the caller (both projections are 0 there: no bias).

    The step output is `[i ; f ; o ; α_k]` float32 `[B, 3d + L]` (gates first, so the split point is
    static); the final states are `[h^m_N, c^m_N]`. Gate layout in the 4d vectors: i, f, o, candidate.

    Args:
        units: d, the mLSTM size (also the attention size of W^s, W^t, W^m).
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [units, units]
        self.score = AttentionScore(name="w_e")  # w^e

    def build(self, input_shape=None):
        """W^m `[d, d]`, V^{m*} `[d, 4d]` and w^e `[d]`; the step input is `[B, 5d]`."""
        init = "glorot_uniform"
        self.attention_recurrent_kernel = self.add_weight(  # W^m
            name="W_m", shape=(self.units, self.units), initializer=init)
        self.recurrent_kernel = self.add_weight(  # V^{mi}, V^{mf}, V^{mo}, V^{mc}
            name="V_m", shape=(self.units, 4 * self.units), initializer="orthogonal")
        self.score.build((None, None, self.units))
        self.built = True

    def call(self, inputs, states, training=False):
        memory_gates, memory_projection, memory_mask = self._read_memory()
        d = self.units
        h_prev, c_prev = states[0], states[1]                                    # [B, d], [B, d]
        query = inputs[:, :d] + ops.matmul(h_prev, self.attention_recurrent_kernel)  # (6) W^t h^t_k + W^m h^m
        gates_from_a, alpha = additive_attention(
            memory_gates, memory_projection, query, memory_mask, self.score)   # (2), (3), (6); [B, 4d]
        z = inputs[:, d:] + gates_from_a + ops.matmul(h_prev, self.recurrent_kernel)  # (8) pre-activations
        i = ops.sigmoid(z[:, :d])
        f = ops.sigmoid(z[:, d:2 * d])
        o = ops.sigmoid(z[:, 2 * d:3 * d])
        c = f * c_prev + i * ops.tanh(z[:, 3 * d:])                              # (8)
        h = o * ops.tanh(c)                                                      # (8)
        output = ops.concatenate([ops.cast(i, "float32"), ops.cast(f, "float32"), ops.cast(o, "float32"),
                                  alpha], axis=-1)                               # [B, 3d + L]
        return output, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units)
        return config
