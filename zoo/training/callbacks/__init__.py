"""Training callbacks, one concern per module (as Keras's own callbacks are organised):

- `monitor`: `ReplayingMonitor`, the best dev value over a run's epochs, replayed from history on resume.
- `schedule`: per-epoch learning-rate decay and Chen et al.'s `HalveOnPlateau` (a `ReplayingMonitor`).
- `early_stopping`: `ResumableEarlyStopping` (a `ReplayingMonitor`).
- `history`: `EpochHistory` (`history.json`) and `best_of`.
- `epoch_marker`: the `[train] epoch N done` line.
- `tensorboard`: always-recorded epoch summaries, images to summaries, `HParamsLogger`.
- `images`: `AttentionImages` and `ConfusionImages` after each epoch.
"""

from zoo.training.callbacks.early_stopping import ResumableEarlyStopping
from zoo.training.callbacks.epoch_marker import EpochMarker
from zoo.training.callbacks.history import EpochHistory, best_of
from zoo.training.callbacks.images import AttentionImages, ConfusionImages
from zoo.training.callbacks.monitor import ReplayingMonitor
from zoo.training.callbacks.schedule import HalveOnPlateau, is_plateau_schedule, learning_rate_schedule
from zoo.training.callbacks.tensorboard import (HParamsLogger, TensorBoard, figure_to_image, flatten_hparams,
                                                write_confusion_image)

__all__ = ["AttentionImages", "ConfusionImages", "EpochHistory", "EpochMarker", "HParamsLogger", "HalveOnPlateau",
           "ReplayingMonitor", "ResumableEarlyStopping", "TensorBoard", "best_of", "figure_to_image",
           "flatten_hparams", "is_plateau_schedule", "learning_rate_schedule", "write_confusion_image"]
