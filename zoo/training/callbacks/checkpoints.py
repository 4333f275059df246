"""The callbacks that end an epoch of a run (its best weights, the run's state to resume from) and a stop at the
first non-finite loss.

After each epoch, `BestCheckpoint` names the epoch's weights the best when dev accuracy improved,
`EpochHistory` (`zoo.training.callbacks.history`) writes `history.json`, and `EpochCommit`, after them,
writes the model's and optimizer's weights and commits the epoch's generation of the run state: each asks
the run's `zoo.runs.directory.RunDirectory`, which owns those writes and their order, and resumes from the
state (a kill between any two of them resumes exactly: tests/test_protocol.py kills at each).

Keras's `ModelCheckpoint` and `BackupAndRestore` cannot give that: each writes its own file at its own
time (in place, not under a temporary name), and nothing ties the best weights, the backup and the
history of one epoch together, so a kill between them resumes with a history or best weights of another
epoch. The weights themselves go through Keras's public `save_weights` / `load_weights`
(`zoo.training.weights.ModelWeights`).
"""

import math

import keras
import numpy as np

from zoo.errors import TrainError
from zoo.training.callbacks.monitor import ReplayingMonitor
from zoo.training.weights import ModelWeights


class BestCheckpoint(ReplayingMonitor):
    """Names the epoch's weights the best whenever `monitor` improves (strictly: the earlier of two equal
    epochs is kept), counting the best value of the epochs before a resume. It writes nothing: no callback
    between it and `EpochCommit` changes the weights of an epoch that improved, so the epoch's weights file of
    the run state (`backup/epoch-N.weights.h5`, model and optimizer) holds them, and the generations name that
    file as their best until another epoch improves; the run directory copies it to `best.weights.h5` after
    the commit.

    Args:
        directory: the run's `RunDirectory` (its history is replayed on resume).
        monitor: the dev metric, higher is better.
    """

    def __init__(self, directory, monitor="val_accuracy"):
        super().__init__(directory, monitor=monitor)
        self.directory = directory

    def on_improvement(self, epoch, logs):
        if logs.get(self.monitor) is not None:
            self.directory.name_best(epoch + 1)


class EpochCommit(keras.callbacks.Callback):
    """Commits each epoch's generation of the run state (`RunDirectory.commit_epoch`: the model's and
    optimizer's weights, `backup/state.json`, `best.weights.h5`, the manifest). Put it after
    `BestCheckpoint`, the schedule and early stopping (it records whether they stopped training) and
    `EpochHistory`.

    Args:
        directory: the run's `RunDirectory`.
    """

    def __init__(self, directory):
        super().__init__()
        self.directory = directory

    def on_epoch_end(self, epoch, logs=None):
        self.directory.commit_epoch(epoch + 1, ModelWeights(self.model), stopped=self.model.stop_training)


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
