"""A trained run, on its own floor: its directory layout, loading it back, scoring it.

Export, prediction, evaluation and presets read runs through this package; none of them imports the
training loop (`zoo.training`), which sits above it and writes runs.

- `record`: `RunRecord`, the run's `config.json` read back typed (the one module that reads and writes it).
- `results`: `RunResults`, the run's `results.json` read back typed (the one module that reads and writes it).
- `fields`: the checks of those files' fields, each failure one line naming the file and the field.
- `layout`: the run directory's files and what a rerun does with an existing directory (a `stages.RunStage`).
- `state`: the run state in `backup/`, one generation per epoch committed by `state.json`.
- `faults`: the kill -9 hook between write steps (`NLI_ZOO_FAULT_AT`) for the fault tests.
- `run`: `Run` and `load_run` (`zoo.load(run_dir)`).
- `datasets`: the preset's length grid and tf.data batches, shared by training and scoring.
- `evaluation`: accuracy, per-class accuracy, confusion matrix, per genre, printed tables.
"""

import importlib

from zoo.runs.record import RunRecord, load_record

__all__ = ["Run", "RunRecord", "build_model", "load_record", "load_run"]

# `Run`, `build_model` and `load_run` import TensorFlow and keras (about 6 s together): they are loaded on
# first use, so that importing a light module of this package (`zoo.runs.record`, `zoo.runs.layout`) does
# not start TensorFlow before a command has filtered its start-up lines (`zoo.quiet`).
_LAZY = {"Run": "zoo.runs.run", "build_model": "zoo.runs.run", "load_run": "zoo.runs.run"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zoo.runs' has no attribute {name!r}")
