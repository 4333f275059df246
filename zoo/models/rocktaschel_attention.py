"""Rocktäschel et al. (2016) §2.3 and §2.5: attention over the premise from the last hypothesis output."""

import keras
from keras import ops

from zoo.layers.attention import AttentionScore, additive_attention
from zoo.models.rocktaschel_conditional import ROCKTASCHEL_DATA, ROCKTASCHEL_TRAIN, RocktaschelConditional
from zoo.registry import register_model


@register_model("rocktaschel_attention",
                model={"hidden_size": 100, "dropout": 0.1, "two_way": False, "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Attention' (k=100)", paper_params=242_000,
                attention=("attention",))
@register_model("rocktaschel_attention_two_way",
                model={"hidden_size": 100, "dropout": 0.1, "two_way": True, "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Attention, two-way' (k=100)", paper_params=242_000,
                attention=("attention", "attention_reverse"))
class RocktaschelAttention(RocktaschelConditional):
    """Attention (Rocktäschel et al. 2016, Eq. 7-10) on top of conditional encoding.

        M  = tanh(W^y Y + W^h h_N ⊗ e_L)          (7)
        α  = softmax(w^T M)                        (8)
        r  = Y α^T                                 (9)
        h* = tanh(W^p r + W^x h_N)                 (10)

    With `two_way`, the same weights also attend over the hypothesis conditioned on the premise
    (the sentences swapped) and the two h* are concatenated for classification (§2.5). The classifier
    is conditional encoding's (§2.2.1): logits = tanh(W^c h* + b^c).

    Args:
        hidden_size: k.
        dropout: rate on the projected word vectors and on h*.
        two_way: attend both ways (§2.5).
        classifier_activation: `"tanh"` (§2.2.1, the presets) or `"linear"`; see `RocktaschelConditional`.
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, 1, Lp]` (one row: attention from h_N) and, with `two_way`,
    `attention_reverse` `[B, 1, Lh]`.
    """

    def __init__(self, *, hidden_size, dropout, two_way, classifier_activation, **kwargs):
        super().__init__(hidden_size=hidden_size, shared=False, dropout=dropout,
                         classifier_activation=classifier_activation, **kwargs)
        self.two_way = two_way
        dense = lambda name: keras.layers.Dense(hidden_size, use_bias=False, name=name)  # noqa: E731
        self.memory_projection = dense("W_y")
        self.query_projection = dense("W_h")
        self.make_attention_layers(hidden_size)
        # W^p starts at zero (the paper gives no initialisation): h* = tanh(W^p r + W^x h_N) (Eq. 10, 14) then
        # starts as conditional encoding's tanh(W^x h_N). With W^p random, r (at first a near-uniform average of
        # the premise outputs Y, in word-by-word attention also the sum of tanh(W^t r_{t-1})) outweighs
        # W^x h_N, h* carries little the label depends on, and the loss sits at ln 3 for epochs on a few
        # thousand pairs. W^p's gradient (the loss's through h*, times r) is not zero, so r comes in as it helps.
        self.attended_projection = keras.layers.Dense(hidden_size, use_bias=False, kernel_initializer="zeros",
                                                      name="W_p")
        self.last_projection = dense("W_x")

    def make_attention_layers(self, hidden_size):
        """The layers that read the premise (Eq. 8: the score vector w); subclasses attend otherwise."""
        self.score = AttentionScore(name="w")

    def build_attention_layers(self, hidden_size):
        """Creates the weights of `make_attention_layers`' layers."""
        self.score.build((None, None, hidden_size))                                  # w (8)

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        self.build_reader(input_shape)
        k = self.hidden_size
        self.memory_projection.build((None, None, k))                                # W^y
        self.query_projection.build((None, k))                                       # W^h
        self.build_attention_layers(k)
        self.attended_projection.build((None, k))                                    # W^p
        self.last_projection.build((None, k))                                        # W^x
        self.classifier.build((None, 2 * k if self.two_way else k))                  # h* (two-way: [h*; h*'])
        self.built = True

    def attend(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False):
        """One direction: h* `[B, k]` and the attention map `[B, 1, L]` over `premise` from `hypothesis`."""
        encoded = self.read(premise, hypothesis, premise_mask, hypothesis_mask, training)
        y, h_n = encoded["premise_outputs"], encoded["last"]                       # [B, L, k], [B, k]
        r, alpha = additive_attention(
            y, self.memory_projection(y), self.query_projection(h_n), premise_mask, self.score)  # (7)-(9)
        h_star = ops.tanh(self.attended_projection(r) + self.last_projection(h_n))  # (10)
        return h_star, alpha[:, None, :]

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        h_star, attention = self.attend(premise, hypothesis, premise_mask, hypothesis_mask, training)
        outputs = {"attention": attention}                                           # [B, rows, Lp]
        if self.two_way:                                                             # §2.5
            h_star_reverse, attention_reverse = self.attend(
                hypothesis, premise, hypothesis_mask, premise_mask, training)
            h_star = ops.concatenate([h_star, h_star_reverse], axis=-1)              # [B, 2k]
            outputs["attention_reverse"] = attention_reverse                         # [B, rows, Lh]
        outputs["logits"] = self.classifier(self.output_dropout(h_star, training=training))  # §2.2.1
        return outputs

    def get_config(self):
        config = super().get_config()
        config.pop("shared")
        config.update(two_way=self.two_way)
        return config
