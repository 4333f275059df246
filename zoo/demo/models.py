"""The models the demo shows: a run directory, a preset, a SavedModel or a TFLite export, opened by one
function (`open_model`) as a predictor with `predict(pairs)` and `explain(premise, hypothesis, parses)`
(`zoo.export.predictor`'s interface).

Example:
```python
model = open_model("runs/rocktaschel_wbw")        # or presets/esim, hf://OWNER/NAME, models/esim/1
explanation = model.predictor.explain("A man plays a guitar.", "A man sleeps.")
explanation.label, explanation.probabilities, explanation.maps["attention"]
```
"""

import os

from zoo.export.predictor import RunPredictor, open_predictor
from zoo.presets.files import PREPROCESSOR_CONFIG_FILE


class DemoModel:
    """A model opened for the demo.

    Args:
        source: what was asked for (a path or a hub address).
        name: the name shown above its results (the source's last path part).
        predictor: the predictor (`predict`, `explain`).
        reads_parse_trees: whether the model reads binary parses (the page then offers parse boxes).
    """

    def __init__(self, source, name, predictor, reads_parse_trees):
        self.source = source
        self.name = name
        self.predictor = predictor
        self.reads_parse_trees = bool(reads_parse_trees)


class _PresetRun:
    """A preset's `NLIClassifier` seen as the `zoo.runs.Run` that `RunPredictor` reads: the backbone as
    `model`, the preprocessor as `encode`, its truncation as the run's data settings."""

    def __init__(self, classifier):
        preprocessor = classifier.preprocessor
        self.classifier = classifier
        self.model = classifier.backbone
        self.tokenizer = preprocessor.tokenizer.tokenizer
        self.labels = tuple(classifier.labels)
        self.config = {"preset": {"data": {"max_premise_length": preprocessor.max_premise_length,
                                           "max_hypothesis_length": preprocessor.max_hypothesis_length}}}

    def encode(self, pairs, pair_ids=None):
        return self.classifier.preprocessor(pairs, pair_ids=pair_ids)

    def predict(self, pairs, batch_size=256):
        return self.classifier.predict_labels(pairs, batch_size=batch_size)


class PresetPredictor(RunPredictor):
    """A preset (`zoo.presets.from_preset`: a folder, `hf://...`, `kaggle://...`) as a `RunPredictor`.

    Args:
        preset: the preset's folder or hub address.
    """

    def __init__(self, preset):  # RunPredictor's own __init__ loads a run directory: not called
        from zoo.presets import from_preset

        self.run = _PresetRun(from_preset(preset, compile=False))
        self.labels = self.run.labels


def is_preset(source):
    """Whether `source` names a preset: a hub address, or a folder with a preset's preprocessor.json."""
    return "://" in source or os.path.exists(os.path.join(source, PREPROCESSOR_CONFIG_FILE))


def open_model(source):
    """Opens a run directory, a preset, a SavedModel (`MODELS/NAME` or `MODELS/NAME/N`) or a TFLite export.

    The one place where the demo loads models.

    Returns:
        a `DemoModel`.

    Raises:
        FileNotFoundError, OSError, ValueError, zoo.errors.UserError: nothing loadable there (the message
            says why).
    """
    if not is_preset(source) and not os.path.exists(source):
        raise FileNotFoundError(f"{source}: no such run directory, preset or SavedModel")
    name = os.path.basename(os.path.normpath(source)) if "://" not in source else source.rstrip("/").rsplit("/", 1)[-1]
    if is_preset(source):
        predictor = PresetPredictor(source)
        return DemoModel(source, name, predictor, predictor.run.model.reads_parse_trees)
    if os.path.exists(os.path.join(source, "model.tflite")) or source.endswith(".tflite"):
        predictor = open_predictor(tflite=source)
        return DemoModel(source, name, predictor, predictor.nli.metadata.get("max_depth") is not None)
    if os.path.exists(os.path.join(source, "config.json")):
        predictor = open_predictor(run_dir=source)
        return DemoModel(source, name, predictor, predictor.run.model.reads_parse_trees)
    predictor = open_predictor(saved_model=source)
    inputs = predictor.loaded.signatures["serving_default"].structured_input_signature[1]
    if name.isdigit():  # MODELS/NAME/N: the model's name is NAME
        name = os.path.basename(os.path.dirname(os.path.normpath(source)))
    return DemoModel(source, name, predictor, "premise_binary_parse" in inputs)
