"""`ReplayingMonitor`: the best value of a dev metric over a run's epochs, those before a resume included.

Keras's `EarlyStopping` and `ReduceLROnPlateau` share one monitor mechanism; the zoo's resumable
callbacks (`HalveOnPlateau`, `ResumableEarlyStopping`) share this one. What Keras's keeps in memory, this
one rebuilds from `history.json` when training starts again after a kill, so a resumed run makes the same
decisions as an uninterrupted one.
"""

import keras


class ReplayingMonitor(keras.callbacks.Callback):
    """Tracks the best value of `monitor` (higher is better) and the epochs without improvement.

    At the first epoch a `fit` begins, the entries of the run's history before that epoch are replayed,
    so the state is a function of the finished epochs. Subclasses act on `on_improvement` /
    `on_no_improvement` after each epoch.

    Args:
        history: what holds the run's finished epochs as `.epochs` (its `RunDirectory`; read at the first epoch).
        monitor: the dev metric, higher is better.
        ties_improve: whether a value equal to the best counts as an improvement.

    Attributes:
        best: the best value so far (None before any).
        wait: epochs since the last improvement.
        misses: epochs without improvement in the whole run.
    """

    def __init__(self, history, monitor="val_accuracy", ties_improve=False):
        super().__init__()
        self.history = history
        self.monitor = monitor
        self.ties_improve = ties_improve
        self._reset()

    def _reset(self):
        self.best, self.wait, self.misses, self._replayed = None, 0, 0, False

    def record(self, value):
        """Counts one epoch's `value`; returns whether it improved (a missing value changes nothing)."""
        if value is None:
            return True
        if self.best is None or value > self.best or (self.ties_improve and value == self.best):
            self.best, self.wait = value, 0
            return True
        self.wait += 1
        self.misses += 1
        return False

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_begin(self, epoch, logs=None):
        if not self._replayed:
            self._replayed = True
            for entry in self.history.epochs:
                if entry["epoch"] <= epoch:
                    self.record(entry.get(self.monitor))

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        if self.record(logs.get(self.monitor)):
            self.on_improvement(epoch, logs)
        else:
            self.on_no_improvement(epoch, logs)

    def on_improvement(self, epoch, logs):
        """Called after an epoch that improved (or had no value)."""

    def on_no_improvement(self, epoch, logs):
        """Called after an epoch that did not improve."""
