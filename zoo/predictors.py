"""`open_predictor`: any model the zoo can answer with, from a path or a URI, behind one interface.

```python
from zoo.predictors import open_predictor

predictor = open_predictor("runs/esim")            # a run directory (train.py)
predictor = open_predictor("models/esim")          # a SavedModel, or a TF Serving model folder (latest version)
predictor = open_predictor("models/esim_tflite")   # a TFLite export (its folder or its model.tflite)
predictor = open_predictor("presets/esim")         # a preset folder, or hf://OWNER/NAME, kaggle://...
predictor.kind                                     # "run", "saved_model", "tflite" or "preset"
predictor.labels                                   # ("entailment", "neutral", "contradiction")
predictor.predict([("A man plays a guitar.", "A person makes music.")])
# [{"label": "entailment", "probabilities": {"entailment": 0.91, "neutral": 0.06, "contradiction": 0.03}}]
predictor.predict_probabilities(pairs)             # float32 [N, len(labels)]
predictor.evaluate(examples)                       # zoo.runs.evaluation.scores of labelled examples
if predictor.can_explain:                          # every kind: runs, SavedModels, TFLite exports, presets
    explanation = predictor.explain("A man plays.", "A man sleeps.")   # tokens, label, attention maps
predictor.describe()                               # "run runs/esim (esim)"
predictor.length_notes(pairs)                      # pairs cut at the model's maximum lengths, empty sentences
```
The interface is `zoo.runs.predictor.Predictor` (a pair is `(premise, hypothesis)` or `(premise, hypothesis,
premise_binary_parse, hypothesis_binary_parse)`); the kinds are `RunPredictor` (zoo.runs.predictor),
`SavedModelPredictor` and `TFLitePredictor` (zoo.export.predictor) and `PresetPredictor` (here: presets and
exports stand on one floor and do not import each other). A run or a preset runs its Keras model in this
process, traced under this machine's few-rows loop (`zoo.export.loop_tuning.apply_loop`: `nli-zoo tune`'s
choice, else the default); an export's graph keeps the loop it was exported with. Errors are one line:
`PredictorNotFound` (a path that is none of these kinds), `FileNotFoundError`, `ValueError` (a damaged or mixed
model, a damaged tuning record).
"""

import os

import numpy as np

from zoo.quiet import import_tensorflow, start_runtime

import_tensorflow()  # before the imports below start it: its notices filtered (a script opening a predictor)

from zoo.errors import UserError  # noqa: E402
from zoo.export.loop_tuning import apply_loop  # noqa: E402
from zoo.export.predictor import SavedModelPredictor, TFLitePredictor  # noqa: E402
from zoo.presets import from_preset  # noqa: E402
from zoo.runs.kinds import KINDS, URI_SCHEMES, kind_of, not_a_model  # noqa: E402,F401 (re-exported)
from zoo.runs.predictor import Predictor, RunPredictor  # noqa: E402
from zoo.settings import DataSettings, RunSettings  # noqa: E402


class PredictorNotFound(FileNotFoundError):
    """A path that is none of the kinds `open_predictor` knows; the message says what was looked for."""


class _PresetRun:
    """A preset's `NLIClassifier` seen as the `zoo.runs.Run` that `RunPredictor.explain` reads: the backbone
    as `model`, the preprocessor as `encode`, its truncation as the run's data settings (`settings`)."""

    def __init__(self, classifier):
        preprocessor = classifier.preprocessor
        self.classifier = classifier
        self.model = classifier.backbone
        self.tokenizer = preprocessor.tokenizer.tokenizer
        self.labels = tuple(classifier.labels)
        self.settings = RunSettings(model={}, data=DataSettings(
            max_premise_length=preprocessor.max_premise_length,
            max_hypothesis_length=preprocessor.max_hypothesis_length))

    def encode(self, pairs, pair_ids=None):
        return self.classifier.preprocessor(pairs, pair_ids=pair_ids)

    def predict_probabilities(self, pairs, batch_size=256):
        if not pairs:
            return np.zeros((0, len(self.labels)), np.float32)
        return np.asarray(self.classifier.predict(pairs, batch_size=batch_size), np.float32)


class PresetPredictor(RunPredictor):
    """A preset (`zoo.from_preset`: a folder, `hf://OWNER/NAME` or `kaggle://...`) as a predictor; it explains
    pairs as a run does (the same model, tokenizer and truncation).

    Args:
        preset: the folder or URI.
    """

    kind = "preset"

    def __init__(self, preset):  # RunPredictor's own __init__ loads a run directory: not called
        self.path = os.fspath(preset)
        self.classifier = from_preset(self.path, compile=False)
        self.run = _PresetRun(self.classifier)
        self.labels = self.run.labels

    @property
    def name(self):
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def input_limits(self):
        """The preprocessor's tokenizer and truncation (those `from_preset` encodes pairs with)."""
        preprocessor = self.classifier.preprocessor
        return preprocessor.tokenizer.tokenizer, preprocessor.max_premise_length, preprocessor.max_hypothesis_length

    def test_score(self):
        """The test accuracy of the run the preset was exported from (a folder's `metadata.json`)."""
        from zoo.presets.loading import read_metadata

        try:
            metadata = read_metadata(self.path) if os.path.isdir(self.path) else {}
        except (OSError, ValueError, UserError):
            return None
        test = (metadata.get("results") or {}).get("test") or {}
        if test.get("accuracy") is None:
            return None
        return {"accuracy": test["accuracy"], "examples": test.get("examples"),
                "data": (metadata.get("data") or {}).get("source")}

    def evaluate(self, examples, batch_size=None, verbose=0):
        """Scored through `predict_probabilities` (a preset has no length grid of its own)."""
        return Predictor.evaluate(self, examples, batch_size=batch_size, verbose=verbose)


def open_predictor(source, kind=None, num_threads=None):
    """The predictor of a run directory, a SavedModel (or TF Serving model folder), a TFLite export or a preset.

    Args:
        source: the path or URI (`hf://...`, `kaggle://...`), or a `Predictor` (returned as it is).
        kind: one of `KINDS` to skip the recognition (e.g. a command line's `--saved-model`).
        num_threads: a TFLite export's interpreter threads (None: LiteRT's default).

    Returns:
        a `zoo.runs.predictor.Predictor`.

    Raises:
        PredictorNotFound: the path is none of the kinds (or does not exist).
        FileNotFoundError, ValueError: a model that cannot be read (one line naming the file).
    """
    if isinstance(source, Predictor):
        return source
    start_runtime()  # a model is about to run: TensorFlow's runtime notices filtered (zoo.quiet)
    source = os.fspath(source)
    if kind is None:
        kind = kind_of(source)
        if kind is None:
            raise PredictorNotFound(not_a_model(source))
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if num_threads is not None and kind != "tflite":
        raise ValueError("num_threads applies to TFLite exports only")
    if kind in ("run", "preset"):  # a Keras model traced in this process: under this machine's tuned loop
        apply_loop()                # (an export's graph keeps the loop it was traced with)
    if kind == "run":
        return RunPredictor(source)
    if kind == "saved_model":
        return SavedModelPredictor(source)
    if kind == "tflite":
        return TFLitePredictor(source, num_threads=num_threads)
    return PresetPredictor(source)
