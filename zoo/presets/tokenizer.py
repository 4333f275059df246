"""`NLITokenizer`: the zoo's Penn-Treebank tokenizer and a run's vocabulary as a Keras layer.

```python
tokenizer = NLITokenizer(vocabulary=["<pad>", "<unk>", "a", "man"], lowercase=True)
tokenizer(["A man.", "A dog"])           # [[2, 3, 1], [2, 1]]: ids, not truncated
tokenizer.tokenize(["A man."])           # [["a", "man", "."]]
```

The layer runs eagerly on Python strings (the tokenizer is `zoo.data.tokenizer.Tokenizer`, the ids those
of `zoo.data.vocab.Vocabulary`), exactly as a run encodes its data; nothing in it is trained.

Saved as KerasHub saves its tokenizers: `get_config()` holds the settings (lowercasing) and leaves the
vocabulary out; the vocabulary is the asset `vocabulary.txt`, written by `save_assets` and read by
`load_assets`, the hooks Keras calls when it saves or loads a `.keras` file, and which a preset calls for
`assets/tokenizer/`.
"""

import os

import keras

from zoo.data.tokenizer import Tokenizer
from zoo.data.vocab import Vocabulary
from zoo.layers.serializable import serializable

VOCABULARY_ASSET = "vocabulary.txt"


@serializable
class NLITokenizer(keras.layers.Layer):
    """Sentences to token ids with a run's tokenizer and vocabulary.

    Args:
        vocabulary: a `zoo.data.vocab.Vocabulary`, a list of tokens in id order, or None (set later with
            `set_vocabulary` or `load_assets`).
        lowercase: lowercase the tokens.
        **kwargs: `keras.layers.Layer`'s (`name`, `dtype`, `trainable`).

    Call arguments:
        texts: a list of strings.

    Returns (call):
        a list of lists of ids (int), one per string, not truncated.
    """

    def __init__(self, vocabulary=None, lowercase=True, **kwargs):
        super().__init__(**kwargs)
        # Python strings in, Python lists out: Keras converts nothing and accepts non-tensor inputs (as
        # KerasHub's preprocessing layers do).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.lowercase = bool(lowercase)
        self.tokenizer = Tokenizer(lowercase=self.lowercase)
        self.vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.built = True

    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary (a `Vocabulary` or a list of tokens in id order)."""
        self.vocabulary = vocabulary if isinstance(vocabulary, Vocabulary) else Vocabulary(list(vocabulary))

    @property
    def vocabulary_size(self):
        """The number of ids (None before the vocabulary is set)."""
        return None if self.vocabulary is None else len(self.vocabulary)

    def check_vocabulary(self):
        """Raises ValueError when no vocabulary is set."""
        if self.vocabulary is None:
            raise ValueError("the tokenizer has no vocabulary: call set_vocabulary or load_assets")

    def tokenize(self, texts):
        """Tokens of a list of strings (list of lists of str)."""
        return self.tokenizer.tokenize_batch(texts)

    def call(self, texts):
        self.check_vocabulary()
        return [self.vocabulary.ids(tokens) for tokens in self.tokenize(texts)]

    # Saving -----------------------------------------------------------------------------------------
    def save_assets(self, directory):
        """Writes `vocabulary.txt` into `directory` (Keras calls it when saving; so does a preset)."""
        self.check_vocabulary()
        return self.vocabulary.save(os.path.join(directory, VOCABULARY_ASSET))

    def load_assets(self, directory):
        """Reads `vocabulary.txt` from `directory` (Keras calls it when loading; so does a preset). A
        `.keras` file saved while the tokenizer was not yet a layer kept the vocabulary in its config
        instead: without the file, a vocabulary already set is kept."""
        path = os.path.join(directory, VOCABULARY_ASSET)
        if self.vocabulary is not None and not os.path.exists(path):
            return
        self.vocabulary = Vocabulary.load(path)

    def get_config(self):
        """The layer's settings; the vocabulary is an asset (`save_assets`), not part of the config."""
        return {**super().get_config(), "lowercase": self.lowercase}

    def __repr__(self):
        return f"NLITokenizer(lowercase={self.lowercase}, vocabulary_size={self.vocabulary_size})"
