"""`history.json`: one entry per finished epoch, kept by a callback so that a resumed run knows its past."""

import time

import keras
import numpy as np

from zoo.runs.layout import read_json, write_json


class EpochHistory(keras.callbacks.Callback):
    """Keeps `history.json`: one entry of logs per finished epoch, and `"finished"` after fit().

    On resume, entries of epochs that are trained again are dropped (the first epoch begun tells
    which epoch training restarts from).

    Args:
        path: the history file.
    """

    def __init__(self, path):
        super().__init__()
        self.path = path
        self.state = read_json(path, {"epochs": [], "finished": False})
        self._started = False

    @property
    def epochs(self):
        """Entries `{"epoch": 1-based, metric: value, ...}` of the finished epochs."""
        return self.state["epochs"]

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._started = True
            self.state["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch]
            if epoch > 0:
                print(f"[train] resuming from epoch {epoch + 1}", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        entry = {"epoch": epoch + 1, "time": time.time()}
        entry.update({k: float(v) for k, v in (logs or {}).items() if np.ndim(v) == 0})
        self.state["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch] + [entry]
        write_json(self.path, self.state)

    def on_train_end(self, logs=None):
        self.state["finished"] = True
        write_json(self.path, self.state)


def best_of(history, monitor="val_accuracy"):
    """The best (highest) value of `monitor` in history entries, or None."""
    values = [e[monitor] for e in history if monitor in e]
    return max(values) if values else None
