"""Chen et al. (2017): the Enhanced Sequential Inference Model (ESIM)."""

import keras
from keras import ops

from zoo.layers.alignment import dot_scores, enhance_folded, folded_dense, mean_max_pool, soft_align
from zoo.layers.masking import recurrent_mask
from zoo.layers.recurrent import bidirectional_lstm
from zoo.models.base import NLIModel
from zoo.registry import register_model

# §4 "Training": Adam (β1 0.9, β2 0.999), learning rate 0.0004, batch size 32. From the authors' released code
# (lukecq1231/nli, scripts/ESIM/train.py and main.py): gradient-norm clipping at 10 over all gradients
# together (Keras' `global_clipnorm`); after every epoch without a dev improvement the learning rate is
# halved and the best weights reloaded, and training stops after more than 7 halvings (`patience`) with
# a cap of 5,000 epochs (`zoo.training.callbacks.HalveOnPlateau`).
ESIM_TRAIN = {"optimizer": "adam", "learning_rate": 4e-4, "beta_1": 0.9, "beta_2": 0.999, "batch_size": 32,
              "global_clipnorm": 10.0, "lr_decay": {"type": "halve_on_plateau", "factor": 0.5}, "patience": 7,
              "epochs": 5000}
# §4: 300-d GloVe 840B (cased: the released code builds a cased vocabulary), OOV words Gaussian samples,
# every vector trained.
ESIM_DATA = {"embeddings": "glove-840b-300d", "oov": "chen", "lowercase": False}


@register_model("esim", model={"hidden_size": 300, "mlp_layers": 1, "dropout": 0.5},
                train=ESIM_TRAIN, data=ESIM_DATA,
                paper="Chen et al. 2017, Table 1 '(16) 600D ESIM' (all hidden states 300-d)",
                paper_params=4_300_000, attention=("attention", "attention_reverse"))
class ESIM(NLIModel):
    """ESIM (Chen et al. 2017, §3.1-3.3, sequential model).

    With a the premise and b the hypothesis:

        ā_i = BiLSTM(a, i),  b̄_j = BiLSTM(b, j)                               (1)-(2)
        e_ij = ā_i^T b̄_j                                                       (11)
        ã_i = Σ_j softmax_j(e_ij) b̄_j,  b̃_j = Σ_i softmax_i(e_ij) ā_i          (12)-(13)
        m_a = [ā; ã; ā − ã; ā ⊙ ã],  m_b = [b̄; b̃; b̄ − b̃; b̄ ⊙ b̃]               (14)-(15)
        v_a = BiLSTM(F(m_a)),  v_b = BiLSTM(F(m_b))     F: one ReLU layer       (§3.3)
        v = [ave(v_a); max(v_a); ave(v_b); max(v_b)]   over real words only    (18)-(20)

    and an MLP with one tanh hidden layer and a softmax layer on v. The same encoding BiLSTM reads both
    sentences, and the same composition BiLSTM both enhanced sequences (as in the released code).
    Dropout (rate 0.5) is applied to "all feedforward connections" (§4); where exactly follows the
    released code: the word vectors, the output of F, v, and the tanh layer's output.

    m is formed without ā − ã: F is linear before its ReLU and ā − ã linear in ā and ã, so F's kernel W
    (on the whole m, as the paper sizes it and checkpoints hold it) is folded to act on m' = [ā; ã; ā ⊙ ã]
    (`zoo.layers.alignment.fold_enhanced_kernel`: W m = W' m'), a quarter less of F's product and of
    m's copies; F(m) is the same within float rounding.

    The shared pieces (alignment, enhancement, pooling) are in `zoo.layers.alignment`; subclasses change
    the score (`scores`) or the enhanced vectors (`enhanced`).

    Args:
        hidden_size: size of both BiLSTMs (per direction), of F and of the tanh layers (preset: 300).
        mlp_layers: number of tanh layers before the softmax layer (preset: 1).
        dropout: rate of every dropout layer (preset: 0.5).
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, Lh, Lp]` (each hypothesis word over the premise, Eq. 13) and
    `attention_reverse` `[B, Lp, Lh]` (each premise word over the hypothesis, Eq. 12).

    References:
        Qian Chen, Xiaodan Zhu, Zhenhua Ling, Si Wei, Hui Jiang, Diana Inkpen. Enhanced LSTM for
        Natural Language Inference. ACL 2017.
    """

    def __init__(self, *, hidden_size, mlp_layers, dropout, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.mlp_layers = mlp_layers
        self.dropout = dropout
        self.input_dropout = keras.layers.Dropout(dropout)
        self.input_encoder = bidirectional_lstm(hidden_size, "input_encoding")
        self.projection = keras.layers.Dense(hidden_size, activation="relu", name="F")
        self.projection_dropout = keras.layers.Dropout(dropout)
        self.composition = bidirectional_lstm(hidden_size, "composition")
        self.pooled_dropout = keras.layers.Dropout(dropout)
        self.mlp = [keras.layers.Dense(hidden_size, activation="tanh", name=f"tanh_{i}")
                    for i in range(mlp_layers)]
        self.mlp_dropout = [keras.layers.Dropout(dropout) for _ in range(mlp_layers)]
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    # Steps subclasses may change -----------------------------------------------------------------
    def scores(self, a_bar, b_bar):
        """e `[B, La, Lb]` (Eq. 11)."""
        return dot_scores(a_bar, b_bar)

    def build_scores(self, width):
        """Creates the weights of `scores` for encodings ā, b̄ of `width` (2h); the dot product has none."""

    def enhanced(self, bar, tilde, weights, mask, other_mask):
        """m' `[B, L, 6h]` for one side (m of Eq. 14-15 without x̄ − x̃, which F's folded kernel accounts for;
        subclasses append their features after it) and extra `explain()` outputs (a dict)."""
        return enhance_folded(bar, tilde), {}

    def enhanced_size(self, width):
        """The size of m, F's input as Eq. 14-15 define it, for encodings of `width` (2h):
        [x̄; x̃; x̄ − x̃; x̄ ⊙ x̃] (F's kernel has this many rows; `enhanced` returns `width` fewer)."""
        return 4 * width

    # Weights --------------------------------------------------------------------------------------
    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        super().build(input_shape)                                                  # word vectors
        h = self.hidden_size
        self.input_encoder.build((None, None, self.embedding_dim))                  # (1)-(2): ā, b̄ [B, L, 2h]
        self.build_scores(2 * h)                                                     # (11)
        self.projection.build((None, None, self.enhanced_size(2 * h)))              # F(m)
        self.composition.build((None, None, h))                                      # v_a, v_b [B, L, 2h]
        width = 8 * h                                                                # (20) v
        for layer in self.mlp:
            layer.build((None, width))
            width = h
        self.classifier.build((None, width))
        self.built = True

    # Forward pass ---------------------------------------------------------------------------------
    def compose(self, m_a, m_b, mask_a, mask_b, training=False, xla=False):
        """[ave; max] of the composition BiLSTM over F(m) of both sides (m' `[B, L, 6h + extra]`, `enhanced`)
        -> `[B, 8h]` (§3.3, Eq. 18-20)."""
        project = folded_dense(self.projection, 2 * self.hidden_size)                # F, its kernel folded once

        def projected(x):                                                            # F(m) from m' [.., h]
            return self.projection_dropout(project(x), training=training)

        # F is position-wise: where the composition packs its sequences, it runs on the real tokens only
        v_a, v_b = self.composition.call_pair(m_a, m_b, recurrent_mask(mask_a), recurrent_mask(mask_b),
                                              training=training, xla=xla, loop=self.lstm_loop,
                                              transform=projected)                   # [B, L, 2h] each
        return ops.concatenate([mean_max_pool(v_a, mask_a), mean_max_pool(v_b, mask_b)], axis=-1)  # (18)-(20)

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        a_bar, b_bar = self.input_encoder.call_pair(
            self.input_dropout(premise, training=training), self.input_dropout(hypothesis, training=training),
            recurrent_mask(premise_mask), recurrent_mask(hypothesis_mask), training=training, xla=xla,
            loop=self.lstm_loop)                                                     # (1)-(2) [B, Lp | Lh, 2h]
        a_tilde, b_tilde, weights_a, weights_b = soft_align(
            self.scores(a_bar, b_bar), a_bar, b_bar, premise_mask, hypothesis_mask)  # (11)-(13)
        m_a, extra_a = self.enhanced(a_bar, a_tilde, weights_a, premise_mask, hypothesis_mask)    # (14)
        m_b, extra_b = self.enhanced(b_bar, b_tilde, weights_b, hypothesis_mask, premise_mask)    # (15)
        v = self.compose(m_a, m_b, premise_mask, hypothesis_mask, training, xla)     # (20) [B, 8h]
        v = self.pooled_dropout(v, training=training)
        for layer, dropout in zip(self.mlp, self.mlp_dropout):
            v = dropout(layer(v), training=training)                                # [B, h]
        outputs = {"logits": self.classifier(v),
                   "attention": weights_b,                                           # [B, Lh, Lp]
                   "attention_reverse": weights_a}                                   # [B, Lp, Lh]
        outputs.update({f"{k}_a": t for k, t in extra_a.items()})
        outputs.update({f"{k}_b": t for k, t in extra_b.items()})
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, mlp_layers=self.mlp_layers, dropout=self.dropout)
        return config
