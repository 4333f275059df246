"""`NLIPreprocessor`: raw sentence pairs to a zoo model's id inputs, as a Keras layer.

```python
preprocessor = NLIPreprocessor(tokenizer, max_premise_length=100, max_hypothesis_length=100)
preprocessor([("A man plays a guitar.", "A person makes music.")])
# {"premise": int32 [1, 7], "hypothesis": int32 [1, 5]}
preprocessor.encode_labels(["entailment", 2])     # int32 [0, 2]
```

The pairs are encoded by `zoo.data.pipeline.encode_model_inputs` with the run's tokenizer, vocabulary and
truncation, exactly as `zoo.load(run_dir).encode` encodes them. The layer runs eagerly on Python strings
and parse trees (a tensor graph could not parse trees), holds no weights, and is saved with the task as
KerasHub saves its preprocessors: its config holds the `NLITokenizer`'s config, the vocabulary is the
tokenizer's asset.

Pairs may be `[(premise, hypothesis), ...]`, `(premise, hypothesis, premise_binary_parse,
hypothesis_binary_parse)` tuples for tree models, a dict of string columns `{"premise": [...],
"hypothesis": [...]}`, or an `[N, 2]` / `[N, 4]` string array (`as_pairs`); `is_raw` tells such inputs
from id inputs.
"""

import keras
import numpy as np

from zoo.constants import LABELS
from zoo.data.pipeline import encode_model_inputs
from zoo.layers.serializable import serializable

PAIR_COLUMNS = ("premise", "hypothesis", "premise_binary_parse", "hypothesis_binary_parse")


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


def as_pairs(x):
    """A list of pair tuples from `[(premise, hypothesis[, parses]), ...]`, one pair, a dict of string
    columns or a `[N, 2]` / `[N, 4]` string array.

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


@serializable
class NLIPreprocessor(keras.layers.Layer):
    """Raw sentence pairs to the model's id inputs, truncated like the run's data.

    Args:
        tokenizer: an `NLITokenizer` (or its serialized config).
        max_premise_length, max_hypothesis_length: truncate longer sentences (None: no limit).
        labels: the label names by id.
        parse_trees: whether the model reads parse trees (`premise_tree` / `hypothesis_tree` inputs).
        max_depth: the tree model's number of levels (a deeper parse is an error).
        **kwargs: `keras.layers.Layer`'s (`name`, `dtype`, `trainable`).

    Call arguments:
        pairs: see `as_pairs`.
        pair_ids: names of the pairs in parse errors (default their index).

    Returns (call):
        `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}` (numpy), plus `premise_tree` /
        `hypothesis_tree` int32 `[N, 2L - 1, 3]` when `parse_trees`.
    """

    def __init__(self, tokenizer, max_premise_length=None, max_hypothesis_length=None, labels=LABELS,
                 parse_trees=False, max_depth=None, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False  # Python strings in (see NLITokenizer)
        self._allow_non_tensor_positional_args = True
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        self.tokenizer = tokenizer
        self.max_premise_length = max_premise_length
        self.max_hypothesis_length = max_hypothesis_length
        self.labels = tuple(labels)
        self.parse_trees = bool(parse_trees)
        self.max_depth = max_depth
        self.built = True

    as_pairs = staticmethod(as_pairs)

    @property
    def input_names(self):
        """The names of the model inputs this preprocessor makes."""
        return ("premise", "hypothesis") + (("premise_tree", "hypothesis_tree") if self.parse_trees else ())

    def call(self, pairs, pair_ids=None):
        self.tokenizer.check_vocabulary()
        return encode_model_inputs(as_pairs(pairs), self.tokenizer.vocabulary, self.tokenizer.tokenizer,
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
        return {**super().get_config(), "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "max_premise_length": self.max_premise_length, "max_hypothesis_length": self.max_hypothesis_length,
                "labels": list(self.labels), "parse_trees": self.parse_trees, "max_depth": self.max_depth}

    def __repr__(self):
        return (f"NLIPreprocessor({self.tokenizer!r}, max_premise_length={self.max_premise_length}, "
                f"max_hypothesis_length={self.max_hypothesis_length}, parse_trees={self.parse_trees})")
