"""A trained run, on its own floor: its directory layout, loading it back, scoring it.

Export, prediction, evaluation and presets read runs through this package; none of them imports the
training loop (`zoo.training`), which sits above it and writes runs.

- `layout`: the run directory's files, `config.json`, and what a rerun does with an existing directory.
- `state`: the run state in `backup/`, one generation per epoch committed by `state.json`.
- `faults`: the kill -9 hook between write steps (`NLI_ZOO_FAULT_AT`) for the fault tests.
- `run`: `Run` and `load_run` (`zoo.load(run_dir)`).
- `datasets`: the preset's length grid and tf.data batches, shared by training and scoring.
- `evaluation`: accuracy, per-class accuracy, confusion matrix, per genre, printed tables.
"""

from zoo.runs.layout import load_config
from zoo.runs.run import Run, build_model, load_run

__all__ = ["Run", "build_model", "load_config", "load_run"]
