"""Rocktäschel et al. (2016) §2.4 and §2.5: word-by-word attention."""

import keras
from keras import ops

from zoo.layers.cells import WordByWordAttentionCell
from zoo.models.rocktaschel_attention import RocktaschelAttention
from zoo.models.rocktaschel_conditional import ROCKTASCHEL_DATA, ROCKTASCHEL_TRAIN
from zoo.registry import register_model


@register_model("rocktaschel_wbw",
                model={"hidden_size": 100, "dropout": 0.1, "two_way": False, "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Word-by-word attention' (k=100)",
                paper_params=252_000, attention=("attention",))
@register_model("rocktaschel_wbw_two_way",
                model={"hidden_size": 100, "dropout": 0.1, "two_way": True, "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Word-by-word attention, two-way' (k=100)",
                paper_params=252_000, attention=("attention", "attention_reverse"))
class RocktaschelWordByWord(RocktaschelAttention):
    """Word-by-word attention (Rocktäschel et al. 2016, Eq. 11-14): the attention model (§2.3) with one
    attention per hypothesis word instead of one from h_N; conditional encoding, the projections W^y,
    W^h, W^p, W^x, two-way reading (§2.5) and the classifier are the attention model's.

    For every hypothesis output h_t (t = 1..N, the delimiter excluded) the model attends over the
    premise outputs Y, carrying the attention representation r_t along the hypothesis:

        M_t = tanh(W^y Y + (W^h h_t + W^r r_{t-1}) ⊗ e_L)      (11)
        α_t = softmax(w^T M_t)                                  (12)
        r_t = Y α_t^T + tanh(W^t r_{t-1})                        (13)
        h*  = tanh(W^p r_N + W^x h_N)                            (14)

    The hypothesis LSTM does not depend on r, so `W^y Y` and every `W^h h_t` are computed once,
    outside the loop; the recurrence over r (`WordByWordAttentionCell`) holds only W^r, W^t and w.
    Padding positions of the hypothesis leave r unchanged, so r_N is read at the last real word.

    Args:
        hidden_size: k.
        dropout: rate on the projected word vectors and on h*.
        two_way: attend both ways with the same weights and concatenate the two h* (§2.5).
        classifier_activation: `"tanh"` (§2.2.1, the presets) or `"linear"`; see `RocktaschelConditional`.
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, Lh, Lp]` (row t: α_t) and, with `two_way`,
    `attention_reverse` `[B, Lp, Lh]`.
    """

    def make_attention_layers(self, hidden_size):
        self.attention_rnn = keras.layers.RNN(
            WordByWordAttentionCell(hidden_size, name="wbw_attention_cell"),  # W^r, W^t, w
            return_sequences=True, return_state=True,
            zero_output_for_mask=True,  # the step output (α_t) is not the state; padding rows stay 0
            name="wbw_attention")

    def build_attention_layers(self, hidden_size):
        self.attention_rnn.build((None, None, hidden_size))                          # steps W^h h_t [B, N, k]

    @property
    def attention_cell(self):
        """The recurrence over r (`WordByWordAttentionCell`), held by its `RNN` only (a summary counts it once)."""
        return self.attention_rnn.cell

    def attend(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False):
        """One direction: h* `[B, k]` and the attention map `[B, N, L]`."""
        encoded = self.read(premise, hypothesis, premise_mask, hypothesis_mask, training)
        y, h, h_n = encoded["premise_outputs"], encoded["hypothesis_outputs"], encoded["last"]
        self.attention_cell.bind_memory(y, self.memory_projection(y), premise_mask)  # W^y Y, once
        try:
            alphas, r_n = self.attention_rnn(
                self.query_projection(h), mask=hypothesis_mask, training=training)  # W^h h_t, once
        finally:
            self.attention_cell.release_memory()
        h_star = ops.tanh(self.attended_projection(r_n) + self.last_projection(h_n))  # (14)
        return h_star, alphas
