"""Wang & Jiang (2016): the match-LSTM (mLSTM) and its variants (Table 1)."""

import keras
from keras import ops

from zoo.layers.cells import MatchLSTMCell
from zoo.layers.masking import recurrent_mask
from zoo.layers.recurrent import bidirectional_lstm
from zoo.models.base import NLIModel
from zoo.registry import register_model

# §3.1: Adam (β1 0.9, β2 0.999), initial learning rate 0.001 "with a decay ratio of 0.95 for each
# iteration", batch size 30. Decaying 0.95 per *update* would end training within a few hundred batches,
# so "iteration" is read as a pass over the training data: lr · 0.95^epoch.
WANG_JIANG_TRAIN = {"optimizer": "adam", "learning_rate": 1e-3, "beta_1": 0.9, "beta_2": 0.999,
                    "batch_size": 30, "lr_decay": {"type": "exponential", "rate": 0.95, "every_epochs": 1}}
# §2.3: GloVe vectors, never updated; a word without one gets the average of the GloVe vectors of the
# words within 4 positions of it. GloVe (6B / 840B) is read lowercased here.
WANG_JIANG_DATA = {"embeddings": "glove-840b-300d", "oov": "wang_jiang", "lowercase": True}


def _preset(hidden_size, encoder):
    return {"hidden_size": hidden_size, "encoder": encoder, "shared": True, "dropout": 0.0}


@register_model("mlstm", model=_preset(150, "lstm"), train=WANG_JIANG_TRAIN, data=WANG_JIANG_DATA,
                paper="Wang & Jiang 2016, Table 1 'mLSTM' (d=150)", paper_params=544_000,
                attention=("attention",))
@register_model("mlstm_300", model=_preset(300, "lstm"), train=WANG_JIANG_TRAIN, data=WANG_JIANG_DATA,
                paper="Wang & Jiang 2016, Table 1 'mLSTM' (d=300)", paper_params=1_900_000,
                attention=("attention",))
@register_model("mlstm_bilstm", model=_preset(150, "bilstm"), train=WANG_JIANG_TRAIN, data=WANG_JIANG_DATA,
                paper="Wang & Jiang 2016, Table 1 'mLSTM with bi-LSTM sentence modeling' (d=150)",
                paper_params=1_400_000, attention=("attention",))
@register_model("mlstm_embedding", model=_preset(300, "none"), train=WANG_JIANG_TRAIN, data=WANG_JIANG_DATA,
                paper="Wang & Jiang 2016, Table 1 'mLSTM with word embedding' (d=300)",
                paper_params=1_300_000, attention=("attention",))
class MatchLSTM(NLIModel):
    """The match-LSTM (Wang & Jiang 2016, §2.2-2.3, Eq. 2-3 and 6-8).

    An LSTM reads the premise (h^s_j) and, *not* conditioned on it, the hypothesis (h^t_k). A NULL
    premise position h^s_0 = 0 is prepended (§2.3). The mLSTM then walks the hypothesis; at each word k:

        e_kj  = w^e · tanh(W^s h^s_j + W^t h^t_k + W^m h^m_{k-1}),  j = 0..M      (6)
        α_kj  = softmax_j(e_kj)                                                      (3)
        a_k   = Σ_j α_kj h^s_j                                                       (2)
        m_k   = [a_k ; h^t_k]                                                        (7)
        h^m_k = LSTM(m_k, h^m_{k-1})           (input, forget, output gates)         (8)

    and the label is predicted from h^m_N, the mLSTM state at the last real hypothesis word (a softmax
    layer). `W^s H^s`, `W^t h^t_k` and the h^t_k half of the gates' input projection are computed once,
    outside the loop; the loop (`MatchLSTMCell`) holds only what needs h^m_{k-1}.

    Variants (§3.1): `encoder="bilstm"` reads both sentences with a bi-LSTM (h is then 2d wide);
    `encoder="none"` uses the word vectors themselves as h^s, h^t ("mLSTM with word embedding").

    `shared`: one LSTM for both sentences. §2.2 speaks of "two LSTMs" (two passes, one not conditioned
    on the other); the parameter counts of Table 1 and the authors' released code (SeqMatchSeq, which
    ties the two LSTMs' weights) both point to one shared LSTM, so the presets share it.

    |θ|_M at the paper's sizes (300-d input): mlstm 609,303, mlstm_300 2,073,603, mlstm_bilstm 1,104,903,
    mlstm_embedding 1,352,403 against Table 1's 544K, 1.9M, 1.4M, 1.3M. For d = 150 Table 1 matches our
    count *without* the attention weights W^s, W^t, W^m, w^e (67,650): 541,653 ≈ 544K (and 338,553 ≈ 340K
    for `wang_jiang_wbw`); the d = 300 and bi-LSTM rows fit no single reading, so the gaps stay.

    Args:
        hidden_size: d, the size of the sentence LSTMs (per direction), of the attention and of the mLSTM.
        encoder: `"lstm"`, `"bilstm"` or `"none"`.
        shared: one (bi-)LSTM for premise and hypothesis.
        dropout: rate on the word vectors and on h^m_N (the paper uses none).
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, Lh, Lp + 1]`: **column 0 is NULL**, columns 1..Lp the premise
    words (rows of real hypothesis words sum to one over NULL and the real premise words), and the mLSTM
    gates `input_gate`, `forget_gate`, `output_gate`, each `[B, Lh, d]` (zero at padding rows).
    `attention_null_column = True` tells generic code (tests, images) about the NULL column.

    References:
        Shuohang Wang, Jing Jiang. Learning Natural Language Inference with LSTM. NAACL 2016.
    """

    attention_null_column = True  # `attention` column 0 is the NULL premise position

    def __init__(self, *, hidden_size, encoder, shared, dropout, **kwargs):
        super().__init__(**kwargs)
        if encoder not in ("lstm", "bilstm", "none"):
            raise ValueError(f"encoder must be 'lstm', 'bilstm' or 'none', got {encoder!r}")
        self.hidden_size = hidden_size
        self.encoder = encoder
        self.shared = shared
        self.dropout = dropout
        self.input_dropout = keras.layers.Dropout(dropout)
        self.premise_encoder = self._sentence_encoder("premise_lstm")
        self.hypothesis_encoder = (self.premise_encoder if shared
                                   else self._sentence_encoder("hypothesis_lstm"))
        d = hidden_size
        self.premise_projection = keras.layers.Dense(d, use_bias=False, name="W_s")
        self.hypothesis_projection = keras.layers.Dense(d, use_bias=False, name="W_t")
        # W^{m*} m_k = W^{m*}_a a_k + W^{m*}_t h^t_k (+ b^{m*}): both halves applied outside the loop.
        self.attended_gate_projection = keras.layers.Dense(4 * d, use_bias=False, name="W_m_a")
        self.hypothesis_gate_projection = keras.layers.Dense(4 * d, name="W_m_t")
        self.match_rnn = keras.layers.RNN(
            MatchLSTMCell(d, name="match_lstm_cell"), return_sequences=True, return_state=True,
            zero_output_for_mask=True,  # the step output ([i; f; o; α]) is not the state
            name="match_lstm")
        self.output_dropout = keras.layers.Dropout(dropout)
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    @property
    def match_cell(self):
        """The mLSTM step (`MatchLSTMCell`), held by its `RNN` only (a summary counts it once)."""
        return self.match_rnn.cell

    def _sentence_encoder(self, name):
        if self.encoder == "none":
            return None
        if self.encoder == "bilstm":
            return bidirectional_lstm(self.hidden_size, f"bi_{name}")
        return keras.layers.LSTM(self.hidden_size, return_sequences=True, name=name)

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        super().build(input_shape)                                                   # word vectors
        d = self.hidden_size
        words = (None, None, self.embedding_dim)
        for encoder in (self.premise_encoder, self.hypothesis_encoder):
            if encoder is not None and not encoder.built:
                encoder.build(words)
        width = {"lstm": d, "bilstm": 2 * d, "none": self.embedding_dim}[self.encoder]  # h^s, h^t
        self.premise_projection.build((None, None, width))                          # W^s
        self.attended_gate_projection.build((None, None, width))                    # W^{m*}_a
        self.hypothesis_projection.build((None, None, width))                       # W^t
        self.hypothesis_gate_projection.build((None, None, width))                  # W^{m*}_t, b^{m*}
        self.match_rnn.build((None, None, 5 * d))                                    # steps [W^t h^t; ...]
        self.classifier.build((None, d))                                             # h^m_N
        self.built = True

    def encode(self, words, mask, encoder, training=False, xla=False):
        """h `[B, L, d]` (`[B, L, 2d]` with a bi-LSTM; the word vectors with `encoder="none"`)."""
        x = self.input_dropout(words, training=training)
        if encoder is None:
            return x
        if self.encoder == "bilstm":  # told the graph's shapes and the loop asked for (zoo.layers.loop_choice)
            return encoder(x, mask=recurrent_mask(mask), training=training, xla=xla, loop=self.lstm_loop)
        return encoder(x, mask=recurrent_mask(mask), training=training)

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        d = self.hidden_size
        h_s = self.encode(premise, premise_mask, self.premise_encoder, training, xla)       # [B, Lp, ds]
        h_t = self.encode(hypothesis, hypothesis_mask, self.hypothesis_encoder, training, xla)  # [B, Lh, ds]
        # NULL: h^s_0 = 0, so its projections (no bias) are 0 too (§2.3).
        memory_projection = self.premise_projection(h_s)                                  # W^s h^s [B, Lp, d]
        memory_gates = self.attended_gate_projection(h_s)                                 # W^m_a h^s [B, Lp, 4d]
        memory_projection = ops.concatenate(
            [ops.zeros_like(memory_projection[:, :1]), memory_projection], axis=1)        # [B, 1 + Lp, d]
        memory_gates = ops.concatenate([ops.zeros_like(memory_gates[:, :1]), memory_gates], axis=1)
        memory_mask = ops.concatenate(
            [ops.ones_like(premise_mask[:, :1]), premise_mask], axis=1)                  # [B, 1 + Lp]
        steps = ops.concatenate([self.hypothesis_projection(h_t),                         # W^t h^t_k (6)
                                 self.hypothesis_gate_projection(h_t)], axis=-1)          # W^m_t h^t_k + b (8)
        self.match_cell.bind_memory(memory_gates, memory_projection, memory_mask)
        try:
            outputs, h_m, _ = self.match_rnn(steps, mask=hypothesis_mask, training=training)  # h^m_N [B, d]
        finally:
            self.match_cell.release_memory()
        logits = self.classifier(self.output_dropout(h_m, training=training))
        return {"logits": logits,
                "attention": outputs[:, :, 3 * d:],                                       # [B, Lh, 1 + Lp]
                "input_gate": outputs[:, :, :d],                                          # [B, Lh, d]
                "forget_gate": outputs[:, :, d:2 * d],
                "output_gate": outputs[:, :, 2 * d:3 * d]}

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, encoder=self.encoder, shared=self.shared,
                      dropout=self.dropout)
        return config
