"""A hypothesis-only classifier: Bowman et al.'s LSTM sentence encoder reading the hypothesis alone.

It never sees the premise, so whatever it gets right it gets from annotation artifacts of the hypotheses
(Gururangan et al. 2018; Poliak et al. 2018): negation words in contradictions, vague words in
entailments, added detail in neutral pairs. `zoo.diagnostics` compares a model with it (the artifacts
report): how much of the model's test accuracy a premise-blind model reaches, and how the model fares on
the pairs this baseline gets wrong.

References:
    Gururangan, Swayamdipta, Levy, Schwartz, Bowman, Smith. Annotation Artifacts in Natural Language
    Inference Data. NAACL 2018.
    Poliak, Naradowsky, Haldar, Rudinger, Van Durme. Hypothesis Only Baselines in Natural Language
    Inference. *SEM 2018.
"""

import keras
from keras import ops

from zoo.layers.masking import last_real, recurrent_mask
from zoo.models.base import NLIModel
from zoo.models.bowman_lstm import BOWMAN_DATA
from zoo.models.rocktaschel_conditional import ROCKTASCHEL_TRAIN
from zoo.registry import register_model


@register_model("hypothesis_only", model={"hidden_size": 100, "mlp_size": 200, "mlp_layers": 3, "dropout": 0.1},
                train=ROCKTASCHEL_TRAIN, data=BOWMAN_DATA,
                paper="hypothesis-only baseline (Gururangan et al. 2018, Poliak et al. 2018) with the encoder of "
                      "Bowman et al. 2015 as in Rocktäschel et al. 2016 §2.2 (k=100); no paper row",
                paper_params=None)
@keras.saving.register_keras_serializable(package="nli_zoo")
class HypothesisOnly(NLIModel):
    """The `bowman_lstm` encoder and classifier over the hypothesis vector alone.

    Word vectors are projected linearly to the LSTM size, one LSTM reads the hypothesis, its output at the
    last real word goes through a stack of tanh layers and a softmax layer. The premise is embedded by
    `NLIModel.forward` like every model's (the inputs are the same) and then ignored: no prediction
    depends on it, which the tests check.

    Args:
        hidden_size: LSTM size (100, as `bowman_lstm`).
        mlp_size: width of the tanh layers (200).
        mlp_layers: number of tanh layers (3).
        dropout: rate on the projected word vectors and on the sentence vector.
        **kwargs: `NLIModel` arguments.
    """

    def __init__(self, hidden_size=100, mlp_size=200, mlp_layers=3, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.mlp_size = int(mlp_size)
        self.mlp_layers = int(mlp_layers)
        self.dropout = float(dropout)
        self.projection = keras.layers.Dense(self.hidden_size, name="word_projection")
        self.input_dropout = keras.layers.Dropout(self.dropout)
        self.encoder = keras.layers.LSTM(self.hidden_size, return_sequences=True, name="hypothesis_lstm")
        self.output_dropout = keras.layers.Dropout(self.dropout)
        self.mlp = [keras.layers.Dense(self.mlp_size, activation="tanh", name=f"tanh_{i}")
                    for i in range(self.mlp_layers)]
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone (no batch needed), so weights load before a call."""
        self.embedding.build()
        self.projection.build((None, None, self.embedding_dim))
        self.encoder.build((None, None, self.hidden_size))
        width = self.hidden_size
        for layer in self.mlp:
            layer.build((None, width))
            width = self.mlp_size
        self.classifier.build((None, width))
        self.built = True

    def encode(self, sentence, mask, training=False):
        """The LSTM output at the last real word `[B, k]` (zeros for an empty sentence)."""
        x = self.input_dropout(self.projection(sentence), training=training)                  # [B, L, k]
        outputs = self.encoder(x, mask=recurrent_mask(mask), training=training)               # [B, L, k]
        return ops.where(ops.any(mask, axis=1, keepdims=True), last_real(outputs, mask), 0.0)

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False):
        vector = self.output_dropout(self.encode(hypothesis, hypothesis_mask, training), training=training)
        for layer in self.mlp:
            vector = layer(vector)                                                             # [B, mlp_size]
        return {"logits": self.classifier(vector)}

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, mlp_size=self.mlp_size, mlp_layers=self.mlp_layers,
                      dropout=self.dropout)
        return config
