"""The run directory: its layout, its JSON files, and what a rerun of `train.py` does with it.

A run directory holds (see docs/architecture.md):
```
RUN/
  config.json       # the run configuration (zoo.training.config.RunConfig) plus what training derived:
                    # vocabulary size, embedding dim, tunable words, tokenizer, labels; written first
  vocab.txt
  manifest.json     # the SHA-256 of the files above and below, written with each commit (zoo.runs.manifest)
  best.weights.h5   # weights of the best dev accuracy (a copy of the run state's best)
  backup/           # the run state a rerun resumes from (zoo.runs.state): one generation per epoch,
                    # committed by backup/state.json; deleted once results.json is written
  history.json      # one entry per finished epoch; "finished" once fit() returned
  results.json      # test accuracy, per-class accuracy, confusion matrix
  evaluations/      # evaluate.py reports
  logs/             # TensorBoard
```
This module decides what a rerun does with those files (`prepare_run_dir`), and holds their names, their
conflicts and remedies; a training run's writes, in their order, are `zoo.runs.directory.RunDirectory`'s.
`config.json` (the typed `RunRecord`) is read and written by `zoo.runs.record`, `results.json` (the typed
`RunResults`) by `zoo.runs.results`.
"""

import dataclasses
import logging
import os
import shutil

from zoo import fileio
from zoo.errors import TrainError
from zoo.runs.manifest import (
    BACKUP_DIR,
    BEST_WEIGHTS_FILE,
    COVERED,
    HISTORY_FILE,
    MANIFEST_FILE,
    VOCAB_FILE,
    check_run,
)
from zoo.runs.record import CONFIG_FILE, CONFIG_REMEDY, load_record, save_record
from zoo.runs.results import RESULTS_FILE, RESULTS_REMEDY, read_results
from zoo.runs.stages import RunStage
from zoo.runs.state import (
    RunState,
    RunStateError,
    is_complete,
    weights_readable,
)

logger = logging.getLogger(__name__)

PREVIOUS_RESULTS_FILE = "results.previous.json"  # a finished run's results while it trains further
LOGS_DIR = "logs"

# What a run directory may hold besides a run: the lock of its writer, the scratch folders of other workers.
KEPT = {fileio.LOCK_NAME, "workers"}

# Config entries that must match for a rerun to resume the run in the same directory (plus
# "embedding_dim" with random vectors).
IDENTITY_KEYS = ("model", "preset", "embeddings", "data", "seed")


# Files only training writes: a folder holding two of these (one of them its weights, state or manifest)
# is a run, even without its config.json.
RUN_FILES = (MANIFEST_FILE, BACKUP_DIR, BEST_WEIGHTS_FILE, VOCAB_FILE, HISTORY_FILE, RESULTS_FILE)


def lost_config(run_dir):
    """Whether `run_dir` holds a run that lost its config.json (two or more of a run's files, its weights,
    state or manifest among them, and no config.json)."""
    has = lambda name: os.path.exists(os.path.join(run_dir, name))  # noqa: E731
    return (os.path.isdir(run_dir) and not has(CONFIG_FILE) and sum(map(has, RUN_FILES)) >= 2
            and any(map(has, RUN_FILES[:3])))


def holds(folder, limit=4):
    """What a folder holds, in a few words: `3 entries: a, b, c`."""
    names = sorted(set(os.listdir(folder)) - KEPT)
    return f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}: " + ", ".join(names[:limit]) + (
        ", ..." if len(names) > limit else "")


def default_run_dir(model_name, root="runs"):
    """The run directory used when `--run-dir` is not given: `runs/MODEL` (deterministic, so that
    rerunning the same command resumes)."""
    return os.path.join(root, model_name)


# What to do about a damaged file of a run, by its name: each remedy is one tests/test_reliability_runs.py
# follows, and the run then ends with the results of an uninterrupted one.
REMEDIES = {
    CONFIG_FILE: CONFIG_REMEDY,
    HISTORY_FILE: "delete it: rerunning train.py on the run writes it again from the run's state or results",
    RESULTS_FILE: RESULTS_REMEDY,
}
DEFAULT_REMEDY = ("the run directory is damaged: delete that file to let a rerun rebuild it, or train again with "
                  "--overwrite")


def read_json(path, default=None):
    """Reads a JSON file of the run, or returns `default` when it does not exist.

    Raises:
        zoo.fileio.CorruptFileError: a damaged file, one line naming it and what to do (`REMEDIES`).
    """
    return fileio.read_json(path, default, remedy=REMEDIES.get(os.path.basename(path), DEFAULT_REMEDY))


def write_json(path, value):
    """Writes `value` as indented JSON atomically (a kill leaves the old file or the new one)."""
    fileio.write_json(path, value)


def save_weights(model, path):
    """`model.save_weights(path)` written under a temporary name and renamed: a kill never truncates it."""
    with fileio.atomic_path(path) as tmp:
        model.save_weights(tmp)


def lock(run_dir):
    """The lock of the one process that writes `run_dir` (`zoo.fileio.DirectoryLock`; a second writer is
    refused with one line naming the holder)."""
    return fileio.DirectoryLock(run_dir, what="run directory")


# Settings a rerun may change without starting again: more epochs train a run further.
RESUMABLE_CHANGES = ("train.epochs",)


def config_differences(old, new, ignore=RESUMABLE_CHANGES):
    """The entries of `new` (identity entries, see `IDENTITY_KEYS`) on which `old` differs, as readable lines
    (preset settings named `section.key`; those in `ignore` are not differences)."""
    lines = []
    for key in list(new) + [k for k in old if k not in new]:  # a run started from another is not one from scratch
        a, b = old.get(key), new.get(key)
        if key == "preset" and isinstance(a, dict) and isinstance(b, dict):
            for section in sorted(set(a) | set(b)):
                sa, sb = a.get(section, {}), b.get(section, {})
                for name in sorted(set(sa) | set(sb)):
                    if sa.get(name) != sb.get(name) and f"{section}.{name}" not in ignore:
                        lines.append(f"{section}.{name}: {sa.get(name)!r} -> {sb.get(name)!r}")
        elif a != b:
            lines.append(f"{key}: {a!r} -> {b!r}")
    return lines


def prepare_run_dir(run_dir, identity, epochs, overwrite=False):
    """Decides what to do with `run_dir` for a run whose identity entries are `identity`.

    Args:
        run_dir: the run directory.
        identity: `{key: value}` for `IDENTITY_KEYS` (`RunConfig.identity()`).
        epochs: the epochs asked for (more than a finished run trained: it trains further).
        overwrite: delete an existing run whose settings differ (or that finished) and start again.

    Returns:
        the `RunStage`: `NEW` (nothing to resume), `RESUME` (same settings, training unfinished: its state, or
        epoch 1 when nothing was committed) or `EVALUATE` (same settings, training finished but no results
        yet) or `FINISHED` (results exist) or `EXTEND` (results exist, and more epochs than the run trained
        are asked for: asked for explicitly, never inferred from a missing backup).

    A run whose settings differ but that never committed an epoch (stopped in its first seconds, or by an
    error before its first epoch ended) holds nothing to lose: it is started again with the new settings,
    with a notice. A finished run being trained further (`RunDirectory.extend`) that is rerun with fewer epochs
    than it is being trained to is refused in one line, unless no epoch of the extension was trained yet
    (then the finished run is put back as it was).

    Raises:
        RunConflictError: when the directory holds a run with other settings and not `overwrite`, or an
            extension is asked for fewer epochs than it was started for.
        zoo.runs.state.RunStateError: a damaged run state (one line saying what to do).
    """
    try:
        old = load_record(run_dir)
    except FileNotFoundError:
        old = None
    except ValueError:  # a damaged config.json (CorruptFileError names it and the remedy: --overwrite)
        if not overwrite:
            raise
        old = None  # the remedy: the damaged run is cleared and trained again
    if old is None:
        # "workers" holds the scratch directories of multi-worker training, created by other processes
        if lost_config(run_dir):  # never --overwrite: that would delete the run
            raise RunConflictError(f"{os.path.join(run_dir, CONFIG_FILE)} is missing: {run_dir} holds a run "
                                   f"({holds(run_dir)}) whose settings are in that file; put the run's "
                                   f"{CONFIG_FILE} back (from a copy of the run), or choose another --run-dir")
        if os.path.isdir(run_dir) and set(os.listdir(run_dir)) - KEPT and not overwrite:
            raise RunConflictError(f"{run_dir} exists and is not a run directory (it holds {holds(run_dir)}): "
                                   "choose another --run-dir, or pass --overwrite to delete what it holds")
        if os.path.isdir(run_dir) and overwrite:
            clear_run_dir(run_dir)
        return RunStage.NEW
    differences = config_differences(old.identity(), identity)
    finished = os.path.exists(os.path.join(run_dir, RESULTS_FILE))
    if differences and not overwrite and not finished and never_trained(run_dir):
        logger.warning(f"{run_dir} held a run with other settings ({'; '.join(differences)}) that never "
                       "finished an epoch: starting it again with these settings")
        clear_run_dir(run_dir)
        return RunStage.NEW
    if differences or (finished and overwrite):
        if not overwrite:
            raise RunConflictError(
                f"{run_dir} holds a run with other settings ({'; '.join(differences)}); rerun with the "
                "same settings to resume, choose another --run-dir, or pass --overwrite to start again")
        clear_run_dir(run_dir)
        return RunStage.NEW
    if finished:
        results = read_results(run_dir)
        trained = old.settings.train.epochs
        ran = len(results.history)
        # A run that trained all its epochs and is asked for more trains further; one that stopped early
        # (its schedule or early stopping) would stop again, so it stays finished.
        return RunStage.EXTEND if epochs > trained and ran >= trained else RunStage.FINISHED
    state = RunState(os.path.join(run_dir, BACKUP_DIR)).load()  # the state decides; RunStateError if damaged
    if state.extension is not None and state.current is not None:
        if extension_state(run_dir, state, epochs, old) is RunStage.FINISHED:
            return RunStage.FINISHED
    if state.current is not None:
        return RunStage.EVALUATE if is_complete(state.current, epochs) else RunStage.RESUME
    try:  # no state: a run before its first commit (trained from epoch 1), or one evaluated from history.json
        history = read_json(os.path.join(run_dir, HISTORY_FILE), {})
    except ValueError:
        history = {}
    finished_training = history.get("finished") and os.path.exists(os.path.join(run_dir, BEST_WEIGHTS_FILE))
    if finished_training and state.legacy is None:
        # evaluated and sealed again: only weights the manifest vouches for (never another run's, copied in)
        check_run(run_dir, [CONFIG_FILE, VOCAB_FILE, BEST_WEIGHTS_FILE], expected=old.manifest)
        return RunStage.EVALUATE
    return RunStage.RESUME


def never_trained(run_dir):
    """Whether a run directory holds no trained epoch: no results, no epoch in its history, no committed
    generation past epoch 0 (a damaged state or history counts as trained: it is reported, not deleted)."""
    if any(os.path.exists(os.path.join(run_dir, name)) for name in (RESULTS_FILE, PREVIOUS_RESULTS_FILE)):
        return False
    try:
        state = RunState(os.path.join(run_dir, BACKUP_DIR)).load()
        history = read_json(os.path.join(run_dir, HISTORY_FILE), {})
    except (RunStateError, ValueError):  # a damaged state.json or history.json
        return False
    if not isinstance(history, dict) or history.get("epochs"):
        return False
    return state.legacy is None and all(g["epoch"] == 0 for g in state.generations) and not state.rejected


def extension_state(run_dir, state, epochs, record):
    """What a rerun asking for `epochs` does with a finished run being trained further: `FINISHED` when no
    epoch of the extension was trained and no more epochs than the finished run's are asked for (its
    results are put back: `results.previous.json` renamed, `config.json`'s epochs restored); else nothing
    (None), the extension resumes.

    Raises:
        RunConflictError: fewer epochs than the extension was started for, once it trained one.
    """
    extension, current = state.extension, state.current["epoch"]
    start, target = extension["from_epoch"], extension["epochs"]
    if current <= start:
        if epochs <= start and os.path.exists(os.path.join(run_dir, PREVIOUS_RESULTS_FILE)):
            settings = record.settings.replace(train={"epochs": start})  # the finished run's, as it was
            save_record(run_dir, dataclasses.replace(record, settings=settings))
            os.replace(os.path.join(run_dir, PREVIOUS_RESULTS_FILE), os.path.join(run_dir, RESULTS_FILE))
            logger.warning(f"{run_dir}: the training further to {target} epochs had not finished an epoch: its "
                           f"{start}-epoch results are back in {RESULTS_FILE}")
            return RunStage.FINISHED
        return None
    if epochs < target:
        raise RunConflictError(
            f"{run_dir} is being trained further from {start} to {target} epochs ({current} done; its {start}-epoch "
            f"results are kept in {PREVIOUS_RESULTS_FILE}): rerun with --epochs {target} to finish it, or pass "
            "--overwrite to train the run again from the start")
    return None


def check_finished_run(run_dir, record):
    """Checks a finished run's files against its manifest but `history.json`, which `check_finished` writes
    again from `results.json` where it is not the finished history.

    Raises:
        zoo.fileio.ManifestError: a file that is not the run's (one line, the remedy).
    """
    check_run(run_dir, [name for name in COVERED if name != HISTORY_FILE], expected=record.manifest)


def check_finished(run_dir, record=None):
    """Checks that a finished run is whole, before `zoo.runs.directory.RunDirectory.finished` seals and tidies
    it: its files against its manifest (unless a kill after its results left the backup or earlier results),
    its best weights readable, and `history.json` written again from the results where it is missing, damaged
    or another.

    Returns:
        `(results, stopped, reseal)`: its `RunResults`; whether a stop after its results left the backup or
        earlier results; whether its manifest must be written again.

    Raises:
        TrainError: its best weights cannot be read (a finished run keeps no other copy of them).
        zoo.fileio.ManifestError: a file that is not the run's (checked against `manifest.json`).
    """
    results = read_results(run_dir)
    best = os.path.join(run_dir, BEST_WEIGHTS_FILE)
    stopped = any(os.path.exists(os.path.join(run_dir, name)) for name in (BACKUP_DIR, PREVIOUS_RESULTS_FILE))
    if not stopped and record is not None:
        check_finished_run(run_dir, record)
    if not weights_readable(best):
        raise TrainError(f"{best} {'cannot be read' if os.path.exists(best) else 'is missing'} and a finished run "
                         "keeps no other copy of it: train the run again with --overwrite (the same command gives "
                         "the same results)")
    path = os.path.join(run_dir, HISTORY_FILE)
    wanted = {"epochs": results.history, "finished": True}
    try:
        whole = read_json(path) == wanted
    except ValueError:
        whole = False
    if not whole:
        write_json(path, wanted)
        logger.info(f"{path} written again from {RESULTS_FILE}")
    try:
        listed = stopped or check_run(run_dir, [HISTORY_FILE], expected=record is not None and record.manifest)
    except fileio.ManifestError:
        listed = False
    return results, stopped, not whole or listed is False


def holder(run_dir):
    """`describe_holder` of the live process writing `run_dir` (its lock), or None."""
    found = lock(run_dir).live_holder()
    return fileio.describe_holder(found) if found else None


def clear_run_dir(run_dir):
    """Deletes a run directory's content, but not `workers/` (other workers of a multi-worker run may be
    writing there right now; each resets its own folder from the chief's state when it starts) nor the
    lock of the process clearing it."""
    for name in os.listdir(run_dir):
        if name in KEPT:
            continue
        path = os.path.join(run_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


class RunConflictError(ValueError):
    """The run directory holds a run with other settings."""
