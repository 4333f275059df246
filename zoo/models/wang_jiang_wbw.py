"""Wang & Jiang (2016) §3.1: their re-implementation of Rocktäschel et al.'s word-by-word attention."""

import keras
from keras import ops

from zoo.layers.cells import WordByWordAttentionCell
from zoo.layers.masking import last_real, recurrent_mask
from zoo.models.base import NLIModel
from zoo.models.match_lstm import WANG_JIANG_DATA, WANG_JIANG_TRAIN
from zoo.registry import register_model


@register_model("wang_jiang_wbw", model={"hidden_size": 150, "shared": True, "dropout": 0.0},
                train=WANG_JIANG_TRAIN, data=WANG_JIANG_DATA,
                paper="Wang & Jiang 2016, Table 1 'Word-by-word attention (our implementation)' (d=150)",
                paper_params=340_000, attention=("attention",))
class WangJiangWordByWord(NLIModel):
    """Word-by-word attention (Rocktäschel et al. 2016, Eq. 11-14; Wang & Jiang Eq. 2-5) as Wang & Jiang
    re-implemented it: (1) a NULL premise position h^s_0 = 0 may be attended to, (2) the hypothesis LSTM
    is *not* started from the premise LSTM's cell state, (3) GloVe vectors, frozen (window-average OOV).

        e_kj  = w^e · tanh(W^s h^s_j + W^t h^t_k + W^a h^a_{k-1}),  j = 0..M      (4)
        α_kj  = softmax_j(e_kj)                                                      (3)
        h^a_k = Σ_j α_kj h^s_j + tanh(V^a h^a_{k-1})                                 (2), (5)
        h*    = tanh(W^p h^a_N + W^x h^t_N)                   (Rocktäschel Eq. 14)

    and a softmax layer on h*. The recurrence over h^a is the shared `WordByWordAttentionCell` (its
    W^r, W^t are W&J's W^a, V^a), with the NULL column prepended to the bound memory; `W^s H^s` and every
    `W^t h^t_k` are computed once, outside the loop.

    Args:
        hidden_size: d (preset: 150, Table 1).
        shared: one LSTM for premise and hypothesis (see `MatchLSTM`; Table 1's counts suggest it).
        dropout: rate on the word vectors and on h* (the paper uses none).
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, Lh, Lp + 1]`, **column 0 NULL**.
    """

    attention_null_column = True  # `attention` column 0 is the NULL premise position

    def __init__(self, *, hidden_size, shared, dropout, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.shared = shared
        self.dropout = dropout
        self.input_dropout = keras.layers.Dropout(dropout)
        self.premise_lstm = keras.layers.LSTM(hidden_size, return_sequences=True, name="premise_lstm")
        self.hypothesis_lstm = self.premise_lstm if shared else keras.layers.LSTM(
            hidden_size, return_sequences=True, name="hypothesis_lstm")
        dense = lambda name: keras.layers.Dense(hidden_size, use_bias=False, name=name)  # noqa: E731
        self.memory_projection = dense("W_s")
        self.query_projection = dense("W_t")
        self.attention_rnn = keras.layers.RNN(
            WordByWordAttentionCell(hidden_size, name="wbw_attention_cell"), return_sequences=True,
            return_state=True,
            zero_output_for_mask=True,  # the step output (α_k) is not the state; padding rows stay 0
            name="wbw_attention")
        # W^p at zero, as Rocktäschel et al.'s models (zoo/models/rocktaschel_attention.py): h* starts as
        # tanh(W^x h^t_N), and h^a_N comes in as it helps (neither paper gives an initialisation)
        self.attended_projection = keras.layers.Dense(hidden_size, use_bias=False, kernel_initializer="zeros",
                                                      name="W_p")
        self.last_projection = dense("W_x")
        self.output_dropout = keras.layers.Dropout(dropout)
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    @property
    def attention_cell(self):
        """The recurrence over h^a (`WordByWordAttentionCell`), held by its `RNN` only (a summary counts it once)."""
        return self.attention_rnn.cell

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        super().build(input_shape)                                                   # word vectors
        d = self.hidden_size
        self.premise_lstm.build((None, None, self.embedding_dim))
        if not self.hypothesis_lstm.built:
            self.hypothesis_lstm.build((None, None, self.embedding_dim))
        self.memory_projection.build((None, None, d))                                # W^s
        self.query_projection.build((None, None, d))                                 # W^t
        self.attention_rnn.build((None, None, d))                                    # W^a, V^a, w^e
        self.attended_projection.build((None, d))                                    # W^p
        self.last_projection.build((None, d))                                        # W^x
        self.classifier.build((None, d))                                             # h*
        self.built = True

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        h_s = self.premise_lstm(self.input_dropout(premise, training=training), mask=recurrent_mask(premise_mask),
                                training=training)                                  # [B, Lp, d]
        h_t = self.hypothesis_lstm(self.input_dropout(hypothesis, training=training),
                                   mask=recurrent_mask(hypothesis_mask), training=training)  # [B, Lh, d]
        h_t_n = ops.where(ops.any(hypothesis_mask, axis=1, keepdims=True),
                          last_real(h_t, hypothesis_mask), 0.0)                     # h^t_N [B, d]
        memory = ops.concatenate([ops.zeros_like(h_s[:, :1]), h_s], axis=1)        # NULL first [B, 1+Lp, d]
        memory_mask = ops.concatenate([ops.ones_like(premise_mask[:, :1]), premise_mask], axis=1)
        self.attention_cell.bind_memory(memory, self.memory_projection(memory), memory_mask)  # W^s H^s, once
        try:
            alphas, h_a_n = self.attention_rnn(
                self.query_projection(h_t), mask=hypothesis_mask, training=training)  # W^t h^t_k, once
        finally:
            self.attention_cell.release_memory()
        h_star = ops.tanh(self.attended_projection(h_a_n) + self.last_projection(h_t_n))  # (Rocktäschel 14)
        logits = self.classifier(self.output_dropout(h_star, training=training))
        return {"logits": logits, "attention": alphas}                              # [B, Lh, 1 + Lp]

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, shared=self.shared, dropout=self.dropout)
        return config
