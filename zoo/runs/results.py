"""A run's scores read back typed: `RunResults` is what `results.json` holds, and this module is the one place
that reads and writes that file.

Training writes it once the best weights are scored on dev and test (`zoo.training.trainer`, and the HIM
ensemble's `zoo.training.ensemble`); everything after training (compare, reproduce, presets, predictors,
evaluate) reads the typed record, never the dict:

```python
from zoo.runs.results import read_results
results = read_results("runs/esim")
results.test_accuracy, results.test["confusion_matrix"], results.best_epoch, len(results.history)
```

A damaged or hand-edited file is refused in one line naming the file and the field (`RunFileError`). Files
written by older versions read as they were: every entry but `test` may be missing (None, or empty).
"""

import dataclasses
import os
from typing import Optional

from zoo import fileio
from zoo.runs.fields import Fields, RunFileError, json_object, labels, short, text, text_list, wrong
from zoo.settings import values

__all__ = ["RESULTS_FILE", "RESULTS_REMEDY", "RunFileError", "RunResults", "read_results", "save_results"]

RESULTS_FILE = "results.json"
RESULTS_REMEDY = "delete it: rerunning train.py on the run evaluates its best weights again and writes it"


@dataclasses.dataclass(frozen=True)
class RunResults:
    """A run's `results.json`, typed.

    Attributes:
        test, dev: the scores of the best weights on each split (`zoo.runs.evaluation.scores`: `"accuracy"`,
            `"examples"`, `"per_class_accuracy"`, `"confusion_matrix"`, and `"members"` for an ensemble).
        test_accuracy, dev_accuracy: their accuracies (the file's entries; the split's when a file lacks one).
        model: the registered model name; run_dir: the folder it was written in.
        epochs_run: the epochs trained; best_epoch: the epoch whose weights were scored (None: unknown).
        history: one dict per epoch (`history.json`'s epochs).
        parameters: `{"total", "trainable", "without_embeddings"}` (`zoo.training.model.parameter_counts`).
        embeddings: the word vectors' source, size, coverage and tunable words.
        labels: the label names by id; members: the member runs of a HIM ensemble.
        batch_shapes, timing, vocabulary, inputs, loss_growth: what training reported about its batches,
            seconds, vocabulary, cut pairs and a growing loss.
        other: entries this version does not know, written back as they were read.
    """

    test: dict
    dev: Optional[dict] = None
    test_accuracy: Optional[float] = None
    dev_accuracy: Optional[float] = None
    model: Optional[str] = None
    run_dir: Optional[str] = None
    epochs_run: Optional[int] = None
    best_epoch: Optional[int] = None
    history: list = dataclasses.field(default_factory=list)
    parameters: Optional[dict] = None
    embeddings: Optional[dict] = None
    labels: Optional[tuple] = None
    members: Optional[tuple] = None
    batch_shapes: Optional[dict] = None
    timing: Optional[dict] = None
    vocabulary: Optional[dict] = None
    inputs: Optional[dict] = None
    loss_growth: Optional[dict] = None
    other: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):  # the accuracies follow the splits unless given
        if self.test_accuracy is None:
            object.__setattr__(self, "test_accuracy", self.test.get("accuracy"))
        if self.dev_accuracy is None and self.dev is not None:
            object.__setattr__(self, "dev_accuracy", self.dev.get("accuracy"))

    def replace(self, **changes):
        """A copy with `changes` (field names)."""
        return dataclasses.replace(self, **changes)

    @property
    def coverage(self):
        """The word vectors' coverage report (`embeddings["coverage"]`), or None."""
        return (self.embeddings or {}).get("coverage")

    # The file's format ------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, value, path=RESULTS_FILE):
        """The record of a `results.json`'s content, checked field by field.

        Raises:
            RunFileError: one line naming `path`, the field and what is wrong with it.
        """
        fields = Fields(value, path, RESULTS_REMEDY)
        test = fields.get("test", _split)
        dev = fields.get("dev", _split, None)
        history = fields.get("history", _history, None)
        best_epoch = fields.get("best_epoch", lambda v, n: v if v is None else values.count(v, n), None)
        members = fields.get("members", lambda v, n: v if v is None else tuple(text_list(v, n)), None)
        known = {f.name for f in dataclasses.fields(cls)} - {"other"}
        return cls(
            test=test, dev=dev, history=history or [], best_epoch=best_epoch, members=members,
            test_accuracy=fields.get("test_accuracy", _accuracy, None),
            dev_accuracy=fields.get("dev_accuracy", _accuracy, None),
            model=fields.get("model", text, None), run_dir=fields.get("run_dir", text, None),
            epochs_run=fields.get("epochs_run", lambda v, n: v if v is None else values.count(v, n, zero=True), None),
            parameters=fields.get("parameters", json_object, None),
            embeddings=fields.get("embeddings", json_object, None),
            labels=fields.get("labels", lambda v, n: v if v is None else tuple(labels(v, n)), None),
            batch_shapes=fields.get("batch_shapes", json_object, None),
            timing=fields.get("timing", json_object, None),
            vocabulary=fields.get("vocabulary", json_object, None),
            inputs=fields.get("inputs", json_object, None),
            loss_growth=fields.get("loss_growth", json_object, None),
            other={k: v for k, v in value.items() if k not in known})

    def to_json(self):
        """The `results.json` content (the format the zoo has always written; entries that are None are left
        out, the history is always written)."""
        written = {
            "model": self.model, "run_dir": self.run_dir,
            "members": None if self.members is None else list(self.members),
            "test": self.test, "dev": self.dev, "test_accuracy": self.test_accuracy, "dev_accuracy": self.dev_accuracy,
            "epochs_run": self.epochs_run, "best_epoch": self.best_epoch, "history": list(self.history),
            "parameters": self.parameters, "embeddings": self.embeddings,
            "labels": None if self.labels is None else list(self.labels), "batch_shapes": self.batch_shapes,
            "timing": self.timing, "vocabulary": self.vocabulary, "inputs": self.inputs,
            "loss_growth": self.loss_growth}
        return {**{k: v for k, v in written.items() if v is not None}, **self.other}


def read_results(run_dir):
    """The run's `RunResults` (None when it has no `results.json` yet).

    Raises:
        RunFileError: one line naming the file and the field (`RESULTS_REMEDY`); CorruptFileError: not JSON.
    """
    path = os.path.join(run_dir, RESULTS_FILE)
    value = fileio.read_json(path, remedy=RESULTS_REMEDY)
    return None if value is None else RunResults.from_json(value, path)


def save_results(run_dir, results):
    """Writes `results` as the run's `results.json`, atomically (`RunDirectory.write_results`, zoo.runs.directory,
    seals it)."""
    fileio.write_json(os.path.join(run_dir, RESULTS_FILE), results.to_json())


# Field checks ---------------------------------------------------------------------------------------
def _split(value, name):
    if isinstance(value, dict) and values.is_number(value.get("accuracy")):
        return value
    return wrong(name, "must be an object with an accuracy")


def _accuracy(value, name):
    return value if value is None or values.is_number(value) else wrong(name, f"must be a number, got {short(value)}")


def _history(value, name):
    if isinstance(value, list) and all(isinstance(e, dict) for e in value):
        return value
    return wrong(name, "must be a list of epochs")
