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
This module reads and writes those files; `config.json` (the typed `RunRecord`) is read and written by
`zoo.runs.record`, `results.json` (the typed `RunResults`) by `zoo.runs.results`.
"""

import dataclasses
import logging
import os
import shutil

from zoo import fileio
from zoo.errors import TrainError
from zoo.runs.faults import fault_point
from zoo.runs.manifest import (BACKUP_DIR, BEST_WEIGHTS_FILE, COVERED, HISTORY_FILE, MANIFEST_FILE, VOCAB_FILE,
                               check_run, recorded, seal)
from zoo.runs.record import CONFIG_FILE, CONFIG_REMEDY, load_record, save_record
from zoo.runs.results import RESULTS_FILE, RESULTS_REMEDY, read_results, save_results
from zoo.runs.stages import RunStage
from zoo.runs.state import (RunState, RunStateError, generation, is_complete, remove_backup, weights_name,
                            weights_readable)

logger = logging.getLogger(__name__)

PREVIOUS_RESULTS_FILE = "results.previous.json"  # a finished run's results while it trains further
LOGS_DIR = "logs"

# What a run directory may hold besides a run: the lock of its writer, the scratch folders of other workers.
KEPT = {fileio.LOCK_NAME, "workers"}

# Config entries that must match for a rerun to resume the run in the same directory (plus
# "embedding_dim" with random vectors).
IDENTITY_KEYS = ("model", "preset", "embeddings", "data", "seed")


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
    with a notice. A finished run being trained further (`start_extension`) that is rerun with fewer epochs
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
        if os.path.isdir(run_dir) and set(os.listdir(run_dir)) - KEPT and not overwrite:
            raise RunConflictError(f"{run_dir} exists and is not a run directory; "
                                   "choose another --run-dir or pass --overwrite")
        if os.path.isdir(run_dir) and overwrite:
            clear_run_dir(run_dir)
        return RunStage.NEW
    differences = config_differences(old.identity(), identity)
    finished = os.path.exists(os.path.join(run_dir, RESULTS_FILE))
    if differences and not overwrite and not finished and never_trained(run_dir):
        logger.warning(f"[train] {run_dir} held a run with other settings ({'; '.join(differences)}) that never "
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
    return RunStage.EVALUATE if finished_training and state.legacy is None else RunStage.RESUME


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
            logger.warning(f"[train] {run_dir}: the training further to {target} epochs had not finished an epoch: its "
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
    """Checks a finished run's files against its manifest but `history.json`, which `finished_run` writes
    again from `results.json` where it is not the finished history.

    Raises:
        zoo.fileio.ManifestError: a file that is not the run's (one line, the remedy).
    """
    check_run(run_dir, [name for name in COVERED if name != HISTORY_FILE], expected=record.manifest)


def finished_run(run_dir, record=None):
    """The results of a finished run, once it is checked to be whole; what a kill after its results left
    (the backup, earlier results) is removed and a missing, damaged or other `history.json` is written
    again from the results.

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
        logger.info(f"[train] {path} written again from {RESULTS_FILE}")
    try:
        listed = stopped or check_run(run_dir, [HISTORY_FILE], expected=record is not None and record.manifest)
    except fileio.ManifestError:
        listed = False
    if stopped or not whole or listed is False:
        seal(run_dir)
        fault_point("sealed")
    if stopped:
        finish(run_dir)
        logger.info(f"[train] removed what a stop after writing {RESULTS_FILE} left (backup/, {PREVIOUS_RESULTS_FILE})")
    return results


def start_extension(run_dir, epochs):
    """Makes a finished run one that resumes from its best weights with a new optimizer: the first generation
    of its state is the finished run (its best weights, its history), the state records the extension's
    target (`epochs`), and its results are kept as `results.previous.json` until the longer run writes new
    ones (a kill in between resumes the extension, or, before its first epoch, puts the run back).

    Kill hooks: `extend:best`, `state@N`, `prune@N` (N: the finished run's epochs), `extend:history`,
    `extend:results`, `manifest@N`.

    Raises:
        TrainError: its best weights are missing (nothing to train further from).
        zoo.fileio.ManifestError: a file that is not the finished run's (one line, the remedy).
    """
    results = read_results(run_dir)
    best_path = os.path.join(run_dir, BEST_WEIGHTS_FILE)
    # what it trains further from, as the finished run wrote it (history.json is written again below)
    check_run(run_dir, [CONFIG_FILE, BEST_WEIGHTS_FILE, RESULTS_FILE], expected=load_record(run_dir).manifest)
    if results.best_epoch is None or not weights_readable(best_path):
        raise TrainError(f"{run_dir} cannot be trained further: its best weights ({best_path}) cannot be read; "
                         "train the run again with --overwrite and the new --epochs")
    history = results.history
    backup = os.path.join(run_dir, BACKUP_DIR)
    shutil.rmtree(backup, ignore_errors=True)  # a stale one, left by a stop after results.json
    state = RunState(backup)
    state.extension = {"from_epoch": len(history), "epochs": int(epochs)}
    best = state.save_best_copy(best_path, results.best_epoch)
    fault_point("extend:best")
    state.commit(generation(len(history), best["file"], history, best, optimizer=False, start="extension"))
    write_json(os.path.join(run_dir, HISTORY_FILE), {"epochs": history, "finished": False})
    fault_point("extend:history")
    os.replace(os.path.join(run_dir, RESULTS_FILE), os.path.join(run_dir, PREVIOUS_RESULTS_FILE))
    fault_point("extend:results")
    seal(run_dir)
    fault_point("manifest", len(history))


def write_results(run_dir, results):
    """Writes `results.json` (a `RunResults`) and the manifest that seals it, then deletes what it supersedes
    (`finish`)."""
    save_results(run_dir, results)
    fault_point("results")
    seal(run_dir)
    fault_point("sealed")
    finish(run_dir)


def finish(run_dir):
    """Deletes the run's backup and earlier results once `results.json` is written (never before: until
    then the backup is what a rerun evaluates)."""
    remove_backup(os.path.join(run_dir, BACKUP_DIR), os.path.join(run_dir, PREVIOUS_RESULTS_FILE))


def restore_vocabulary(run_dir, vocab, record):
    """Writes a finished run's `vocab.txt` again from the vocabulary rebuilt from its data, once checked to be
    the one the run was trained with (its SHA-256 in `manifest.json`).

    Raises:
        zoo.fileio.ManifestError: no manifest to check it against, or a vocabulary that differs (the data or
            the word vectors changed since the run was trained).
    """
    path = os.path.join(run_dir, VOCAB_FILE)
    expected = (recorded(run_dir, expected=record.manifest) or {}).get(VOCAB_FILE)
    if expected is None:
        raise fileio.ManifestError(f"{path} is missing and {MANIFEST_FILE} records no checksum to rebuild it against: "
                                   "train the run again with --overwrite", path, VOCAB_FILE)
    tmp = fileio.temporary_name(path)
    vocab.save(tmp)
    if fileio.sha256_file(tmp) != expected:
        os.remove(tmp)
        raise fileio.ManifestError(f"{path} is missing, and the vocabulary rebuilt from the data is not the one the run "
                                   f"was trained with (its SHA-256 differs from {MANIFEST_FILE}'s): the data or the word "
                                   "vectors changed since; put the run's vocab.txt back, or train the run again with "
                                   "--overwrite", path, VOCAB_FILE)
    os.replace(tmp, path)
    logger.info(f"[train] {path} rebuilt from the data (its SHA-256 is the one {MANIFEST_FILE} records)")


def commit_start(run_dir, model, source):
    """Commits the weights a run starts from (copied from the run `source`, `--init-from`) as epoch 0 of its
    state, before any epoch is trained: a rerun resumes from them whatever happens to `source`.

    Kill hooks: `weights@0`, `state@0`, `prune@0`.
    """
    state = RunState(os.path.join(run_dir, BACKUP_DIR))
    os.makedirs(state.backup_dir, exist_ok=True)
    save_weights(model, state.path(weights_name(0)))
    fault_point("weights", 0)
    state.commit(generation(0, weights_name(0), [], None, optimizer=False, start="init_from"))
    logger.info(f"[train] the weights of {source} are epoch 0 of {state.backup_dir}: a rerun starts from them")


def current_generation(run_dir):
    """The newest trusted generation of the run's state, or None (no state, or none committed)."""
    return RunState(os.path.join(run_dir, BACKUP_DIR)).load().current


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
