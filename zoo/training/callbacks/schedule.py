"""Learning-rate schedules: per-epoch decay (Wang & Jiang's 0.95) and Chen et al.'s halve-on-plateau."""

import logging
import os

from zoo.errors import ConfigError
from zoo.settings import LearningRateDecay
from zoo.training.callbacks.monitor import ReplayingMonitor

logger = logging.getLogger(__name__)


def learning_rate_schedule(learning_rate, decay):
    """A per-epoch learning-rate function for `keras.callbacks.LearningRateScheduler`.

    Args:
        learning_rate: the initial learning rate.
        decay: the run's `LearningRateDecay` (`TrainSettings.lr_decay`): None (constant), `exponential` or
            `step` with `rate` r and `every_epochs` k (lr * r ** (epoch // k)); an `lr_decay` setting as a
            preset writes it (None, a number, `{"type": "exponential", "rate": r, "every_epochs": k}`) is
            read with `LearningRateDecay.of`.

    Returns:
        `f(epoch, lr) -> float`, a function of the epoch index only (so that resuming is exact).

    Raises:
        ConfigError: for an unknown decay type, or `halve_on_plateau` (a callback: `HalveOnPlateau`).
    """
    decay = LearningRateDecay.of(decay)
    if decay is None:
        return lambda epoch, lr=None: float(learning_rate)
    if decay.on_plateau:
        raise ConfigError("lr_decay halve_on_plateau is not a per-epoch function: use HalveOnPlateau")
    rate, every = decay.rate, decay.every_epochs
    return lambda epoch, lr=None: float(learning_rate * rate ** (epoch // every))


def is_plateau_schedule(decay):
    """Whether an `lr_decay` setting (a `LearningRateDecay` or as a preset writes it) asks for
    `HalveOnPlateau`."""
    decay = LearningRateDecay.of(decay)
    return decay is not None and decay.on_plateau


class HalveOnPlateau(ReplayingMonitor):
    """Chen et al.'s schedule, as their released code runs it (lukecq1231/nli, scripts/ESIM/main.py).

    After each epoch's dev evaluation: if dev accuracy is at least the best so far, it becomes the best;
    otherwise, once `wait` epochs in a row have not improved (the code's `wait_N`, 1 there: every epoch
    without improvement), the learning rate is multiplied by `factor` (0.5), the best weights are loaded
    back (the optimizer's moments are kept, as there) and the count starts again; once this has happened
    more than `max_halvings` times (the code's `patience`, 7) training stops. Ties count as improvements,
    as in the code's `<=` on the error; the best-weights file keeps the earlier of two equal epochs.

    The preset chooses it with `lr_decay: {"type": "halve_on_plateau", "factor": 0.5, "wait": 1}`. On
    SNLI's 10,000-pair dev set `wait` 1 is what the authors ran; on a small dev set (a few hundred pairs)
    accuracy moves by noise from epoch to epoch and the rate halves on noise (docs/training.md, choosing a
    schedule): a larger `wait`, or a constant rate with early stopping, serves better there.

    The state is a function of the finished epochs in `history.json` (`ReplayingMonitor`), so a resumed
    run continues with the same learning rate and count. The learning rate of each epoch is logged as
    `learning_rate` (TensorBoard's `epoch_learning_rate`).

    Args:
        history: what holds the run's finished epochs as `.epochs` (its `RunDirectory`).
        learning_rate: the initial learning rate.
        best_path: the run's `best.weights.h5` (published by the run directory after each commit).
        monitor: the dev metric, higher is better.
        factor: the multiplier of each halving.
        max_halvings: halvings allowed before stopping (None: never stop).
        wait: epochs in a row without improvement before each halving (a positive whole number).

    Attributes:
        halvings: the halvings so far.
    """

    def __init__(self, history, learning_rate, best_path, monitor="val_accuracy", factor=0.5, max_halvings=7,
                 wait=1):
        if isinstance(wait, bool) or not isinstance(wait, int) or wait < 1:
            raise ValueError(f"lr_decay wait must be a whole number >= 1 (epochs without improvement before "
                             f"halving), got {wait!r}")
        self.wait_epochs = wait
        super().__init__(history, monitor=monitor, ties_improve=True)
        self.initial = float(learning_rate)
        self.best_path = best_path
        self.factor = float(factor)
        self.max_halvings = max_halvings

    def _reset(self):
        super()._reset()
        self.halvings, self._halved = 0, False

    def record(self, value):
        improved = super().record(value)
        self._halved = not improved and self.wait % self.wait_epochs == 0
        self.halvings += self._halved
        return improved

    @property
    def learning_rate(self):
        return self.initial * self.factor ** self.halvings

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self.model.optimizer.learning_rate.assign(self.learning_rate)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = self.learning_rate  # the rate this epoch trained with
        super().on_epoch_end(epoch, logs)

    def on_no_improvement(self, epoch, logs):
        if not self._halved:
            logger.info(f"no {self.monitor} improvement for {self.wait} epoch(s): the learning rate halves "
                        f"after {self.wait_epochs}")
            return
        logger.info(f"no {self.monitor} improvement: learning rate halved to {self.learning_rate:.3g} "
                    f"(halving {self.halvings}), best weights reloaded")
        if os.path.exists(self.best_path):
            self.model.load_weights(self.best_path)
        if self.max_halvings is not None and self.halvings > self.max_halvings:
            self.model.stop_training = True
            logger.info(f"early stopping: {self.halvings} halvings (more than {self.max_halvings})")
