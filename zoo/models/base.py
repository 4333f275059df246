"""`NLIModel`: what every model of the zoo shares (inputs, masks, embeddings, logits, explanations)."""

import numpy as np
import keras
from keras import ops

from zoo.constants import EMBEDDING_DIM
from zoo.layers.embedding import WordEmbedding
from zoo.layers.masking import padding_mask
from zoo.layers.loop_choice import check_request
from zoo.layers.serializable import serializable


@serializable
class NLIModel(keras.Model):
    """Base class: premise and hypothesis token ids in, three-way logits out.

    Subclasses implement `match(premise, hypothesis, premise_mask, hypothesis_mask, training, xla)`, which
    receives embedded word vectors and boolean masks (computed once here) and returns a dict with at
    least `"logits"` and, where the model attends, `"attention"` `[B, Lh, Lp]`. `xla` says whether the
    graph compiles with fixed shapes; models pass it, with `lstm_loop`, to their bi-LSTMs, which choose
    their loop from them (`zoo.layers.loop_choice`).

    Args:
        vocabulary_size: number of token ids (0 is padding).
        embedding_dim: word vector size.
        tunable_words: `"all"`, `"none"` or `"oov"` (see `WordEmbedding`).
        num_tunable: with `"oov"`, the number of tunable word vectors.
        num_classes: output classes (3 for SNLI).
    """

    # Whether the model looks up its own word vectors (`self.embedding`); an ensemble's members do instead.
    embeds_words = True

    def __init__(self, vocabulary_size, embedding_dim=EMBEDDING_DIM, tunable_words="all", num_tunable=0,
                 num_classes=3, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.tunable_words = tunable_words
        self.num_tunable = num_tunable
        self.num_classes = num_classes
        if self.embeds_words:
            self.embedding = WordEmbedding(vocabulary_size, embedding_dim, tunable_words=tunable_words,
                                           num_tunable=num_tunable, name="word_embedding")

    # The bi-LSTMs' loop -----------------------------------------------------------------------------
    @property
    def lstm_loop(self):
        """The loop asked of the model's bi-LSTMs: `"auto"` (default: `zoo.layers.loop_choice`'s table),
        `"packed"`, `"block"`, `"fused"` or `"keras"`. Settable, as Keras's `jit_compile`; a training or
        prediction function traced before keeps the loop it was traced with."""
        return getattr(self, "_lstm_loop", "auto")

    @lstm_loop.setter
    def lstm_loop(self, value):
        self._lstm_loop = check_request(value, "lstm_loop")

    def compiles_with_xla(self):
        """Whether Keras compiles this model's steps with XLA (`jit_compile`; always under JAX)."""
        return bool(self.jit_compile)

    # Weights --------------------------------------------------------------------------------------
    def build(self, input_shape=None):
        """Creates every weight from the constructor's sizes: no weight depends on the batch size or the
        sentence lengths, so `input_shape` (the shapes of the input dict, as Keras passes them) is not read
        and `model.build()` is enough. Here: the word vectors; each model builds its own layers after them,
        in the order its forward pass uses them. `keras.models.load_model` builds a model this way before
        it reads the weights."""
        if self.embeds_words:
            self.embedding.build()
        self.built = True

    # Forward pass ---------------------------------------------------------------------------------
    def forward(self, inputs, training=False, xla=None):
        """The outputs of `match` (logits float32) for id inputs; `xla`: whether the graph compiles with fixed
        shapes (None: as Keras compiles this model's steps, `compiles_with_xla`)."""
        xla = self.compiles_with_xla() if xla is None else bool(xla)
        premise_ids, hypothesis_ids = inputs["premise"], inputs["hypothesis"]
        premise_mask = padding_mask(premise_ids)        # [B, Lp]
        hypothesis_mask = padding_mask(hypothesis_ids)  # [B, Lh]
        outputs = self.match(
            self.embedding(premise_ids), self.embedding(hypothesis_ids),  # [B, Lp, E], [B, Lh, E]
            premise_mask, hypothesis_mask, training=training, xla=xla)
        outputs["logits"] = ops.cast(outputs["logits"], "float32")
        return outputs

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        raise NotImplementedError

    def call(self, inputs, training=False, xla=None):
        return self.forward(inputs, training=training, xla=xla)["logits"]

    def explain(self, inputs, xla=None):
        """Logits, probabilities and the model's attention maps for a batch (inference mode); `xla` as in
        `forward` (the SavedModel's XLA path and the TFLite converter pass True)."""
        outputs = self.forward(inputs, training=False, xla=xla)
        outputs["probabilities"] = ops.softmax(outputs["logits"], axis=-1)
        return outputs

    @property
    def reads_parse_trees(self):
        """Whether the model uses parse trees given as inputs `premise_tree` / `hypothesis_tree` (int32
        `[B, 2L - 1, 3]`, see `zoo.data.trees`); exports then also take the binary parse strings."""
        return False

    # Helpers --------------------------------------------------------------------------------------
    def build_with_dummy_batch(self):
        """Builds the model (`build`, on its first call) and runs a tiny batch through it."""
        dummy = {"premise": np.ones((1, 3), "int32"), "hypothesis": np.ones((1, 2), "int32")}
        self(dummy, training=False)
        return self

    def set_embeddings(self, matrix, tunable_mask=None):
        """Loads pretrained word vectors `[vocabulary_size, embedding_dim]` (see `WordEmbedding.set_vectors`)."""
        if not self.built:
            self.build()
        self.embedding.set_vectors(matrix, tunable_mask)

    def count_params_without_embeddings(self):
        """Trainable parameters outside the word embedding table: the papers' |θ|_M."""
        embedding_ids = {id(w) for w in self.embedding.weights}
        return int(sum(np.prod(w.shape) for w in self.trainable_weights if id(w) not in embedding_ids))

    # Config ---------------------------------------------------------------------------------------
    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, embedding_dim=self.embedding_dim,
                      tunable_words=self.tunable_words, num_tunable=self.num_tunable,
                      num_classes=self.num_classes)
        return config
