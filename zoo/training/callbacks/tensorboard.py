"""TensorBoard: epoch summaries that are always recorded, images, and the run's hyperparameters."""

import io
import json
import logging
import os

import keras
import tensorflow as tf

from zoo.plotting import plot_confusion, pyplot

logger = logging.getLogger(__name__)


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
    """`keras.callbacks.TensorBoard` that always records its epoch-level summaries and picks how often to
    write batch-level scalars.

    With an integer `update_freq`, the Keras callback leaves `tf.summary.record_if(step % update_freq
    == 0)` active for the whole epoch, so epoch scalars (and every other summary written at the end of
    the epoch) are dropped unless the epoch's last step is a multiple of `update_freq`.

    Args:
        logdir: the TensorBoard directory.
        log_every: write batch scalars (`batch_loss`, ...) every N steps; 0: per epoch only; None (auto):
            about `POINTS_PER_EPOCH` points per epoch (every `steps // 20` steps, at least every step),
            so that a short run draws lines, not a dot.
        **kwargs: other `keras.callbacks.TensorBoard` arguments.
    """

    POINTS_PER_EPOCH = 20

    def __init__(self, logdir, log_every=None, **kwargs):
        self.log_every = log_every
        if "update_freq" in kwargs:  # Keras's own argument, kept as it is
            self.log_every = 0 if kwargs["update_freq"] == "epoch" else kwargs["update_freq"]
        else:
            kwargs["update_freq"] = "epoch" if not log_every else int(log_every)
        super().__init__(logdir, **kwargs)

    def on_train_begin(self, logs=None):
        if self.log_every is None:
            self.update_freq = batch_log_frequency(None, (self.params or {}).get("steps"))
        super().on_train_begin(logs)

    def on_epoch_end(self, epoch, logs=None):
        with tf.summary.record_if(True):
            super().on_epoch_end(epoch, logs)

    def on_test_end(self, logs=None):
        with tf.summary.record_if(True):
            super().on_test_end(logs)


def batch_log_frequency(log_every, steps_per_epoch):
    """How often batch scalars are written: `log_every` when given (0: `"epoch"`, none), else about
    `TensorBoard.POINTS_PER_EPOCH` points per epoch of `steps_per_epoch` steps (`"epoch"` when unknown)."""
    if log_every is not None:
        return int(log_every) if log_every else "epoch"
    if not steps_per_epoch:
        return "epoch"
    return max(1, int(steps_per_epoch) // TensorBoard.POINTS_PER_EPOCH)


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


HPARAMS_RUN = "hparams"  # the run (subdirectory of the logdir) holding the HParams session

# The metrics of the HParams session: `results.json` keys, as TensorBoard shows them.
HPARAMS_METRICS = {"dev_accuracy": "dev accuracy (best epoch)", "test_accuracy": "test accuracy",
                   "best_epoch": "best epoch", "epochs_run": "epochs"}


class HParamsLogger(keras.callbacks.Callback):
    """Writes the run as one session of TensorBoard's HParams plugin: its hyperparameters when training
    begins, the metrics the run reports (`results.json`: the best epoch's dev accuracy, test accuracy)
    once it is scored (`write_hparams_metrics`).

    The session is the run `hparams` of the logdir (`LOGDIR/hparams`, with its metrics in the same
    folder), so that TensorBoard names it whatever directory it is pointed at: `tensorboard --logdir
    RUN/logs` shows one session, `tensorboard --logdir runs` one per run, side by side. No experiment
    summary is written: TensorBoard builds the table from the sessions, so runs of different models (whose
    presets differ) and of different data compare in one table.

    TensorBoard shows the trial's name in a narrow column of fixed width, which cuts a run directory's path
    (a sweep's `sweeps/S/runs/bowman_lstm-hidden_size=16-seed=0`); the session also carries it whole as the
    hyperparameter `run`, in a column that widens, beside `model` (the registered model's name, which the
    trainer passes among `hparams`) and `seed`, so that a sweep's runs can be sorted and filtered by them.

    Args:
        logdir: TensorBoard directory.
        hparams: flat `{name: bool|int|float|str}` (see `flatten_hparams`).
        trial_id: the session group's name: the run directory (two runs never share one).
    """

    def __init__(self, logdir, hparams, trial_id):
        super().__init__()
        self.logdir = logdir
        self.hparams = hparams
        self.trial_id = trial_id

    def on_train_begin(self, logs=None):
        write_hparams_session(self.logdir, self.hparams, self.trial_id)


def write_hparams_session(logdir, hparams, trial_id):
    """Writes (afresh) the HParams session of a run into `LOGDIR/hparams`.

    The folder is emptied first: a run trained further (more `--epochs`) writes its session again with
    the new settings, and TensorBoard would keep the first one it read.
    """
    try:
        from tensorboard.plugins.hparams import api as hp
    except ImportError:
        logger.warning("the tensorboard package is not installed: hyperparameters not logged")
        return
    import shutil

    session_dir = os.path.join(logdir, HPARAMS_RUN)
    if os.path.isdir(session_dir):
        shutil.rmtree(session_dir)
    writer = tf.summary.create_file_writer(session_dir)
    with writer.as_default(), tf.summary.record_if(True):
        hp.hparams({**hparams, "run": str(trial_id)}, trial_id=trial_id)  # the whole name (see HParamsLogger)
    writer.flush()
    writer.close()


def write_hparams_metrics(logdir, results):
    """Writes the reported metrics of a scored run (its `RunResults`: `dev_accuracy`, `test_accuracy`,
    `best_epoch`, `epochs_run`) into its HParams session (`LOGDIR/hparams`), at the step of the last epoch."""
    step = int(results.epochs_run or 0)
    writer = tf.summary.create_file_writer(os.path.join(logdir, HPARAMS_RUN))
    with writer.as_default(), tf.summary.record_if(True):
        for key, description in HPARAMS_METRICS.items():
            value = getattr(results, key)  # the metrics are fields of `RunResults`
            if value is not None:
                tf.summary.scalar(key, float(value), step=step, description=description)
        try:  # the session's status: "Success" in the table
            from tensorboard.plugins.hparams import api_pb2
            from tensorboard.plugins.hparams import summary as hparams_summary
        except ImportError:
            pass
        else:
            tf.summary.experimental.write_raw_pb(
                hparams_summary.session_end_pb(api_pb2.STATUS_SUCCESS).SerializeToString(), step=step)
    writer.flush()
    writer.close()
