"""Vocabulary: words <-> ids, with ids 0, 1, 2 reserved for [PAD], [UNK] and [NULL].

Example:
```python
vocab = Vocabulary.build([["a", "man"], ["a", "dog"]], min_count=1)
vocab.ids(["a", "cat"])            # [3, 1]
vocab.tf_lookup(tf.constant(["a", "cat"]))   # int32 [3, 1], in graph
```
"""

import collections
import os

from zoo.constants import NULL_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID  # noqa: F401 (re-exported)
from zoo.fileio import atomic_write

PAD, UNK, NULL = SPECIAL_TOKENS
RESERVED = SPECIAL_TOKENS


class Vocabulary:
    """Maps tokens to int ids; unknown tokens map to `UNK_ID`.

    Args:
        words: all tokens in id order; must start with `[PAD]`, `[UNK]`, `[NULL]`.
        counts: optional `{word: training count}` (kept by `build`, used for token coverage).

    Raises:
        ValueError: reserved tokens missing or duplicate words.
    """

    def __init__(self, words, counts=None):
        words = list(words)
        if tuple(words[:3]) != RESERVED:
            raise ValueError(f"a vocabulary must start with {RESERVED}, got {words[:3]}")
        self._index = {w: i for i, w in enumerate(words)}
        if len(self._index) != len(words):
            raise ValueError("duplicate words in vocabulary")
        self.words = words
        self.counts = dict(counts) if counts else None
        self._table = None

    @classmethod
    def build(cls, token_lists, min_count=1, max_size=None):
        """Builds a vocabulary from tokenized (training) sentences.

        Args:
            token_lists: iterable of lists of tokens.
            min_count: keep words seen at least this often.
            max_size: at most this many ids in all (the 3 reserved included); the most frequent words win,
                ties broken alphabetically.

        Returns:
            Vocabulary.
        """
        counter = collections.Counter()
        for tokens in token_lists:
            counter.update(tokens)
        for token in RESERVED:
            counter.pop(token, None)
        kept = sorted((w for w, c in counter.items() if c >= min_count), key=lambda w: (-counter[w], w))
        if max_size is not None:
            kept = kept[:max(0, max_size - len(RESERVED))]
        return cls(list(RESERVED) + kept, counts=counter)

    def extended(self, words):
        """A new vocabulary with `words` appended (in order, skipping words it has): the ids of the words
        it had stay the same, so a trained embedding table keeps its rows.

        Returns:
            Vocabulary (with the same counts).
        """
        added, seen = [], set(self._index)
        for word in words:
            if word not in seen:
                seen.add(word)
                added.append(word)
        return Vocabulary(self.words + added, counts=self.counts)

    def __len__(self):
        return len(self.words)

    def __contains__(self, word):
        return word in self._index

    def id(self, token):
        """Returns the id of one token (`UNK_ID` if unknown)."""
        return self._index.get(token, UNK_ID)

    def ids(self, tokens):
        """Returns the ids of a list of tokens (`UNK_ID` for unknown ones)."""
        return [self._index.get(t, UNK_ID) for t in tokens]

    def save(self, path):
        """Writes `vocab.txt`: one token per line, line number (from 0) = id.

        Args:
            path: a file path, or a directory (then `path/vocab.txt`).

        Returns:
            the path written.
        """
        if os.path.isdir(path):
            path = os.path.join(path, "vocab.txt")
        with atomic_write(path, "w", encoding="utf-8") as f:  # a kill leaves the old file or the new one
            f.write("\n".join(self.words) + "\n")
        return path

    @classmethod
    def load(cls, path):
        """Reads a vocabulary written by `save` (a file, or a directory holding `vocab.txt`).

        Raises:
            ValueError: the file does not start with the reserved tokens.
        """
        if os.path.isdir(path):
            path = os.path.join(path, "vocab.txt")
        with open(path, encoding="utf-8") as f:
            words = f.read().split("\n")
        if words and words[-1] == "":
            words.pop()
        return cls(words)

    @property
    def table(self):
        """The `tf.lookup.StaticHashTable` (string -> int64 id, default `UNK_ID`), created once, eagerly.

        Track it on an exported module (e.g. `module.vocab_table = vocab.table`) to ship it in a SavedModel.
        """
        # Deferred: building, saving and reading a vocabulary needs no TensorFlow, whose import takes 17-25 s
        # on the 2-core test machine (measured; a few seconds on a workstation).
        import tensorflow as tf

        if self._table is None:
            with tf.init_scope():
                init = tf.lookup.KeyValueTensorInitializer(
                    tf.constant(self.words, dtype=tf.string), tf.range(len(self.words), dtype=tf.int64))
                self._table = tf.lookup.StaticHashTable(init, default_value=UNK_ID)
        return self._table

    def tf_lookup(self, tokens):
        """Looks tokens up in graph.

        Args:
            tokens: tf.string Tensor or RaggedTensor (any shape).

        Returns:
            int32 ids of the same shape (ragged if the input is).
        """
        import tensorflow as tf  # deferred: see `table`

        if isinstance(tokens, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.tf_lookup, tokens)
        return tf.cast(self.table.lookup(tokens), tf.int32)

    def __repr__(self):
        return f"Vocabulary(size={len(self)})"


__all__ = ["Vocabulary", "PAD", "UNK", "NULL", "PAD_ID", "UNK_ID", "NULL_ID", "RESERVED"]
