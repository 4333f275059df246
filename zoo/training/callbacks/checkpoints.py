"""Checkpoints a kill cannot spoil: the best weights, the run's state to resume from (`zoo.runs.state`), and
a stop at the first non-finite loss.

After each epoch, `BestCheckpoint` names the epoch as the generation's best (when dev accuracy improved),
`EpochHistory` writes `history.json`, and `Backup`, after them, writes the model's and optimizer's weights
(the best weights too when the epoch improved: the same file) and then commits the generation with one
atomic write of `backup/state.json`, which names those files and holds the history; only then is
`best.weights.h5` copied from the generation. A
resume reads the state file only: the weights, the history and the best weights come from the generation
it names, and `history.json` and `best.weights.h5` are written again from it, so a kill between any two
writes resumes exactly (tests/test_faults.py kills at each).

Keras's `ModelCheckpoint` and `BackupAndRestore` cannot give that: each writes its own file at its own
time (in place, not under a temporary name), and nothing ties the best weights, the backup and the
history of one epoch together, so a kill between them resumes with a history or best weights of another
epoch. These callbacks use Keras's public `save_weights` / `load_weights` for the files themselves.
"""

import logging
import math
import os
import warnings

import keras
import numpy as np

from zoo import fileio
from zoo.errors import TrainError
from zoo.runs import layout
from zoo.runs.faults import fault_point
from zoo.runs.optimizer import build_optimizer
from zoo.runs.stages import RunStage
from zoo.runs.state import RunState, best_epoch_of, generation, is_complete, weights_name, weights_readable
from zoo.training.callbacks.monitor import ReplayingMonitor

logger = logging.getLogger(__name__)

# Keras's warning when weights are loaded into a model whose optimizer is not built; where that is the
# intent (a finished run trained further: the optimizer starts again), the zoo says so in its own line.
OPTIMIZER_SKIPPED = "Skipping variable loading for optimizer"


class BestCheckpoint(ReplayingMonitor):
    """Names the epoch's weights as the best whenever `monitor` improves (strictly: the earlier of two equal
    epochs is kept), counting the best value of the epochs before a resume. It writes nothing: no callback
    between it and `Backup` changes the weights of an epoch that improved, so `Backup`'s file of the epoch
    (`backup/epoch-N.weights.h5`, model and optimizer) holds them, and the generations name that file as
    their best until another epoch improves; `Backup` copies it to the run's `best.weights.h5` after the
    commit. (It was written apart before, as `best-N.weights.h5`, the same weights a second time: a fifth of a
    steady epoch's end at ESIM's size, `scripts/benchmark_training.py`.)

    Args:
        history: the run's `EpochHistory`.
        monitor: the dev metric, higher is better.

    Attributes:
        latest: the best record `{"epoch": N, "file": name}` of the state, or None before any.
        changed: whether the epoch that ended last wrote new best weights.
    """

    def __init__(self, history, monitor="val_accuracy"):
        super().__init__(history, monitor=monitor)
        self.latest, self.changed = None, False

    def on_epoch_end(self, epoch, logs=None):
        self.changed = False
        super().on_epoch_end(epoch, logs)

    def on_improvement(self, epoch, logs):
        if logs.get(self.monitor) is not None:
            self.latest, self.changed = {"epoch": epoch + 1, "file": weights_name(epoch + 1)}, True
            fault_point("best", epoch + 1)


class Backup(keras.callbacks.Callback):
    """The run's state (`zoo.runs.state`): after each epoch, the model's and optimizer's weights
    (`epoch-N.weights.h5`), then `state.json` naming them, the best weights and the history; the run's
    `best.weights.h5` is copied from the generation after the commit. Put it after `BestCheckpoint`, the
    schedule and early stopping (it records whether they stopped training) and `EpochHistory`.

    Args:
        backup_dir: the run's `backup/` folder.
        history: the run's `EpochHistory` (None: generations without history, for tests).
        best: the run's `BestCheckpoint` (None: no best weights).
        best_path: the run's `best.weights.h5`.
    """

    def __init__(self, backup_dir, history=None, best=None, best_path=None):
        super().__init__()
        self.backup_dir = backup_dir
        self.state = RunState(backup_dir)
        self.history, self.best, self.best_path = history, best, best_path

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(self.backup_dir, exist_ok=True)
        layout.save_weights(self.model, self.state.path(weights_name(epoch + 1)))
        fault_point("weights", epoch + 1)
        record = generation(epoch + 1, weights_name(epoch + 1), self.history.epochs if self.history else [],
                            self.best.latest if self.best else None, stopped=self.model.stop_training)
        self.state.commit(record)
        if self.best is not None and self.best.changed and self.best_path:
            self.state.publish_best(self.state.current, self.best_path)
            fault_point("publish", epoch + 1)
        if self.best_path:  # the run's manifest: its new history.json and best.weights.h5
            layout.seal(self.state.run_dir)
            fault_point("manifest", epoch + 1)

    # Before fit ----------------------------------------------------------------------------------
    def start(self, how, epochs):
        """Brings the model and the callbacks to the run's committed state before `fit`.

        Args:
            how: the `zoo.runs.stages.RunStage` `zoo.runs.layout.prepare_run_dir` decided: `NEW`, `RESUME`,
                `EVALUATE`, or `EXTEND` (a finished run trained further, its state just made by
                `zoo.runs.layout.start_extension`: resumed without saying so again).
            epochs: the epochs asked for.

        Returns:
            the epoch to pass as `initial_epoch`, or None when training is complete (evaluate only).

        Raises:
            TrainError: the run has no consistent state (one line saying what to do).
        """
        # what writers killed mid-write left (.best.tmp-PID-*.weights.h5, ...): the run's lock is held
        fileio.clean_stale_temporaries(self.state.run_dir)
        if how is RunStage.NEW:
            self._start_over()
            return 0
        self.state.load()
        for epoch, why in self.state.rejected:
            logger.warning(f"[train] {self.state.state_path}: its generation of epoch {epoch} is not resumed from "
                           f"({why}): the one before is")
        if self.state.extension is not None and self.state.extension["epochs"] != epochs:
            self.state.extension = dict(self.state.extension, epochs=int(epochs))  # recorded with the next commit
        if self.state.legacy is not None:
            self.state.convert_legacy(self._history_on_disk(), self.best_path, finished=self._history_finished())
        if not self.state.generations:
            if how is RunStage.EVALUATE:  # a finished run whose results.json was deleted: history.json is whole
                self.history.load()
                return None
            done = self._history_on_disk()
            if done:
                logger.warning(f"[train] {self.state.state_path} names no finished epoch: training starts again from "
                               f"epoch 1 (the {len(done)} epoch(s) in {layout.HISTORY_FILE} are trained again)")
            self._start_over()
            return 0
        initial = self.restore(quiet=how is RunStage.EXTEND)
        if is_complete(self.state.current, epochs):
            self.history.reset(self.history.epochs, finished=True)
            fault_point("finished")
            return None
        return initial

    def restore(self, quiet=False):
        """Loads the newest readable generation into the model (the optimizer built first, so that its
        moments load too) and the callbacks, and returns the number of finished epochs it holds (0: nothing
        to resume). A newest generation that cannot be read falls back to the one before.

        Args:
            quiet: do not say that the optimizer starts again (the caller just did).

        Raises:
            TrainError: generations exist but none can be read.
        """
        if not self.state.generations:
            self.state.load()
        problems = []
        for record in self.state.generations:
            try:
                self._load(record, quiet)
            except Exception as error:  # h5py raises OSError, Keras ValueError: any unreadable file
                path = self.state.path(record["weights"])
                problems.append(f"{path} ({first_line(error)})")
                logger.warning(f"[train] the backup of epoch {record['epoch']} cannot be used ({first_line(error)})")
                continue
            if problems:
                logger.info(f"[train] resuming from the older backup of epoch {record['epoch']}")
            self._adopt(record)
            return int(record["epoch"])
        if not problems:
            return 0
        raise TrainError(f"no backup of this run can be read ({'; '.join(problems)}): delete {self.backup_dir} "
                         "to train again from epoch 1, or pass --overwrite")

    def _load(self, record, quiet=False):
        self.state.check_files(record)  # every file it names, as committed (RunStateError names the one at fault)
        path = self.state.path(record["weights"])
        if record.get("optimizer", True):
            build_optimizer(self.model)
            self.model.load_weights(path)
            return
        # the first generation of a finished run trained further (its best weights), or epoch 0 of a run started
        # from another (the copied weights): a new optimizer
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=OPTIMIZER_SKIPPED)
            self.model.load_weights(path)
        if quiet:
            return
        if record.get("start") == "init_from":
            logger.info(f"[train] starting from the weights copied from --init-from, committed as epoch 0 ({path})")
        else:
            logger.info(f"[train] resuming a finished run trained further from its best weights (epoch "
                        f"{record['best']['epoch']}): the optimizer starts again")

    def _adopt(self, record):
        self.state.keep_only(record)
        self.state.prune()
        if self.history is not None:
            self.history.reset(record["history"])
        if self.best is not None:
            self.best.latest = record.get("best")
        if self.best_path:
            best = record.get("best")
            if best is not None and os.path.exists(self.best_path) and not weights_readable(self.best_path):
                logger.warning(f"[train] {self.best_path} cannot be read: the newest readable backup is evaluated "
                               f"instead ({self.state.path(best['file'])}, the best weights of epoch {best['epoch']}, "
                               "copied back)")
            elif best is not None and os.path.exists(self.best_path) and not self._is_committed_best(record):
                logger.warning(f"[train] {self.best_path} is not the best weights the state committed (changed "
                               f"since): written again from {self.state.path(best['file'])}")
            self.state.publish_best(record, self.best_path)

    def _is_committed_best(self, record):
        """Whether the run's best.weights.h5 is the generation's best weights (by the SHA-256 it records)."""
        expected = (record.get("sha256") or {}).get((record.get("best") or {}).get("file"))
        return expected is None or fileio.checksums.HASHER(self.best_path) == expected

    def _history_on_disk(self):
        """The entries of `history.json` as the run left it ([] when missing or unreadable)."""
        try:
            return layout.read_json(os.path.join(self.state.run_dir, layout.HISTORY_FILE), {}).get("epochs", [])
        except ValueError:
            return []

    def _history_finished(self):
        try:
            return bool(layout.read_json(os.path.join(self.state.run_dir, layout.HISTORY_FILE), {}).get("finished"))
        except ValueError:
            return False

    def _start_over(self):
        """Training from epoch 1: whatever an earlier attempt wrote before its first commit is dropped."""
        self.history.reset([])
        if self.best_path and os.path.exists(self.best_path):
            os.remove(self.best_path)

    # After fit ------------------------------------------------------------------------------------
    def load_best(self):
        """Loads the best weights for the final evaluation and returns their epoch (None: no epoch had a dev
        score, and the last weights are kept as the best). A `best.weights.h5` that cannot be read is
        reported and the generation's copy is evaluated (and copied back); never the weights of another
        epoch.

        Raises:
            TrainError: no readable copy of the best weights.
        """
        record = self.state.current
        best = (record or {}).get("best")
        if (record is not None and best is None) or (record is None and not os.path.exists(self.best_path)):
            layout.save_weights(self.model, self.best_path)  # no epoch had a dev score: the last weights
            return None
        try:
            if record is not None and not self._is_committed_best(record):
                raise ValueError("it is not the best weights the state committed (its SHA-256 differs)")
            with warnings.catch_warnings():  # evaluation needs no optimizer state (none built without training)
                warnings.filterwarnings("ignore", message=OPTIMIZER_SKIPPED)
                self.model.load_weights(self.best_path)
        except Exception as error:  # h5py OSError, Keras ValueError: an unreadable file
            if best is None:
                raise TrainError(f"{self.best_path} cannot be read ({first_line(error)}) and the run keeps no other "
                                 "copy of it: train again with --overwrite (the same command gives the same "
                                 "results)") from None
            copy = self.state.path(best["file"])
            logger.warning(f"[train] {self.best_path} cannot be read ({first_line(error)}): the newest readable "
                           f"backup is evaluated instead ({copy}, the best weights of epoch {best['epoch']})")
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=OPTIMIZER_SKIPPED)
                    self.model.load_weights(copy)
            except Exception as again:
                raise TrainError(f"{self.best_path} cannot be read, nor its copy {copy} ({first_line(again)}): "
                                 f"delete {self.backup_dir} to train again from epoch 1, or pass --overwrite") from None
            self.state.publish_best(record, self.best_path)
        return best["epoch"] if best is not None else best_epoch_of(self.history.epochs)


class NonFiniteLossError(TrainError):
    """Training produced a NaN or infinite loss."""


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first NaN or infinite loss, before the epoch's checkpoints and history are
    written, so the run keeps its last good state (as `keras.callbacks.TerminateOnNaN` checks each batch,
    but raising: the trainer then reports it in one line and writes no results).
    """

    def __init__(self):
        super().__init__()
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(np.asarray(loss))):
            raise NonFiniteLossError(f"the training loss became {float(np.asarray(loss))} at epoch {self.epoch + 1}, "
                                     f"step {batch + 1}")

    def on_epoch_end(self, epoch, logs=None):
        for key in ("loss", "val_loss"):
            value = (logs or {}).get(key)
            if value is not None and not math.isfinite(float(np.asarray(value))):
                raise NonFiniteLossError(f"the {'dev' if key == 'val_loss' else 'training'} loss became "
                                         f"{float(np.asarray(value))} at epoch {epoch + 1}")


def first_line(error):
    """The first line of an exception's message (h5py's can be long), with its class."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__
