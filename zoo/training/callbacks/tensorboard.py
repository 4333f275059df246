"""TensorBoard: epoch summaries that are always recorded, images, and the run's hyperparameters."""

import io
import json

import keras
import tensorflow as tf

from zoo.plotting import plot_confusion, pyplot


def figure_to_image(figure):
    """A matplotlib figure as a uint8 RGBA tensor `[1, H, W, 4]` for `tf.summary.image` (closes it)."""
    plt = pyplot()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    image = tf.image.decode_png(buffer.getvalue(), channels=4)
    return tf.expand_dims(image, 0)


def write_confusion_image(writer, matrix, labels, tag, step, title=""):
    """Writes a confusion-matrix image summary with `writer`."""
    with writer.as_default(), tf.summary.record_if(True):
        tf.summary.image(tag, figure_to_image(plot_confusion(matrix, labels, title)), step=step)
    writer.flush()


class TensorBoard(keras.callbacks.TensorBoard):
    """`keras.callbacks.TensorBoard` that always records its epoch-level summaries.

    With an integer `update_freq`, the Keras callback leaves `tf.summary.record_if(step % update_freq
    == 0)` active for the whole epoch, so epoch scalars (and every other summary written at the end of
    the epoch) are dropped unless the epoch's last step is a multiple of `update_freq`.
    """

    def on_epoch_end(self, epoch, logs=None):
        with tf.summary.record_if(True):
            super().on_epoch_end(epoch, logs)

    def on_test_end(self, logs=None):
        with tf.summary.record_if(True):
            super().on_test_end(logs)


def flatten_hparams(preset, extra=None):
    """Preset settings as flat HParams values: `{"model.hidden_size": 100, ...}` (None and containers
    become strings, since HParams takes only bool, int, float and str).

    Args:
        preset: `{"model": {...}, "train": {...}, "data": {...}}`.
        extra: more `{name: value}` (e.g. embeddings, strategy).

    Returns:
        the flat dict.
    """
    flat = {}
    for section, settings in preset.items():
        for key, value in settings.items():
            flat[f"{section}.{key}"] = value
    flat.update(extra or {})
    return {k: v if isinstance(v, (bool, int, float, str)) else json.dumps(v) for k, v in flat.items()}


class HParamsLogger(keras.callbacks.Callback):
    """Writes the run's hyperparameters for TensorBoard's HParams plugin when training begins.

    Args:
        logdir: TensorBoard directory (the session is written at its root).
        hparams: flat `{name: bool|int|float|str}` (see `flatten_hparams`).
        trial_id: the session name (e.g. the run directory name).
    """

    def __init__(self, logdir, hparams, trial_id):
        super().__init__()
        self.logdir = logdir
        self.hparams = hparams
        self.trial_id = trial_id

    def on_train_begin(self, logs=None):
        try:
            from tensorboard.plugins.hparams import api as hp
        except ImportError:
            print("[train] the tensorboard package is not installed: hyperparameters not logged", flush=True)
            return

        writer = tf.summary.create_file_writer(self.logdir)
        with writer.as_default(), tf.summary.record_if(True):
            hp.hparams_config(
                hparams=[hp.HParam(name) for name in sorted(self.hparams)],
                metrics=[hp.Metric("epoch_accuracy", group="validation", display_name="dev accuracy"),
                         hp.Metric("epoch_loss", group="validation", display_name="dev loss"),
                         hp.Metric("test_accuracy", group="test", display_name="test accuracy")])
            hp.hparams(self.hparams, trial_id=self.trial_id)
        writer.flush()
        writer.close()
