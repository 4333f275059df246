"""Rocktäschel et al. (2016) §2.2.1: conditional encoding.

An LSTM reads the premise; a second LSTM reads a delimiter and the hypothesis, its memory starting from
the premise LSTM's last cell state; a softmax over a tanh projection of its last output h_N into the three
classes classifies the pair.
"""

import keras
from keras import ops

from zoo.constants import NULL_ID
from zoo.layers.conditional_encoder import ConditionalEncoder
from zoo.models.base import NLIModel
from zoo.registry import register_model

# §3 / footnote 2: Adam with β1 0.9, β2 0.999; learning rate, dropout and ℓ2 strength from the paper's grid
# ([1e-4, 3e-4, 1e-3], [0.0, 0.1, 0.2] and [0.0, 1e-4, 3e-4, 1e-3]); the paper does not say which values
# won or the batch size. `l2` adds l2 * Σ‖W‖² over the weight matrices outside the word vectors.
ROCKTASCHEL_TRAIN = {"optimizer": "adam", "learning_rate": 1e-3, "beta_1": 0.9, "beta_2": 0.999,
                     "batch_size": 32, "l2": 0.0}
# §2.2.1: word2vec vectors fixed; words without one uniform(-0.05, 0.05) and trained.
ROCKTASCHEL_DATA = {"embeddings": "word2vec-google-news-300", "oov": "rocktaschel", "lowercase": False}
# §2.2.1: "a softmax layer over the output of a non-linear projection of the last output vector into the
# target space of the three classes": logits = tanh(W h + b). The paper names no non-linearity; tanh is
# the one of every other layer it defines (Eq. 7, 10, 11, 13, 14). "linear" gives the plain softmax layer.
CLASSIFIER_ACTIVATIONS = ("tanh", "linear")


@register_model("rocktaschel_conditional", model={"hidden_size": 116, "shared": False, "dropout": 0.1,
                                                    "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Conditional encoding' (k=116)", paper_params=252_000)
@register_model("rocktaschel_conditional_shared", model={"hidden_size": 159, "shared": True, "dropout": 0.1,
                                                           "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Conditional encoding, shared' (k=159)",
                paper_params=252_000)
@register_model("rocktaschel_conditional_shared_100",
                model={"hidden_size": 100, "shared": True, "dropout": 0.1, "classifier_activation": "tanh"},
                train=ROCKTASCHEL_TRAIN, data=ROCKTASCHEL_DATA,
                paper="Rocktäschel et al. 2016, Table 1 'Conditional encoding, shared' (k=100)",
                paper_params=111_000)
class RocktaschelConditional(NLIModel):
    """Conditional encoding (Rocktäschel et al. 2016, §2.2.1).

    Word vectors are projected linearly to k (the LSTM size); dropout is applied to the network's
    inputs and outputs only (footnote 3). The classifier is "a softmax layer over the output of a
    non-linear projection of the last output vector into the target space of the three classes":

        logits = tanh(W^c h_N + b^c)   (3 values),   p(y | premise, hypothesis) = softmax(logits)

    (h* instead of h_N in the attention models, Eq. 10 and 14). The logits are returned; the softmax is
    the loss's (`from_logits=True`) and `explain()`'s. Their range [-1, 1] bounds the largest
    probability at e / (e + 2/e) ≈ 0.79, as the paper's layer does.

    Args:
        hidden_size: k.
        shared: one LSTM for premise and hypothesis.
        dropout: rate on the projected word vectors and on the vector fed to the classifier.
        classifier_activation: the non-linearity of the projection into the three classes: `"tanh"`
            (the presets; see `CLASSIFIER_ACTIVATIONS`) or `"linear"` (a plain softmax layer).
        **kwargs: `NLIModel` arguments (vocabulary_size, embedding_dim, tunable_words, ...).

    Raises:
        ValueError: an unknown `classifier_activation`.

    Example:
    ```python
    model = zoo.create_model("rocktaschel_conditional", vocabulary_size=1000, embedding_dim=50)
    logits = model({"premise": premise_ids, "hypothesis": hypothesis_ids})
    ```

    References:
        Rocktäschel, Grefenstette, Hermann, Kočiský, Blunsom. Reasoning about Entailment with Neural
        Attention. ICLR 2016.
    """

    def __init__(self, *, hidden_size, shared, dropout, classifier_activation, **kwargs):
        super().__init__(**kwargs)
        if classifier_activation not in CLASSIFIER_ACTIVATIONS:
            raise ValueError(f"classifier_activation must be one of {CLASSIFIER_ACTIVATIONS}, "
                             f"got {classifier_activation!r}")
        self.hidden_size = hidden_size
        self.shared = shared
        self.dropout = dropout
        self.classifier_activation = classifier_activation
        self.projection = keras.layers.Dense(hidden_size, name="word_projection")
        self.input_dropout = keras.layers.Dropout(dropout)
        self.encoder = ConditionalEncoder(hidden_size, shared=shared, name="conditional_encoder")
        self.output_dropout = keras.layers.Dropout(dropout)
        self.classifier = keras.layers.Dense(self.num_classes, activation=classifier_activation,
                                             dtype="float32", name="classifier")  # §2.2.1

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        self.build_reader(input_shape)
        self.classifier.build((None, self.hidden_size))                              # h_N [B, k]
        self.built = True

    def build_reader(self, input_shape=None):
        """The word vectors, their projection to k and the two LSTMs (what `read` uses)."""
        super().build(input_shape)                                                   # word vectors
        self.projection.build((None, None, self.embedding_dim))
        self.encoder.build((None, None, self.hidden_size))

    def read(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False):
        """Projects both sentences to k and runs the conditional encoder (see `ConditionalEncoder`)."""
        batch = ops.shape(premise)[0]
        delimiter = self.embedding(ops.full((batch, 1), NULL_ID, dtype="int32"))     # [B, 1, E]
        x_premise, x_hypothesis, x_delimiter = (
            self.input_dropout(self.projection(v), training=training)
            for v in (premise, hypothesis, delimiter))                               # [B, *, k]
        return self.encoder(x_premise, x_hypothesis, x_delimiter, premise_mask, hypothesis_mask,
                            training=training)

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        encoded = self.read(premise, hypothesis, premise_mask, hypothesis_mask, training)
        h_n = self.output_dropout(encoded["last"], training=training)                # [B, k]
        return {"logits": self.classifier(h_n)}

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, shared=self.shared, dropout=self.dropout,
                      classifier_activation=self.classifier_activation)
        return config
