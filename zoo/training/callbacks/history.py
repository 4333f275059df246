"""`history.json`: one entry per finished epoch, written by the run directory at each epoch's end, so that a
resumed run knows its past.

The run's state (`backup/state.json`, `zoo.runs.state`) holds the same entries, committed with the
epoch's weights: a resume takes them from there (`RunDirectory.begin`) and writes `history.json` again, so a
kill between this file's write and the commit changes nothing."""

import keras
import numpy as np


class EpochHistory(keras.callbacks.Callback):
    """Writes each finished epoch's scalar logs to the run's history (`RunDirectory.record_epoch`), and marks it
    finished after fit() (`end_training`). On resume, the entries of epochs trained again are dropped (the
    first epoch begun tells which epoch training restarts from).

    Args:
        directory: the run's `RunDirectory`.
    """

    def __init__(self, directory):
        super().__init__()
        self.directory = directory

    @property
    def epochs(self):
        """Entries `{"epoch": 1-based, metric: value, ...}` of the finished epochs."""
        return self.directory.epochs

    def on_epoch_begin(self, epoch, logs=None):
        self.directory.resuming(epoch)

    def on_epoch_end(self, epoch, logs=None):
        self.directory.record_epoch(epoch + 1, {k: float(v) for k, v in (logs or {}).items() if np.ndim(v) == 0})

    def on_train_end(self, logs=None):
        self.directory.end_training()


def best_of(history, monitor="val_accuracy"):
    """The best (highest) value of `monitor` in history entries, or None."""
    values = [e[monitor] for e in history if monitor in e]
    return max(values) if values else None
