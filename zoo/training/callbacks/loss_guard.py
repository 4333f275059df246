"""`LossGrowthGuard`: a training loss that grows a thousandfold over its first value is said, not hidden.

A learning rate far too large (`--set learning_rate=1e6`) can drive the loss up by orders of magnitude while
it stays finite, so `StopOnNonFiniteLoss` never fires and the run would end as a success. This callback
prints one warning line the first time the loss exceeds `GROWTH` times its first value, and the trainer
records the same facts in `results.json` (`loss_growth`). Training goes on: the best-epoch checkpoint still
keeps the best dev accuracy, and the run's figures are what they are.
"""

import logging
import math

import keras
import numpy as np

logger = logging.getLogger(__name__)

GROWTH = 1000.0


class LossGrowthGuard(keras.callbacks.Callback):
    """Flags a loss that grows `growth`-fold over its first value.

    The first value is the loss of the run's first training step; a resumed run, which did not see that
    step, takes its first epoch's mean loss from `history.json` instead.

    Args:
        history: what holds the run's finished epochs as `.epochs` (its `RunDirectory`; on resume).
        growth: the factor that is flagged (default `GROWTH`).

    Attributes:
        flagged: None, or `{"first_loss", "loss", "growth", "epoch", "step"}` of the first flagged value.
    """

    def __init__(self, history, growth=None):
        super().__init__()
        self.history = history
        self.growth = float(GROWTH if growth is None else growth)
        self.first = None
        self.flagged = None
        self.epoch = 0

    def on_train_begin(self, logs=None):
        epochs = self.history.epochs
        if epochs and self.first is None and _finite(epochs[0].get("loss")):
            self.first = float(epochs[0]["loss"])

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.flagged is not None:
            return
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        loss = float(np.asarray(loss))
        if not math.isfinite(loss):
            return  # StopOnNonFiniteLoss stops the run
        if self.first is None:
            self.first = loss
        elif self.first > 0 and loss > self.growth * self.first:
            self.flagged = {"first_loss": self.first, "loss": loss, "growth": loss / self.first,
                            "epoch": self.epoch + 1, "step": batch + 1}
            logger.warning(f"warning: the training loss grew {loss / self.first:,.0f}-fold over its first "
                           f"value ({self.first:.4g} to {loss:.4g} at epoch {self.epoch + 1}, step {batch + 1}): the "
                           "learning rate is likely far too large (recorded in results.json as loss_growth)")

    def report(self):
        """What `results.json` records: the flagged growth, or None."""
        return self.flagged


def _finite(value):
    return value is not None and math.isfinite(float(value))
