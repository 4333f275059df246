"""A finished run as a preset: `export_preset(run, out_dir)` (`export.py --format preset`).

```python
export_preset("runs/bowman_lstm", "presets/bowman_lstm")   # a run directory or zoo.load(...)'s Run
```

The export holds the run's lock (`zoo.runs.layout.lock`, the one training holds: a run that is training
is refused in one line) while it reads the run, and `write_preset` holds the preset folder's lock while
it builds the preset beside the folder and moves it in whole (`zoo.presets.saving`).

What a preset folder takes from the run is read from its typed record (`zoo.runs.record.RunRecord`).
"""

import errno
import os
import socket

from zoo.fileio import LockedError, describe_holder
from zoo.presets.classifier import NLIClassifier
from zoo.presets.files import PresetError
from zoo.presets.preprocessor import NLIPreprocessor
from zoo.presets.saving import write_preset
from zoo.presets.tokenizer import NLITokenizer
from zoo.registry import get_spec
from zoo.runs import layout
from zoo.runs.run import load_run

# The train settings of a run that build its optimizer: what a classifier's `compile()` fine-tunes with.
OPTIMIZER_KEYS = ("optimizer", "learning_rate", "beta_1", "beta_2", "epsilon", "global_clipnorm")


def classifier_from_run(run):
    """The `NLIClassifier` of a loaded run (`zoo.runs.Run`): its model, tokenizer, vocabulary, the
    truncation of its data, its labels, and its optimiser settings for fine-tuning.

    Args:
        run: a `zoo.runs.Run`.

    Returns:
        an `NLIClassifier` sharing the run's model.
    """
    record = run.record
    model = run.model
    train = record.settings.train.to_json()
    tokenizer = NLITokenizer(run.vocab, lowercase=run.tokenizer.lowercase)
    preprocessor = NLIPreprocessor(tokenizer, max_premise_length=record.settings.data.max_premise_length,
                                   max_hypothesis_length=record.settings.data.max_hypothesis_length, labels=run.labels,
                                   parse_trees=model.reads_parse_trees,
                                   max_depth=getattr(model, "max_depth", None) if model.reads_parse_trees else None)
    return NLIClassifier(model, preprocessor, optimizer_settings={key: train[key] for key in OPTIMIZER_KEYS},
                         name=f"{record.model}_classifier")


def run_metadata(run):
    """What a preset records of the run it comes from: the model's name and paper, the data, the vectors,
    the training settings, and the results the run measured.

    Raises:
        PresetError: the run has no results yet (training unfinished, or not evaluated).
    """
    record = run.record
    results = run.results
    if not results:
        raise PresetError(f"{run.run_dir}: the run has no results.json (training unfinished?): finish it "
                          "(rerun train.py with the same settings) before exporting a preset")
    spec = get_spec(record.model)

    def scores(split):
        entry = getattr(results, split) or {}
        accuracy = getattr(results, f"{split}_accuracy")
        return {"accuracy": accuracy, "examples": entry.get("examples"),
                "per_class_accuracy": entry.get("per_class_accuracy")}

    return {
        "model": record.model,
        "paper": spec.paper,
        "paper_parameters_without_embeddings": spec.paper_params,
        "data": None if record.data is None else record.data.to_json(),
        "embeddings": {"source": record.embeddings, "dim": record.embedding_dim,
                       "tunable_words": record.tunable_words, "num_tunable": record.num_tunable,
                       "coverage": results.coverage},
        "training": {"preset": record.settings.to_json(), "overrides": dict(record.overrides), "seed": record.seed,
                     "epochs_run": results.epochs_run, "best_epoch": results.best_epoch,
                     "mixed_precision": record.mixed_precision,
                     "init_from": None if record.init_from is None else record.init_from.to_json()},
        "results": {"dev": scores("dev"), "test": scores("test")},
        "run": os.path.basename(os.path.normpath(run.run_dir)),
    }


class _RunLock:
    """The run's lock for an export: refuses a run another process writes (training, one line). A run
    this process has locked already (a caller that holds the lock around the export) needs no second
    lock; a run folder this process cannot write (read-only) cannot be training, and is exported without."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.lock = layout.lock(run_dir)

    def __enter__(self):
        try:
            self.lock.acquire()
        except LockedError as error:
            if error.holder.get("pid") == os.getpid() and error.holder.get("host") == socket.gethostname():
                return self
            raise PresetError(f"{self.run_dir}: the run is in use by {describe_holder(error.holder)} (training?); "
                              f"export it once that process has finished; if no such process runs, delete "
                              f"{error.lock_path}") from None
        except OSError as error:
            if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
        return self

    def __exit__(self, *exc):
        self.lock.release()


def export_preset(run, out_dir, overwrite=False):
    """Exports a finished run as a preset directory in KerasHub's layout (see `zoo.presets.files`).

    Args:
        run: a `zoo.runs.Run` (`zoo.load(run_dir)`), or a run directory.
        out_dir: the preset directory to write.
        overwrite: replace an existing non-empty folder.

    Returns:
        `out_dir`.

    Raises:
        PresetError: `out_dir` exists and is not empty (without `overwrite`), the run has no results, or
            another process writes the run (training) or the preset folder.
    """
    run_dir = os.fspath(run) if isinstance(run, (str, os.PathLike)) else run.run_dir
    with _RunLock(run_dir):
        if isinstance(run, (str, os.PathLike)):
            run = load_run(run_dir)
        metadata = run_metadata(run)
        classifier = classifier_from_run(run)
        classifier.preset_metadata = metadata
        return write_preset(classifier, out_dir, overwrite=overwrite)
