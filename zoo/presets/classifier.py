"""`NLIClassifier`: a zoo model with its preprocessor attached, taking raw sentence pairs.

```python
classifier = zoo.from_preset("presets/bowman_lstm")
classifier.predict([("A man plays a guitar.", "A person makes music.")])   # float32 [1, 3] probabilities
classifier.fit(pairs, ["entailment", "neutral", ...], epochs=2)            # fine-tunes on raw pairs
classifier.preprocessor(pairs)   # {"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}
classifier.labels                # ("entailment", "neutral", "contradiction")
classifier.save_to_preset("presets/bowman_lstm_tuned")
```

The classifier is a `keras.Model` (registered as `nli_zoo>NLIClassifier`) whose `call` runs its
`backbone`, the zoo's `NLIModel`, on id inputs and returns logits; `predict` returns probabilities.
The preprocessor is the zoo's tokenizer and vocabulary with the run's truncation, run eagerly on Python
strings exactly as `zoo.load(run_dir).encode` does, so the classifier's probabilities are the run's.
It is not a Keras layer (a layer takes tensors; this one takes strings and parse trees in Python), and
nothing in it is trained.

`fit`, `predict` and `evaluate` take raw pairs `[(premise, hypothesis), ...]` (tree models also
`(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)`), or a dict of string columns
`{"premise": [...], "hypothesis": [...]}`; anything else (id dicts, a `tf.data.Dataset` of id batches)
goes to Keras unchanged. Raw pairs are cut into batches, each padded to its longest sentence.
"""

import numpy as np
import keras

from zoo.constants import LABELS
from zoo.registry import serializable
from zoo.runs.run import softmax

PAIR_COLUMNS = ("premise", "hypothesis", "premise_binary_parse", "hypothesis_binary_parse")


# ----------------------------------------------------------------------------------------------- tokenizer

@serializable
class NLITokenizer:
    """The zoo's Penn-Treebank tokenizer (`zoo.data.tokenizer.Tokenizer`) with its vocabulary.

    In a preset, `tokenizer.json` holds the config without the vocabulary, which is the asset
    `assets/tokenizer/vocabulary.txt` (one token per line, line number = id), as in KerasHub.

    Args:
        vocabulary: a `zoo.data.vocab.Vocabulary`, a list of tokens in id order, or None (set later with
            `set_vocabulary` / `load_preset_assets`).
        lowercase: lowercase the tokens.
    """

    def __init__(self, vocabulary=None, lowercase=True):
        from zoo.data.tokenizer import Tokenizer

        self.lowercase = bool(lowercase)
        self.tokenizer = Tokenizer(lowercase=self.lowercase)
        self.vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary (a `Vocabulary` or a list of tokens in id order)."""
        from zoo.data.vocab import Vocabulary

        self.vocabulary = vocabulary if isinstance(vocabulary, Vocabulary) else Vocabulary(list(vocabulary))

    @property
    def vocabulary_size(self):
        """The number of ids (None before the vocabulary is set)."""
        return None if self.vocabulary is None else len(self.vocabulary)

    def tokenize(self, texts):
        """Tokens of a list of strings (list of lists of str)."""
        return self.tokenizer.tokenize_batch(texts)

    def __call__(self, texts):
        """Ids of a list of strings (list of lists of int, not truncated)."""
        self._check_vocabulary()
        return [self.vocabulary.ids(tokens) for tokens in self.tokenize(texts)]

    def _check_vocabulary(self):
        if self.vocabulary is None:
            raise ValueError("the tokenizer has no vocabulary: call set_vocabulary or load_preset_assets")

    def save_assets(self, directory):
        """Writes `vocabulary.txt` into `directory`."""
        import os

        self._check_vocabulary()
        return self.vocabulary.save(os.path.join(directory, "vocabulary.txt"))

    def load_assets(self, directory):
        """Reads `vocabulary.txt` from `directory`."""
        import os

        from zoo.data.vocab import Vocabulary

        self.vocabulary = Vocabulary.load(os.path.join(directory, "vocabulary.txt"))

    def get_config(self):
        """`{"lowercase": ..., "vocabulary": [...]}` (a preset's tokenizer.json leaves the vocabulary out)."""
        return {"lowercase": self.lowercase,
                "vocabulary": None if self.vocabulary is None else list(self.vocabulary.words)}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"NLITokenizer(lowercase={self.lowercase}, vocabulary_size={self.vocabulary_size})"


# ----------------------------------------------------------------------------------------------- preprocessor

@serializable
class NLIPreprocessor:
    """Raw sentence pairs to the model's id inputs, truncated like the run's data.

    Args:
        tokenizer: an `NLITokenizer` (or its serialized config).
        max_premise_length, max_hypothesis_length: truncate longer sentences (None: no limit).
        labels: the label names by id.
        parse_trees: whether the model reads parse trees (`premise_tree` / `hypothesis_tree` inputs).
        max_depth: the tree model's number of levels (a deeper parse is an error).
    """

    def __init__(self, tokenizer, max_premise_length=None, max_hypothesis_length=None, labels=LABELS,
                 parse_trees=False, max_depth=None):
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        self.tokenizer = tokenizer
        self.max_premise_length = max_premise_length
        self.max_hypothesis_length = max_hypothesis_length
        self.labels = tuple(labels)
        self.parse_trees = bool(parse_trees)
        self.max_depth = max_depth

    @staticmethod
    def as_pairs(x):
        """A list of pair tuples from `[(premise, hypothesis[, parses]), ...]`, a dict of string columns or
        a `[N, 2]` / `[N, 4]` string array.

        Raises:
            ValueError: an entry that is not 2 or 4 strings (naming it).
        """
        if isinstance(x, dict):
            missing = [key for key in PAIR_COLUMNS[:2] if key not in x]
            if missing:
                raise ValueError(f"a dict of pairs needs the columns {PAIR_COLUMNS[:2]}; missing {missing}")
            columns = [list(x[key]) for key in PAIR_COLUMNS if key in x]
            pairs = list(zip(*columns))
        elif isinstance(x, tuple) and len(x) in (2, 4) and all(isinstance(s, str) for s in x):
            pairs = [x]  # one pair
        else:
            pairs = [tuple(pair) for pair in x]
        out = []
        for i, pair in enumerate(pairs):
            pair = tuple(s.decode("utf-8") if isinstance(s, bytes) else s for s in pair)
            if len(pair) not in (2, 4) or not all(isinstance(s, str) for s in pair):
                raise ValueError(f"pair {i}: expected (premise, hypothesis) or (premise, hypothesis, "
                                 f"premise_binary_parse, hypothesis_binary_parse) strings, got {pair!r:.120}")
            out.append(pair)
        return out

    @property
    def input_names(self):
        """The names of the model inputs this preprocessor makes."""
        return ("premise", "hypothesis") + (("premise_tree", "hypothesis_tree") if self.parse_trees else ())

    def __call__(self, pairs, pair_ids=None):
        """Model inputs of raw pairs (as `zoo.runs.Run.encode`).

        Args:
            pairs: see `as_pairs`.
            pair_ids: names of the pairs in parse errors (default their index).

        Returns:
            `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}`, plus `premise_tree` /
            `hypothesis_tree` int32 `[N, 2L - 1, 3]` when `parse_trees`.
        """
        from zoo.data.pipeline import encode_model_inputs

        self.tokenizer._check_vocabulary()
        return encode_model_inputs(self.as_pairs(pairs), self.tokenizer.vocabulary, self.tokenizer.tokenizer,
                                   self.max_premise_length, self.max_hypothesis_length,
                                   parse_trees=self.parse_trees, max_depth=self.max_depth, pair_ids=pair_ids)

    def encode_labels(self, y):
        """Label ids (int32 `[N]`) of label ids or names.

        Raises:
            ValueError: an unknown name or an id out of range (naming it).
        """
        ids = []
        for i, label in enumerate(np.asarray(y, dtype=object).reshape(-1).tolist()):
            if isinstance(label, bytes):
                label = label.decode("utf-8")
            if isinstance(label, str):
                if label not in self.labels:
                    raise ValueError(f"label {i}: unknown label {label!r}; labels: {', '.join(self.labels)}")
                ids.append(self.labels.index(label))
            else:
                value = int(label)
                if not 0 <= value < len(self.labels):
                    raise ValueError(f"label {i}: id {value} is not one of 0..{len(self.labels) - 1}")
                ids.append(value)
        return np.asarray(ids, dtype="int32")

    def get_config(self):
        return {"tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "max_premise_length": self.max_premise_length, "max_hypothesis_length": self.max_hypothesis_length,
                "labels": list(self.labels), "parse_trees": self.parse_trees, "max_depth": self.max_depth}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return (f"NLIPreprocessor({self.tokenizer!r}, max_premise_length={self.max_premise_length}, "
                f"max_hypothesis_length={self.max_hypothesis_length}, parse_trees={self.parse_trees})")


# ----------------------------------------------------------------------------------------------- classifier

def is_raw(x):
    """Whether `x` holds sentence strings (pairs, or a dict of string columns) rather than ids."""
    if isinstance(x, dict):
        first = x.get("premise")
        if isinstance(first, np.ndarray):
            return first.dtype.kind in "USO"
        return isinstance(first, (list, tuple)) and (not first or isinstance(first[0], (str, bytes)))
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO"
    if isinstance(x, (list, tuple)):
        if not x:
            return True
        head = x[0]
        return isinstance(head, str) or (isinstance(head, (list, tuple)) and bool(head)
                                         and isinstance(head[0], (str, bytes)))
    return False


@serializable
class NLIClassifier(keras.Model):
    """A zoo model (`backbone`, an `NLIModel`) with its `NLIPreprocessor`: raw pairs in `fit`, `predict`
    and `evaluate`.

    Args:
        backbone: the `NLIModel`.
        preprocessor: the `NLIPreprocessor` (None: the classifier takes id inputs only).
        optimizer_settings: what `compile()` with `optimizer="auto"` uses: Adam with the run's
            `learning_rate`, `beta_1`, `beta_2`, `epsilon` and `global_clipnorm`.
        preset_metadata: the metadata of the preset it was loaded from (its provenance; `save_to_preset`
            carries it on).
        fine_tuned: whether `fit` ran since the provenance's results were measured (set by `fit`).
        compile: compile with the defaults (`compile()`), as KerasHub's tasks do.
    """

    def __init__(self, backbone, preprocessor=None, optimizer_settings=None, preset_metadata=None, fine_tuned=False,
                 compile=True, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.optimizer_settings = dict(optimizer_settings or {})
        self.preset_metadata = dict(preset_metadata or {})
        self.fine_tuned = bool(fine_tuned)
        if not backbone.built:
            backbone.build()
        self.built = True
        if compile:
            self.compile()

    # Keras ------------------------------------------------------------------------------------------
    def build(self, input_shape=None):
        if not self.backbone.built:
            self.backbone.build()
        self.built = True

    def call(self, inputs, training=False):
        """Logits `[B, 3]` of id inputs (`{"premise": ids, "hypothesis": ids, ...}`)."""
        return self.backbone(inputs, training=training)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Keras' `compile`, with defaults for fine-tuning: `"auto"` gives Adam with the run's settings
        (`optimizer_settings`), cross-entropy on the logits and accuracy."""
        if optimizer == "auto":
            settings = {"learning_rate": 1e-3, **{k: v for k, v in self.optimizer_settings.items() if v is not None}}
            allowed = ("learning_rate", "beta_1", "beta_2", "epsilon", "global_clipnorm", "clipnorm")
            optimizer = keras.optimizers.Adam(**{k: v for k, v in settings.items() if k in allowed})
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        """Compiles as saved in a `.keras` file (Keras calls it when loading one)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    @property
    def labels(self):
        """Label names by id."""
        return self.preprocessor.labels if self.preprocessor is not None else LABELS

    # Raw pairs --------------------------------------------------------------------------------------
    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError("this classifier has no preprocessor: give it id inputs, or attach one")
        return self.preprocessor

    def _dataset(self, pairs, labels, batch_size, shuffle=False, seed=None):
        """A `tf.data.Dataset` of preprocessed batches (each padded to its longest sentence); shuffled
        anew on each pass with `shuffle`."""
        import tensorflow as tf

        from zoo.data.pipeline import with_input_options

        preprocessor = self._require_preprocessor()
        specs = {name: tf.TensorSpec([None, None, 3] if name.endswith("_tree") else [None, None], tf.int32)
                 for name in preprocessor.input_names}
        rng = np.random.default_rng(seed)

        def batches():
            order = rng.permutation(len(pairs)) if shuffle else np.arange(len(pairs))
            for start in range(0, len(pairs), batch_size):
                index = order[start:start + batch_size]
                x = preprocessor([pairs[i] for i in index], pair_ids=[int(i) for i in index])
                x = {name: x[name] for name in preprocessor.input_names}
                yield x if labels is None else (x, labels[index])

        signature = specs if labels is None else (specs, tf.TensorSpec([None], tf.int32))
        count = -(-len(pairs) // batch_size)  # a known length: Keras then shows progress and expects no more
        dataset = tf.data.Dataset.from_generator(batches, output_signature=signature).apply(
            tf.data.experimental.assert_cardinality(count))
        return with_input_options(dataset)  # no autotuner: it would hold each epoch's end (see there)

    def _raw_data(self, x, y, batch_size, shuffle=False, seed=None):
        preprocessor = self._require_preprocessor()
        pairs = preprocessor.as_pairs(x)
        labels = None if y is None else preprocessor.encode_labels(y)
        if labels is not None and len(labels) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs but {len(labels)} labels")
        return pairs, self._dataset(pairs, labels, batch_size, shuffle=shuffle, seed=seed)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_data=None, shuffle=True, seed=None, **kwargs):
        """Keras' `fit`; on raw pairs `x` with labels `y` (ids or names), batches of `batch_size` (default
        32) reshuffled every epoch (`shuffle`, `seed`); `validation_data` may be `(pairs, labels)`."""
        if is_raw(x):
            if y is None:
                raise ValueError("fit on raw pairs needs their labels y (ids or names)")
            _, data = self._raw_data(x, y, batch_size or 32, shuffle=shuffle, seed=seed)
            x, y, batch_size, shuffle = data, None, None, False  # the dataset shuffles itself
        if isinstance(validation_data, (tuple, list)) and len(validation_data) == 2 and is_raw(validation_data[0]):
            _, validation_data = self._raw_data(*validation_data, 256)
        self.fine_tuned = True
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
                           validation_data=validation_data, shuffle=shuffle, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", **kwargs):
        """Keras' `evaluate`; on raw pairs `x` with labels `y` (ids or names)."""
        if is_raw(x):
            _, data = self._raw_data(x, y, batch_size or 256)
            x, y, batch_size = data, None, None
        return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None):
        """Class probabilities float32 `[N, 3]` (columns: `labels`).

        On raw pairs the probabilities equal `zoo.load(run_dir).predict_probabilities(pairs)` (batches of
        `batch_size`, default 256, like the run's); ids go to Keras' `predict` as they are. Keras' progress
        bar is off unless `verbose` asks for it.
        """
        if is_raw(x):
            pairs, data = self._raw_data(x, None, batch_size or 256)
            if not pairs:
                return np.zeros((0, len(self.labels)), "float32")
            logits = super().predict(data, verbose=verbose, steps=steps, callbacks=callbacks)
        else:
            logits = super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks)
        return softmax(logits)

    def predict_labels(self, pairs, batch_size=None):
        """`[{"label": name, "probabilities": {name: float}}, ...]`, the format of `zoo.load(run).predict`
        and `predict.py`."""
        return [{"label": self.labels[int(np.argmax(p))],
                 "probabilities": {name: float(v) for name, v in zip(self.labels, p)}}
                for p in self.predict(pairs, batch_size=batch_size)]

    # Presets ----------------------------------------------------------------------------------------
    def save_to_preset(self, preset_dir, overwrite=False):
        """Writes this classifier as a preset (see `zoo.presets.saving.write_preset`); a fine-tuned
        classifier's card and metadata say that the results measured before fine-tuning no longer hold.

        Returns:
            the preset directory.
        """
        from zoo.presets.saving import write_preset

        return write_preset(self, preset_dir, overwrite=overwrite)

    # Config -----------------------------------------------------------------------------------------
    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "backbone": keras.saving.serialize_keras_object(self.backbone),
                "preprocessor": (None if self.preprocessor is None
                                 else keras.saving.serialize_keras_object(self.preprocessor)),
                "optimizer_settings": dict(self.optimizer_settings),
                "preset_metadata": dict(self.preset_metadata), "fine_tuned": self.fine_tuned}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.setdefault("compile", False)  # Keras compiles a loaded model as saved (compile_from_config)
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
