"""SNLI data: loaders, tokenizer, vocabulary, word vectors and the tf.data pipeline.

Submodules import TensorFlow lazily where they can; `LABELS` is always cheap to import.
"""

from zoo.constants import LABELS  # label names; a label's id is its index (tfds `snli` order)

__all__ = ["LABELS"]
