"""Rocktäschel et al. (2016) §2.4 and §2.5: word-by-word attention."""

import keras
from keras import ops

from zoo.layers.cells import WordByWordAttentionCell
from zoo.models.rocktaschel_conditional import ROCKTASCHEL_DATA, ROCKTASCHEL_TRAIN, RocktaschelConditional
from zoo.registry import register_model


@register_model("rocktaschel_wbw", model={"hidden_size": 100, "dropout": 0.1, "two_way": False},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Word-by-word attention' (k=100)",
                paper_params=252_000, attention=("attention",))
@register_model("rocktaschel_wbw_two_way", model={"hidden_size": 100, "dropout": 0.1, "two_way": True},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Word-by-word attention, two-way' (k=100)",
                paper_params=252_000, attention=("attention", "attention_reverse"))
class RocktaschelWordByWord(RocktaschelConditional):
    """Word-by-word attention (Rocktäschel et al. 2016, Eq. 11-14) on top of conditional encoding.

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
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, Lh, Lp]` (row t: α_t) and, with `two_way`,
    `attention_reverse` `[B, Lp, Lh]`.
    """

    def __init__(self, hidden_size=100, dropout=0.1, two_way=False, **kwargs):
        super().__init__(hidden_size=hidden_size, shared=False, dropout=dropout, **kwargs)
        self.two_way = two_way
        dense = lambda name: keras.layers.Dense(hidden_size, use_bias=False, name=name)  # noqa: E731
        self.memory_projection = dense("W_y")
        self.query_projection = dense("W_h")
        self.attention_cell = WordByWordAttentionCell(hidden_size, name="wbw_attention_cell")
        self.attention_rnn = keras.layers.RNN(
            self.attention_cell, return_sequences=True, return_state=True,
            zero_output_for_mask=True,  # the step output (α_t) is not the state; padding rows stay 0
            name="wbw_attention")
        self.attended_projection = dense("W_p")
        self.last_projection = dense("W_x")

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

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False):
        h_star, alphas = self.attend(premise, hypothesis, premise_mask, hypothesis_mask, training)
        outputs = {"attention": alphas}
        if self.two_way:                                                             # §2.5
            h_star_reverse, alphas_reverse = self.attend(
                hypothesis, premise, hypothesis_mask, premise_mask, training)
            h_star = ops.concatenate([h_star, h_star_reverse], axis=-1)              # [B, 2k]
            outputs["attention_reverse"] = alphas_reverse                            # [B, Lp, Lh]
        outputs["logits"] = self.classifier(self.output_dropout(h_star, training=training))
        return outputs

    def get_config(self):
        config = super().get_config()
        config.pop("shared")
        config.update(two_way=self.two_way)
        return config
