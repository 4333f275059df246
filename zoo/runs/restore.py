"""A run resumed from its committed state: what `RunDirectory.begin` does before the first epoch of a `fit`, and
`RunDirectory.load_best` after the last (`zoo.runs.directory`, whose verbs these are; they name no write for
the kill hook themselves).

Before: the newest readable generation of the state is loaded into the model (the optimizer's moments with
it, or not, for a fine-tuning's copied weights and an extension's first generation), with its history and
best epoch; `history.json` and `best.weights.h5` are written again from it, so a kill between their writes
and the state's commit changes nothing. A newest generation that cannot be read falls back to the one
before, and says so. After: the best weights are loaded for the final evaluation, from the generation's copy
when `best.weights.h5` cannot be read or is not the one committed; never the weights of another epoch.
"""

import logging
import os

from zoo import fileio
from zoo.errors import TrainError
from zoo.runs import layout
from zoo.runs.manifest import HISTORY_FILE
from zoo.runs.stages import RunStage
from zoo.runs.state import best_epoch_of, is_complete, weights_readable

logger = logging.getLogger(__name__)

COMPLETE = "complete"  # what `start` returns for a run whose training is over (it is only evaluated)


def first_line(error):
    """The first line of an exception's message (h5py's can be long), with its class."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__


def start(directory, stage, epochs, weights):
    """Brings the model (through `weights`) and the directory's history and best to the run's committed state.

    Returns:
        the epoch to train from (0 for a new run, or one started again), `COMPLETE` when the state says
        training ended (its history is then written finished by the caller), or None for a finished run
        without results and without a state (it is evaluated from `history.json`).

    Raises:
        TrainError: the run has no consistent state (one line saying what to do).
    """
    state = directory.state
    # what writers killed mid-write left (.best.tmp-PID-*.weights.h5, ...): the run's lock is held
    fileio.clean_stale_temporaries(directory.path)
    if stage is RunStage.NEW:
        directory._start_over()
        return 0
    state.load()
    for epoch, why in state.rejected:
        logger.warning(f"{state.state_path}: its generation of epoch {epoch} is not resumed from ({why}): the "
                       "one before is")
    if state.extension is not None and state.extension["epochs"] != epochs:
        state.extension = dict(state.extension, epochs=int(epochs))  # recorded with the next commit
    if state.legacy is not None:
        state.convert_legacy(history_on_disk(directory), directory.best_path, finished=history_finished(directory))
    if not state.generations:
        if stage is RunStage.EVALUATE:  # a finished run whose results.json was deleted: history.json is whole
            directory.history = layout.read_json(directory.file(HISTORY_FILE), {"epochs": [], "finished": False})
            return None
        done = history_on_disk(directory)
        if done:
            logger.warning(f"{state.state_path} names no finished epoch: training starts again from "
                           f"epoch 1 (the {len(done)} epoch(s) in {HISTORY_FILE} are trained again)")
        directory._start_over()
        return 0
    initial = restore(directory, weights, quiet=stage is RunStage.EXTEND)
    return COMPLETE if is_complete(state.current, epochs) else initial


def restore(directory, weights, quiet=False):
    """Loads the newest readable generation into the model and the directory, and returns the number of
    finished epochs it holds. A newest generation that cannot be read falls back to the one before.

    Raises:
        TrainError: generations exist but none can be read.
    """
    state, problems = directory.state, []
    for record in state.generations:
        try:
            load(directory, weights, record, quiet)
        except Exception as error:  # h5py raises OSError, Keras ValueError: any unreadable file
            problems.append(f"{state.path(record['weights'])} ({first_line(error)})")
            logger.warning(f"the backup of epoch {record['epoch']} cannot be used ({first_line(error)})")
            continue
        if problems:
            logger.info(f"resuming from the older backup of epoch {record['epoch']}")
        adopt(directory, record)
        return int(record["epoch"])
    raise TrainError(f"no backup of this run can be read ({'; '.join(problems)}): delete {state.backup_dir} to train "
                     "again from epoch 1, or pass --overwrite")


def load(directory, weights, record, quiet=False):
    """Loads one generation's weights (checked against the SHA-256 it records first)."""
    directory.state.check_files(record)  # every file it names, as committed (RunStateError names the one at fault)
    path = directory.state.path(record["weights"])
    if record.get("optimizer", True):
        weights.load(path, optimizer=True)
        return
    # the first generation of a finished run trained further (its best weights), or epoch 0 of a run started
    # from another (the copied weights): a new optimizer
    weights.load(path, optimizer=False)
    if quiet:
        return
    if record.get("start") == "init_from":
        logger.info(f"starting from the weights copied from --init-from, committed as epoch 0 ({path})")
    else:
        logger.info(f"resuming a finished run trained further from its best weights (epoch "
                    f"{record['best']['epoch']}): the optimizer starts again")


def adopt(directory, record):
    """Makes `record` the run's state: the newer generations forgotten and their files pruned, its history and
    best the directory's, `history.json` and `best.weights.h5` written again from it."""
    state, best_path = directory.state, directory.best_path
    state.keep_only(record)
    state.prune()
    directory._write_history(record["history"])
    directory.best = best = record.get("best")
    if best is not None and os.path.exists(best_path) and not weights_readable(best_path):
        logger.warning(f"{best_path} cannot be read: the newest readable backup is evaluated instead "
                       f"({state.path(best['file'])}, the best weights of epoch {best['epoch']}, copied back)")
    elif best is not None and os.path.exists(best_path) and not is_committed_best(directory, record):
        logger.warning(f"{best_path} is not the best weights the state committed (changed since): written "
                       f"again from {state.path(best['file'])}")
    state.publish_best(record, best_path)


def is_committed_best(directory, record):
    """Whether the run's best.weights.h5 is the generation's best weights (by the SHA-256 it records)."""
    expected = (record.get("sha256") or {}).get((record.get("best") or {}).get("file"))
    return expected is None or fileio.checksums.HASHER(directory.best_path) == expected


def history_on_disk(directory):
    """The entries of `history.json` as the run left it ([] when missing or unreadable)."""
    try:
        return layout.read_json(directory.file(HISTORY_FILE), {}).get("epochs", [])
    except ValueError:
        return []


def history_finished(directory):
    try:
        return bool(layout.read_json(directory.file(HISTORY_FILE), {}).get("finished"))
    except ValueError:
        return False


def load_best(directory, weights):
    """Loads the best weights for the final evaluation and returns their epoch (None: no epoch had a dev
    score, and the last weights are kept as the best). A `best.weights.h5` that cannot be read is reported
    and the generation's copy is evaluated (and copied back); never the weights of another epoch.

    Raises:
        TrainError: no readable copy of the best weights.
    """
    state, best_path = directory.state, directory.best_path
    record = state.current
    best = (record or {}).get("best")
    if (record is not None and best is None) or (record is None and not os.path.exists(best_path)):
        directory._save(weights, best_path)  # no epoch had a dev score: the last weights
        return None
    try:
        if record is not None and not is_committed_best(directory, record):
            raise ValueError("it is not the best weights the state committed (its SHA-256 differs)")
        weights.load(best_path, optimizer=False)  # evaluation needs no optimizer state
    except Exception as error:  # h5py OSError, Keras ValueError: an unreadable file
        if best is None:
            raise TrainError(f"{best_path} cannot be read ({first_line(error)}) and the run keeps no other copy of "
                             "it: train again with --overwrite (the same command gives the same results)") from None
        copy = state.path(best["file"])
        logger.warning(f"{best_path} cannot be read ({first_line(error)}): the newest readable backup is "
                       f"evaluated instead ({copy}, the best weights of epoch {best['epoch']})")
        try:
            weights.load(copy, optimizer=False)
        except Exception as again:
            raise TrainError(f"{best_path} cannot be read, nor its copy {copy} ({first_line(again)}): delete "
                             f"{state.backup_dir} to train again from epoch 1, or pass --overwrite") from None
        state.publish_best(record, best_path)
    return best["epoch"] if best is not None else best_epoch_of(directory.epochs)
