"""SNLI data: loaders, tokenizer, vocabulary, word vectors and the tf.data pipeline.

Only the tokenizer and the tf.data modules (`pipeline`, `tree_pipeline`, `tree_graph`) import TensorFlow; the
loaders, vocabulary, word vectors, trees and batching do not (docs/data.md lists the modules). `LABELS` is
always cheap to import.
"""

from zoo.constants import LABELS  # label names; a label's id is its index (tfds `snli` order)

__all__ = ["LABELS"]
