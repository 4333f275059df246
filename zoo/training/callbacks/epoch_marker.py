"""The `[train] epoch N done` line, printed once an epoch's state is safely on disk."""

import logging
import sys
import time

import keras

logger = logging.getLogger(__name__)


class EpochMarker(keras.callbacks.Callback):
    """Prints `[train] epoch N done` once an epoch's state is saved (put it after BackupAndRestore).

    Args:
        pause: seconds to sleep after each epoch (a test hook to interrupt training between epochs).
    """

    def __init__(self, pause=0.0):
        super().__init__()
        self.pause = pause

    def on_epoch_end(self, epoch, logs=None):
        logger.info(f"epoch {epoch + 1} done")
        sys.stdout.flush()
        if self.pause:
            time.sleep(self.pause)
