"""Keras's progress output, first among the callbacks: the epoch's line is complete before any other
callback prints (`[train] epoch N done`, the schedule's messages) and shows the learning rate."""

import keras


class EpochProgress(keras.callbacks.ProgbarLogger):
    """`keras.callbacks.ProgbarLogger` meant to be the first callback of `fit` (Keras then adds none).

    Keras appends its own progress logger after the user's callbacks, so whatever they print at the end
    of an epoch lands before Keras's line for it, or at the end of the unfinished progress bar. Placed
    first, this one finishes the epoch's line first. As the callbacks after it add `learning_rate` to the
    logs only later, it shows the optimizer's learning rate itself (the rate the epoch trained with).
    """

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and "learning_rate" not in logs:
            try:
                logs["learning_rate"] = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
            except (TypeError, ValueError):
                pass
        super().on_epoch_end(epoch, logs)
