"""Word embeddings with paper-specific tuning: all rows, no rows, or only the out-of-vocabulary rows."""

import keras
import numpy as np
from keras import ops

from zoo.layers.serializable import serializable

TUNABLE_MODES = ("all", "none", "oov")


@serializable
class WordEmbedding(keras.layers.Layer):
    """Looks up word vectors, training all, none or only some rows.

    Rocktäschel et al. (2016, §2.2.1) keep word2vec vectors fixed and train only the vectors of words
    that word2vec lacks; Chen et al. (2017) train every vector; Wang & Jiang (2016) train none. With
    `tunable_words="oov"` the table is split in two: a frozen table holding the pretrained rows (zeros
    at tunable rows) and a small trainable table with one row per tunable word, so the trainable
    parameter count is exactly (number of tunable words) x dim.

    Args:
        vocabulary_size: number of ids (PAD, UNK and NULL included).
        embedding_dim: vector size.
        tunable_words: `"all"`, `"none"` or `"oov"`.
        num_tunable: with `"oov"`, how many rows are tunable (known when the vectors are loaded).

    Example:
    ```python
    emb = WordEmbedding(10, 4, tunable_words="oov", num_tunable=2)
    emb.build((None,))
    emb.set_vectors(np.ones((10, 4)), tunable_mask=np.arange(10) < 2)
    ```
    """

    def __init__(self, vocabulary_size, embedding_dim, tunable_words="all", num_tunable=0, **kwargs):
        super().__init__(**kwargs)
        if tunable_words not in TUNABLE_MODES:
            raise ValueError(f"tunable_words must be one of {TUNABLE_MODES}, got {tunable_words!r}")
        self.vocabulary_size = int(vocabulary_size)
        self.embedding_dim = int(embedding_dim)
        self.tunable_words = tunable_words
        self.num_tunable = int(num_tunable)

    def build(self, input_shape=None):
        init = keras.initializers.RandomUniform(-0.05, 0.05)
        self.table = self.add_weight(
            name="table", shape=(self.vocabulary_size, self.embedding_dim), initializer=init,
            trainable=self.tunable_words == "all")
        if self.tunable_words == "oov":
            # Row 0 of `tunable` stays zero: ids whose vector is frozen map to it.
            self.tunable = self.add_weight(
                name="tunable", shape=(self.num_tunable + 1, self.embedding_dim), initializer=init)
            self.tunable_row = self.add_weight(
                name="tunable_row", shape=(self.vocabulary_size,), dtype="int32",
                initializer="zeros", trainable=False)
        self.built = True

    def set_vectors(self, matrix, tunable_mask=None):
        """Loads a `[vocabulary_size, embedding_dim]` matrix; with `"oov"`, `tunable_mask` marks the tunable rows."""
        matrix = np.asarray(matrix, dtype="float32")
        if matrix.shape != (self.vocabulary_size, self.embedding_dim):
            raise ValueError(f"embedding matrix has shape {matrix.shape}, expected "
                             f"{(self.vocabulary_size, self.embedding_dim)}")
        if self.tunable_words != "oov":
            self.table.assign(matrix)
            return
        tunable_mask = np.asarray(tunable_mask, dtype=bool)
        rows = np.nonzero(tunable_mask)[0]
        if len(rows) != self.num_tunable:
            raise ValueError(f"tunable_mask marks {len(rows)} rows, the layer was built for {self.num_tunable}")
        frozen = matrix.copy()
        frozen[rows] = 0.0
        self.table.assign(frozen)
        tunable = np.zeros((self.num_tunable + 1, self.embedding_dim), "float32")
        tunable[1:] = matrix[rows]
        self.tunable.assign(tunable)
        row_of = np.zeros(self.vocabulary_size, "int32")
        row_of[rows] = np.arange(1, len(rows) + 1, dtype="int32")
        self.tunable_row.assign(row_of)

    def call(self, ids):
        ids = ops.cast(ids, "int32")
        vectors = ops.take(self.table, ids, axis=0)
        if self.tunable_words == "oov":
            # Frozen rows of `table` are zero where a tunable row exists, and vice versa.
            vectors = vectors + ops.take(self.tunable, ops.take(self.tunable_row, ids, axis=0), axis=0)
        return ops.cast(vectors, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.embedding_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, embedding_dim=self.embedding_dim,
                      tunable_words=self.tunable_words, num_tunable=self.num_tunable)
        return config
