"""Early stopping that survives a resume."""

import logging

from zoo.training.callbacks.monitor import ReplayingMonitor

logger = logging.getLogger(__name__)


class ResumableEarlyStopping(ReplayingMonitor):
    """Stops when `monitor` (higher is better) has not improved for `patience` epochs, counting the
    epochs of the history before a resume (`ReplayingMonitor`).

    Args:
        history: what holds the run's finished epochs as `.epochs` (its `RunDirectory`; read at the first epoch).
        monitor: the metric, e.g. `"val_accuracy"`.
        patience: epochs without improvement before stopping; None or 0 never stops.
    """

    def __init__(self, history, monitor="val_accuracy", patience=3):
        super().__init__(history, monitor=monitor)
        self.patience = patience
        self.stopped_epoch = None

    def on_no_improvement(self, epoch, logs):
        if self.patience and self.wait >= self.patience:
            self.stopped_epoch = epoch + 1
            self.model.stop_training = True
            logger.info(f"early stopping: no {self.monitor} improvement for {self.patience} epochs")
