"""The exports as predictors (`zoo.runs.predictor.Predictor`): `SavedModelPredictor` (a SavedModel or a TF
Serving model folder) and `TFLitePredictor` (a TFLite export). `zoo.predictors.open_predictor` opens either
from a path, as well as a run or a preset.

Example:
```python
predictor = SavedModelPredictor("models/rocktaschel_wbw")        # the latest complete version
predictor.predict([("A man plays a guitar.", "A person makes music.")])
predictor.explain("A man plays.", "A man sleeps.").maps["attention"]
```
"""

import os

import numpy as np
import tensorflow as tf

from zoo import fileio
from zoo.data.tokenizer import Tokenizer
from zoo.export.serving import signature_error
from zoo.export.tflite import METADATA_FILE, MODEL_FILE, TFLiteNLI, read_report
from zoo.export.version_files import read_metadata, verify_saved_model
from zoo.runs.kinds import SAVED_MODEL_FILE
from zoo.runs.pairs import check_pairs
from zoo.runs.predictor import Explanation, Predictor


def _columns(pairs):
    """Columns of checked pairs (blank parses where a pair has none)."""
    return {"premise": [p[0] for p in pairs], "hypothesis": [p[1] for p in pairs],
            "premise_binary_parse": [p[2] if len(p) > 2 else "" for p in pairs],
            "hypothesis_binary_parse": [p[3] if len(p) > 3 else "" for p in pairs]}


def resolve_saved_model(path):
    """A SavedModel directory: `path` itself, or its highest version holding a SavedModel (TF Serving
    layout; `zoo.fileio.latest_version`).

    Raises:
        FileNotFoundError: no `saved_model.pb` there.
    """
    if os.path.exists(os.path.join(path, SAVED_MODEL_FILE)):
        return path
    version = fileio.latest_version(path, holding=SAVED_MODEL_FILE)
    if version is None:
        raise FileNotFoundError(f"{path!r} is neither a SavedModel nor a folder of numbered SavedModel versions")
    return os.path.join(path, str(version))


class SavedModelPredictor(Predictor):
    """Predictions with an exported SavedModel (`serving_default` and `explain` signatures): exactly what TF
    Serving answers (the graph tokenizes and parses the raw strings itself).

    Args:
        path: a version directory `MODELS/NAME/N` or `MODELS/NAME` (latest version).

    Raises:
        zoo.fileio.ManifestError: a file of the version that is not the one its manifest records (one line).
        ValueError: a version TensorFlow cannot load (one line).
    """

    kind = "saved_model"
    can_explain = True

    def __init__(self, path):
        self.path = resolve_saved_model(os.fspath(path))
        self.checked_files = verify_saved_model(self.path)  # ManifestError (one line) before TensorFlow reads it
        self.metadata = read_metadata(self.path)
        try:
            self.loaded = tf.saved_model.load(self.path)
        except (tf.errors.OpError, OSError, ValueError, IndexError) as error:  # an export without a manifest
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise ValueError(f"{self.path} cannot be loaded as a SavedModel ({type(error).__name__}: {first}): export "
                             "the run again") from None
        self.labels = tuple(self.metadata["labels"])
        self.model_name = self.metadata.get("model")

    @property
    def name(self):
        return self.model_name or super().name

    @property
    def reads_parse_trees(self):
        return "premise_binary_parse" in self.loaded.signatures["serving_default"].structured_input_signature[1]

    def input_limits(self):
        """The tokenizer and truncation `assets.extra/zoo.json` records (those the graph runs); None for a
        SavedModel without them."""
        tokenizer, lengths = self.metadata.get("tokenizer"), self.metadata.get("max_lengths")
        if tokenizer is None or lengths is None:
            return None
        return Tokenizer.from_config(tokenizer), lengths.get("premise"), lengths.get("hypothesis")

    def _call(self, signature, pairs):
        """Runs a signature on checked pairs (with their parses where it takes them).

        Raises:
            ValueError: inputs the signature rejects (a malformed parse), with its message.
        """
        fn = self.loaded.signatures[signature]
        columns = _columns(pairs)
        inputs = {name: tf.constant(columns[name], tf.string, shape=[len(pairs)])
                  for name in fn.structured_input_signature[1]}
        try:
            return {k: v.numpy() for k, v in fn(**inputs).items()}
        except tf.errors.InvalidArgumentError as error:
            raise ValueError(signature_error(error)) from None

    def predict_probabilities(self, pairs, batch_size=256):
        pairs = check_pairs(pairs)
        chunks = [np.zeros((0, len(self.labels)), np.float32)]
        for start in range(0, len(pairs), batch_size):
            try:
                outputs = self._call("serving_default", pairs[start:start + batch_size])
            except ValueError as error:  # rows are numbered within the batch
                raise ValueError(f"in the batch of pairs from index {start}: {error}") from None
            chunks.append(np.asarray(outputs["probabilities"], np.float32))
        return np.concatenate(chunks)

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair (from the `explain` signature)."""
        pairs = check_pairs([(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)])
        outputs = {k: v[0] for k, v in self._call("explain", pairs).items()}
        premise_tokens = [t.decode("utf-8") for t in outputs["premise_tokens"] if t]
        hypothesis_tokens = [t.decode("utf-8") for t in outputs["hypothesis_tokens"] if t]
        outputs["padded_premise_length"] = len(outputs["premise_tokens"])
        return Explanation.from_outputs(outputs, premise_tokens, hypothesis_tokens, self.labels)


class TFLitePredictor(Predictor):
    """Predictions with a TFLite export (`export.py --format tflite`), run by the LiteRT interpreter.

    The pairs are tokenized with the run's tokenizer in Python and cut into batches of the model's fixed
    batch size (`zoo.export.tflite.TFLiteNLI`).

    Args:
        path: the export folder or its `model.tflite`.
        num_threads: interpreter threads (None: LiteRT's default).

    Raises:
        FileNotFoundError: no TFLite export there.
        ValueError: an export whose files do not belong together (one line).
    """

    kind = "tflite"
    can_explain = True

    def __init__(self, path, num_threads=None):
        path = os.fspath(path)
        directory = os.path.dirname(path) if path.endswith(".tflite") else path
        for name in (MODEL_FILE, METADATA_FILE):
            if not os.path.exists(os.path.join(directory, name)):
                raise FileNotFoundError(f"{path!r} is not a TFLite export of export.py (no {name})")
        self.path = directory
        self.nli = TFLiteNLI(directory, num_threads=num_threads)
        self.labels = self.nli.labels

    @property
    def name(self):
        return self.nli.metadata.get("model") or super().name

    @property
    def reads_parse_trees(self):
        return self.nli.metadata.get("max_depth") is not None

    def test_score(self):
        """The export's own accuracy on its run's test split, as `metadata.json` records it (None without the
        check)."""
        try:
            accuracy = read_report(self.path).get("accuracy") or {}
        except (OSError, ValueError, AttributeError):
            return None
        if accuracy.get("tflite") is None:
            return None
        return {"accuracy": accuracy["tflite"], "examples": accuracy.get("examples"), "data": None}

    def input_limits(self):
        """The export's tokenizer and its fixed lengths (`tflite.json`), to which every pair is cut."""
        return self.nli.tokenizer, self.nli.lengths["premise"], self.nli.lengths["hypothesis"]

    def predict_probabilities(self, pairs, batch_size=256):
        """(`batch_size`: pairs tokenized at a time; the model runs its own fixed batch size.)"""
        pairs = check_pairs(pairs)
        chunks = [np.zeros((0, len(self.labels)), np.float32)]
        for start in range(0, len(pairs), batch_size):
            chunks.append(self.nli.predict_probabilities(pairs[start:start + batch_size]))
        return np.concatenate(chunks)

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair (the maps the TFLite model returns; none from an export without them)."""
        (pair,) = check_pairs([(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)])
        outputs, (premise_tokens, hypothesis_tokens) = self.nli.explain_outputs(pair)
        outputs["padded_premise_length"] = self.nli.lengths["premise"]
        return Explanation.from_outputs(outputs, premise_tokens, hypothesis_tokens, self.labels)
