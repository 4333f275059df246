"""Rocktäschel et al. (2016) conditional encoding (§2.2.1), shared by their three model families."""

import keras
from keras import ops

from zoo.layers.masking import recurrent_mask
from zoo.layers.serializable import serializable


@serializable
class ConditionalEncoder(keras.layers.Layer):
    """Reads the premise with one LSTM, then a delimiter and the hypothesis with a second LSTM whose
    memory state starts from the premise LSTM's last cell state c_L (§2.2.1, Figure 1 A).

    The paper initialises the second LSTM's *cell* with c_L; its output state starts at zero.

    Args:
        units: k, the LSTM size.
        shared: one LSTM for both sentences ("Conditional encoding, shared" in Table 1).

    Call args:
        premise: `[B, L, k]` projected premise word vectors.
        hypothesis: `[B, N, k]` projected hypothesis word vectors.
        delimiter: `[B, 1, k]` the projected delimiter vector.
        premise_mask, hypothesis_mask: `[B, L]`, `[B, N]` booleans.

    Returns:
        dict with `premise_outputs` Y `[B, L, k]`, `hypothesis_outputs` `[B, N, k]` (h_1..h_N, the
        delimiter step dropped) and `last` `[B, k]`, the output at the last real hypothesis word.
    """

    def __init__(self, units, shared=False, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.shared = shared
        self.premise_lstm = keras.layers.LSTM(
            units, return_sequences=True, return_state=True, name="premise_lstm")
        self.hypothesis_lstm = self.premise_lstm if shared else keras.layers.LSTM(
            units, return_sequences=True, return_state=True, name="hypothesis_lstm")

    def build(self, premise_shape=None):
        """Both LSTMs read k-wide vectors (the premise; the delimiter and the hypothesis): `[B, L, k]`."""
        sequences = (None, None, self.units) if premise_shape is None else tuple(premise_shape)
        self.premise_lstm.build(sequences)
        if not self.hypothesis_lstm.built:
            self.hypothesis_lstm.build(sequences)
        self.built = True

    def call(self, premise, hypothesis, delimiter, premise_mask, hypothesis_mask, training=False):
        premise_outputs, _, premise_cell = self.premise_lstm(
            premise, mask=recurrent_mask(premise_mask), training=training)              # Y [B, L, k], c_L [B, k]
        reading = ops.concatenate([delimiter, hypothesis], axis=1)      # [B, 1 + N, k]
        reading_mask = ops.concatenate(
            [ops.ones_like(hypothesis_mask[:, :1]), hypothesis_mask], axis=1)
        outputs, last, _ = self.hypothesis_lstm(
            reading, mask=reading_mask, training=training,
            initial_state=[ops.zeros_like(premise_cell), premise_cell])  # [B, 1 + N, k], h_N [B, k]
        return {"premise_outputs": premise_outputs, "hypothesis_outputs": outputs[:, 1:], "last": last}

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, shared=self.shared)
        return config
