"""Checkpoints a kill cannot spoil: the best weights, the per-epoch backup to resume from, and a stop at the
first non-finite loss.

Every file is written under a temporary name and renamed (`zoo.fileio.atomic_path`), so a kill leaves the
old file or the new one. The backup keeps the last two epochs' states: when the newest cannot be read
(a disk that lost it, a hand edit), resuming reports it and falls back to the one before, instead of
failing on every rerun. The backup is deleted by the trainer only once `results.json` is written.

Keras's `ModelCheckpoint` and `BackupAndRestore` write their files in place; these are the zoo's own for
that reason. The backup is restored by the trainer before `fit` (`restore` returns the epoch to pass as
`initial_epoch`), through public Keras calls only.
"""

import math
import os

import keras
import numpy as np

from zoo.errors import TrainError
from zoo.runs import layout
from zoo.training.callbacks.monitor import ReplayingMonitor

BACKUP_STATE = "state.json"


class BestCheckpoint(ReplayingMonitor):
    """Saves the weights whenever `monitor` improves (strictly: the earlier of two equal epochs is kept),
    counting the best value of the epochs before a resume.

    Args:
        history: the run's `EpochHistory`.
        path: the best-weights file.
        monitor: the dev metric, higher is better.
    """

    def __init__(self, history, path, monitor="val_accuracy"):
        super().__init__(history, monitor=monitor)
        self.path = path

    def on_improvement(self, epoch, logs):
        if logs.get(self.monitor) is not None:
            layout.save_weights(self.model, self.path)


class Backup(keras.callbacks.Callback):
    """The state to resume from after a kill: after each epoch, the model's and optimizer's weights
    (`epoch-N.weights.h5`) and `state.json`, which names the two newest states. A new state is written
    whole before `state.json` points to it, and older ones are removed only after, so a kill at any moment
    leaves `state.json` naming files that exist.

    Args:
        backup_dir: the run's `backup/` folder.
    """

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir

    def _path(self, epoch):
        return os.path.join(self.backup_dir, f"epoch-{epoch}.weights.h5")

    def _state(self):
        return layout.read_json(os.path.join(self.backup_dir, BACKUP_STATE), {})

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(self.backup_dir, exist_ok=True)
        try:
            kept = [e for e in self._state().get("epochs", []) if e != epoch + 1][:1]
        except ValueError:
            kept = []
        layout.save_weights(self.model, self._path(epoch + 1))
        epochs = [epoch + 1] + kept
        layout.write_json(os.path.join(self.backup_dir, BACKUP_STATE), {"epochs": epochs})
        for name in os.listdir(self.backup_dir):
            if name.startswith("epoch-") and name.endswith(".weights.h5") and \
                    name not in {os.path.basename(self._path(e)) for e in epochs}:
                os.remove(os.path.join(self.backup_dir, name))

    def restore(self):
        """Loads the newest readable state into the model (the optimizer built first, so that its moments
        load too) and returns the number of finished epochs it holds (0: nothing to resume).

        Raises:
            TrainError: states exist but none can be read.
        """
        try:
            epochs = self._state().get("epochs", [])
        except ValueError as error:  # state.json damaged: the files themselves say which epochs they hold
            print(f"[train] {error}; looking for readable backups", flush=True)
            names = os.listdir(self.backup_dir) if os.path.isdir(self.backup_dir) else []
            epochs = sorted((int(n[6:-11]) for n in names if n.startswith("epoch-") and n.endswith(".weights.h5")
                             and n[6:-11].isdigit()), reverse=True)
        candidates = [e for e in epochs if os.path.exists(self._path(e))]
        if not candidates:
            return 0
        if self.model.optimizer is not None and not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)
        problems = []
        for epoch in candidates:
            try:
                self.model.load_weights(self._path(epoch))
            except Exception as error:  # h5py raises OSError, Keras ValueError: any unreadable file
                problems.append(f"{self._path(epoch)} ({first_line(error)})")
                print(f"[train] the backup {self._path(epoch)} cannot be read ({first_line(error)})", flush=True)
                continue
            if problems:
                print(f"[train] resuming from the older backup of epoch {epoch}", flush=True)
            return int(epoch)
        raise TrainError(f"no backup of this run can be read ({'; '.join(problems)}): delete {self.backup_dir} "
                         "to restart from the first epoch, or pass --overwrite")


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
