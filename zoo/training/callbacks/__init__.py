"""Training callbacks, one concern per module (as Keras's own callbacks are organised):

- `monitor`: `ReplayingMonitor`, the best dev value over a run's epochs, replayed from history on resume.
- `schedule`: per-epoch learning-rate decay and Chen et al.'s `HalveOnPlateau` (a `ReplayingMonitor`).
- `early_stopping`: `ResumableEarlyStopping` (a `ReplayingMonitor`).
- `checkpoints`: `BestCheckpoint` (a `ReplayingMonitor`) and `EpochCommit`, which commits each epoch's
  generation of the run state (both through the run's `zoo.runs.directory.RunDirectory`), and
  `StopOnNonFiniteLoss`.
- `history`: `EpochHistory` (`history.json`, through the run directory) and `best_of`.
- `epoch_marker`: the `[train] epoch N done` line.
- `progress`: `EpochProgress`, Keras's progress bar placed first (its epoch line before any other output).
- `random_state`: `EpochRandomness`, the data order and dropout masks of an epoch as a function of
  (seed, epoch), so that a resumed run is the uninterrupted one.
- `tensorboard`: always-recorded epoch summaries with batch scalars at a chosen rate, images to summaries,
  the HParams session (`HParamsLogger`, `write_hparams_metrics`).
- `images`: `AttentionImages` and `ConfusionImages` after every Nth epoch and the last (`EveryNthEpoch`).
"""

from zoo.training.callbacks.checkpoints import BestCheckpoint, EpochCommit, NonFiniteLossError, StopOnNonFiniteLoss
from zoo.training.callbacks.early_stopping import ResumableEarlyStopping
from zoo.training.callbacks.epoch_marker import EpochMarker
from zoo.training.callbacks.history import EpochHistory, best_of
from zoo.training.callbacks.images import AttentionImages, ConfusionImages
from zoo.training.callbacks.monitor import ReplayingMonitor
from zoo.training.callbacks.progress import EpochProgress
from zoo.training.callbacks.random_state import EpochRandomness
from zoo.training.callbacks.schedule import HalveOnPlateau, is_plateau_schedule, learning_rate_schedule
from zoo.training.callbacks.tensorboard import (
                                                HPARAMS_RUN,
                                                HParamsLogger,
                                                TensorBoard,
                                                batch_log_frequency,
                                                figure_to_image,
                                                flatten_hparams,
                                                write_confusion_image,
                                                write_hparams_metrics,
)

__all__ = ["AttentionImages", "BestCheckpoint", "ConfusionImages", "EpochCommit", "EpochHistory", "EpochMarker",
           "EpochProgress", "EpochRandomness", "HPARAMS_RUN", "HParamsLogger", "HalveOnPlateau", "NonFiniteLossError",
           "ReplayingMonitor", "ResumableEarlyStopping", "StopOnNonFiniteLoss", "TensorBoard", "batch_log_frequency",
           "best_of", "figure_to_image", "flatten_hparams", "is_plateau_schedule", "learning_rate_schedule",
           "write_confusion_image", "write_hparams_metrics"]
