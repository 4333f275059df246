"""Bowman et al. (2015) sentence-encoding LSTM baseline, as Rocktäschel et al. (2016) describe it (§2.2)."""

import keras
from keras import ops

from zoo.layers.masking import last_real, recurrent_mask
from zoo.models.base import NLIModel
from zoo.models.rocktaschel_conditional import ROCKTASCHEL_DATA, ROCKTASCHEL_TRAIN
from zoo.registry import register_model

# Rocktäschel et al. §4: Bowman et al. fine-tune their (GloVe) word vectors, every row: the "bowman" strategy.
# Bowman et al. 2015 §3.1 use the 300-d GloVe vectors of the 840B-token version.
BOWMAN_DATA = {**ROCKTASCHEL_DATA, "embeddings": "glove-840b-300d", "oov": "bowman"}


@register_model("bowman_lstm", model={"hidden_size": 100, "mlp_size": 200, "mlp_layers": 3, "dropout": 0.1},
                train=ROCKTASCHEL_TRAIN, data=BOWMAN_DATA,
                paper="Bowman et al. 2015 LSTM, as listed in Rocktäschel et al. 2016 Table 1 (k=100)",
                paper_params=221_000)
class BowmanLSTM(NLIModel):
    """One LSTM encodes premise and hypothesis independently into fixed vectors; their concatenation
    goes through a stack of tanh layers (Bowman et al. 2015: three 200-d layers) and a softmax layer.

    Word vectors are projected linearly to the LSTM size first, as in the Rocktäschel models.

    Args:
        hidden_size: LSTM size (preset: 100).
        mlp_size: width of the tanh layers (preset: 200).
        mlp_layers: number of tanh layers (preset: 3).
        dropout: rate on the projected word vectors and on the sentence-pair vector (preset: 0.1).
        **kwargs: `NLIModel` arguments.

    References:
        Bowman, Angeli, Potts, Manning. A large annotated corpus for learning natural language
        inference. EMNLP 2015.
    """

    def __init__(self, *, hidden_size, mlp_size, mlp_layers, dropout, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.mlp_size = mlp_size
        self.mlp_layers = mlp_layers
        self.dropout = dropout
        self.projection = keras.layers.Dense(hidden_size, name="word_projection")
        self.input_dropout = keras.layers.Dropout(dropout)
        self.encoder = keras.layers.LSTM(hidden_size, return_sequences=True, name="sentence_lstm")
        self.output_dropout = keras.layers.Dropout(dropout)
        self.mlp = [keras.layers.Dense(mlp_size, activation="tanh", name=f"tanh_{i}") for i in range(mlp_layers)]
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    # How many sentence vectors the classifier reads: [premise; hypothesis] (`hypothesis_only` reads one).
    sentences_read = 2

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        super().build(input_shape)                                             # word vectors
        self.projection.build((None, None, self.embedding_dim))
        self.encoder.build((None, None, self.hidden_size))
        width = self.sentences_read * self.hidden_size                         # [premise; hypothesis]
        for layer in self.mlp:
            layer.build((None, width))
            width = self.mlp_size
        self.classifier.build((None, width))
        self.built = True

    def encode(self, sentence, mask, training=False):
        """The LSTM output at the last real word `[B, k]` (zeros for an empty sentence)."""
        x = self.input_dropout(self.projection(sentence), training=training)  # [B, L, k]
        outputs = self.encoder(x, mask=recurrent_mask(mask), training=training)                # [B, L, k]
        return ops.where(ops.any(mask, axis=1, keepdims=True), last_real(outputs, mask), 0.0)

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        pair = ops.concatenate([self.encode(premise, premise_mask, training),
                                self.encode(hypothesis, hypothesis_mask, training)], axis=-1)  # [B, 2k]
        return {"logits": self.classify(pair, training)}

    def classify(self, vector, training=False):
        """The tanh layers and the softmax layer's logits over the sentence vector(s) `[B, n k]`."""
        vector = self.output_dropout(vector, training=training)
        for layer in self.mlp:
            vector = layer(vector)                                             # [B, mlp_size]
        return self.classifier(vector)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, mlp_size=self.mlp_size, mlp_layers=self.mlp_layers,
                      dropout=self.dropout)
        return config
