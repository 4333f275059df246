"""`history.json`: one entry per finished epoch, kept by a callback so that a resumed run knows its past.

The run's state (`backup/state.json`, `zoo.runs.state`) holds the same entries, committed with the
epoch's weights: a resume takes them from there (`reset`) and writes `history.json` again, so a kill
between this file's write and the commit changes nothing."""

import logging
import time

import keras
import numpy as np

from zoo.runs.faults import fault_point
from zoo.runs.layout import read_json, write_json

logger = logging.getLogger(__name__)


class EpochHistory(keras.callbacks.Callback):
    """Keeps `history.json`: one entry of logs per finished epoch, and `"finished"` after fit().

    It starts empty: the trainer gives it the entries of the state it resumes (`reset`), or of a finished
    run's `history.json` (`load`). On resume, entries of epochs that are trained again are dropped (the
    first epoch begun tells which epoch training restarts from).

    Args:
        path: the history file.
    """

    def __init__(self, path):
        super().__init__()
        self.path = path
        self.state = {"epochs": [], "finished": False}
        self._started = False

    def load(self):
        """Takes the entries of `history.json` (a finished run's).

        Raises:
            zoo.fileio.CorruptFileError: a damaged file, one line naming it.
        """
        self.state = read_json(self.path, {"epochs": [], "finished": False})

    def reset(self, epochs, finished=False):
        """Makes `epochs` the history (those of the state a run resumes from) and writes `history.json`."""
        self.state = {"epochs": list(epochs), "finished": bool(finished)}
        write_json(self.path, self.state)

    @property
    def epochs(self):
        """Entries `{"epoch": 1-based, metric: value, ...}` of the finished epochs."""
        return self.state["epochs"]

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._started = True
            self.state["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch]
            if epoch > 0:
                logger.info(f"[train] resuming from epoch {epoch + 1}")

    def on_epoch_end(self, epoch, logs=None):
        entry = {"epoch": epoch + 1, "time": time.time()}
        entry.update({k: float(v) for k, v in (logs or {}).items() if np.ndim(v) == 0})
        self.state["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch] + [entry]
        write_json(self.path, self.state)
        fault_point("history", epoch + 1)

    def on_train_end(self, logs=None):
        self.state["finished"] = True
        write_json(self.path, self.state)
        fault_point("finished")


def best_of(history, monitor="val_accuracy"):
    """The best (highest) value of `monitor` in history entries, or None."""
    values = [e[monitor] for e in history if monitor in e]
    return max(values) if values else None
