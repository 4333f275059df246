"""A finished run as a preset: `export_preset(run, out_dir)` (`export.py --format preset`).

```python
export_preset("runs/bowman_lstm", "presets/bowman_lstm")   # a run directory or zoo.load(...)'s Run
```

The export holds the run's lock (`zoo.runs.layout.lock`, the one training holds: a run that is training
is refused in one line) while it reads the run, and `write_preset` holds the preset folder's lock while
it builds the preset beside the folder and moves it in whole (`zoo.presets.saving`).

What a preset takes from the run's `config.json` is read in one place, `RunSettings.of(config)`.
"""

import dataclasses
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

# The Adam settings of a run's training that a classifier's `compile()` fine-tunes with.
OPTIMIZER_KEYS = ("learning_rate", "beta_1", "beta_2", "epsilon", "global_clipnorm")


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What a preset takes from a run's `config.json`: the one place its keys are read.

    Attributes:
        model: the registered model name.
        max_premise_length, max_hypothesis_length: the data's truncation (None: none).
        optimizer: the run's Adam settings (`OPTIMIZER_KEYS` it has).
        provenance: what metadata.json records of the run (data, vectors, training settings, seed...).
    """

    model: str
    max_premise_length: int | None = None
    max_hypothesis_length: int | None = None
    optimizer: dict = dataclasses.field(default_factory=dict)
    data: dict | str | None = None
    embeddings: dict = dataclasses.field(default_factory=dict)
    training: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, config):
        """The settings of a run's `config.json` content (a dict)."""
        preset = config.get("preset") or {}
        data, train = preset.get("data") or {}, preset.get("train") or {}
        return cls(
            model=config["model"],
            max_premise_length=data.get("max_premise_length"),
            max_hypothesis_length=data.get("max_hypothesis_length"),
            optimizer={key: train[key] for key in OPTIMIZER_KEYS if key in train},
            data=config.get("data"),
            embeddings={"source": config.get("embeddings"), "dim": config.get("embedding_dim"),
                        "tunable_words": config.get("tunable_words"), "num_tunable": config.get("num_tunable")},
            training={"preset": config.get("preset"), "overrides": config.get("overrides", {}),
                      "seed": config.get("seed"), "mixed_precision": config.get("mixed_precision"),
                      "init_from": config.get("init_from")})


def classifier_from_run(run):
    """The `NLIClassifier` of a loaded run (`zoo.runs.Run`): its model, tokenizer, vocabulary, the
    truncation of its data, its labels, and its optimiser settings for fine-tuning.

    Args:
        run: a `zoo.runs.Run`.

    Returns:
        an `NLIClassifier` sharing the run's model.
    """
    settings = RunSettings.of(run.config)
    model = run.model
    tokenizer = NLITokenizer(run.vocab, lowercase=run.tokenizer.lowercase)
    preprocessor = NLIPreprocessor(tokenizer, max_premise_length=settings.max_premise_length,
                                   max_hypothesis_length=settings.max_hypothesis_length, labels=run.labels,
                                   parse_trees=model.reads_parse_trees,
                                   max_depth=getattr(model, "max_depth", None) if model.reads_parse_trees else None)
    return NLIClassifier(model, preprocessor, optimizer_settings=settings.optimizer,
                         name=f"{settings.model}_classifier")


def run_metadata(run):
    """What a preset records of the run it comes from: the model's name and paper, the data, the vectors,
    the training settings, and the results the run measured.

    Raises:
        PresetError: the run has no results yet (training unfinished, or not evaluated).
    """
    settings = RunSettings.of(run.config)
    results = run.results
    if not results:
        raise PresetError(f"{run.run_dir}: the run has no results.json (training unfinished?): finish it "
                          "(rerun train.py with the same settings) before exporting a preset")
    spec = get_spec(settings.model)

    def scores(split):
        entry = results.get(split) or {}
        accuracy = results.get(f"{split}_accuracy", entry.get("accuracy"))
        return {"accuracy": accuracy, "examples": entry.get("examples"),
                "per_class_accuracy": entry.get("per_class_accuracy")}

    return {
        "model": settings.model,
        "paper": spec.paper,
        "paper_parameters_without_embeddings": spec.paper_params,
        "data": settings.data,
        "embeddings": {**settings.embeddings, "coverage": (results.get("embeddings") or {}).get("coverage")},
        "training": {"preset": settings.training["preset"], "overrides": settings.training["overrides"],
                     "seed": settings.training["seed"], "epochs_run": results.get("epochs_run"),
                     "best_epoch": results.get("best_epoch"), "mixed_precision": settings.training["mixed_precision"],
                     "init_from": settings.training["init_from"]},
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
