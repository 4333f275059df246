"""The models the demo shows: a run directory, a preset, a SavedModel or a TFLite export, opened by one
function (`open_model`) through the library's one predictor interface (`zoo.predictors.open_predictor`).

Example:
```python
model = open_model("runs/rocktaschel_wbw")        # or presets/esim, hf://OWNER/NAME, models/esim/1
explanation = model.predictor.explain("A man plays a guitar.", "A man sleeps.")
explanation.label, explanation.probabilities, explanation.maps["attention"]
```
"""

import os

from zoo.predictors import open_predictor


class DemoModel:
    """A model opened for the demo.

    Args:
        source: what was asked for (a path or a hub address).
        name: the name shown above its results (the source's last path part).
        predictor: the `zoo.runs.predictor.Predictor` (`predict`, `explain`).
        reads_parse_trees: whether the model reads binary parses (the page then offers parse boxes).
        note: one line to show with the model (a run that is unfinished: its best weights so far), or None.
    """

    def __init__(self, source, name, predictor, reads_parse_trees, note=None):
        self.source = source
        self.name = name
        self.predictor = predictor
        self.reads_parse_trees = bool(reads_parse_trees)
        self.note = note

    def cut_note(self, premise, hypothesis):
        """What the model's maximum lengths cut of a pair, as the commands count it (`Predictor.length_notes`),
        in one line, or None."""
        from zoo.runs.datasets import describe_length_notes  # tf.data: imported with the models

        notes = self.predictor.length_notes([(premise, hypothesis)])
        line = describe_length_notes(notes) if notes is not None else ""
        return f"{self.name}: {line}" if line else None


def open_model(source):
    """Opens a run directory, a preset, a SavedModel (`MODELS/NAME` or `MODELS/NAME/N`) or a TFLite export.

    The one place where the demo loads models.

    Returns:
        a `DemoModel`.

    Raises:
        FileNotFoundError, OSError, ValueError, zoo.errors.UserError: nothing loadable there (the message
            says why).
    """
    predictor = open_predictor(source)
    name = os.path.basename(os.path.normpath(source)) if "://" not in source else source.rstrip("/").rsplit("/", 1)[-1]
    if name.isdigit():  # MODELS/NAME/N: the model's name is NAME
        name = os.path.basename(os.path.dirname(os.path.normpath(source)))
    note = predictor.run.progress() if predictor.kind == "run" else None  # a run still training, or stopped
    return DemoModel(source, name, predictor, predictor.reads_parse_trees, note)
