"""Training callbacks: resumable history and early stopping, learning-rate schedule, and TensorBoard
images (attention heatmaps, confusion matrices) and hyperparameters.

Images are drawn with matplotlib (Agg backend) and written with `tf.summary.image`.
"""

import io
import json
import os
import sys
import time

import numpy as np
import keras
import tensorflow as tf

from zoo.data.trees import element_labels
from zoo.training.evaluation import confusion_matrix, predict_labels
from zoo.training.runs import read_json, write_json


# Learning rate ------------------------------------------------------------------------------------
def learning_rate_schedule(learning_rate, decay):
    """A per-epoch learning-rate function for `keras.callbacks.LearningRateScheduler`.

    Args:
        learning_rate: the initial learning rate.
        decay: None (constant) or `{"type": "exponential", "rate": r, "every_epochs": k}`
            (lr * r ** (epoch // k)) or `{"type": "step", "rate": r, "every_epochs": k}` (same thing).

    Returns:
        `f(epoch, lr) -> float`, a function of the epoch index only (so that resuming is exact).

    Raises:
        ValueError: for an unknown decay type.
    """
    if decay is None:
        return lambda epoch, lr=None: float(learning_rate)
    if isinstance(decay, (int, float)):
        decay = {"type": "exponential", "rate": float(decay), "every_epochs": 1}
    kind = decay.get("type", "exponential")
    if kind not in ("exponential", "step"):
        raise ValueError(f"unknown lr_decay type {kind!r}; use 'exponential', 'step' or 'halve_on_plateau'")
    rate, every = float(decay["rate"]), int(decay.get("every_epochs", 1))
    return lambda epoch, lr=None: float(learning_rate * rate ** (epoch // every))


def is_plateau_schedule(decay):
    """Whether an `lr_decay` setting asks for `HalveOnPlateau` (`{"type": "halve_on_plateau", ...}`)."""
    return isinstance(decay, dict) and decay.get("type") == "halve_on_plateau"


class HalveOnPlateau(keras.callbacks.Callback):
    """Chen et al.'s schedule, as their released code runs it (lukecq1231/nli, scripts/ESIM/main.py).

    After each epoch's dev evaluation: if dev accuracy is at least the best so far, it becomes the best;
    otherwise the learning rate is multiplied by `factor` (0.5), the best weights are loaded back (the
    optimizer's moments are kept, as there), and once this has happened more than `max_halvings` times
    (the code's `patience`, 7) training stops. Ties count as improvements, as in the code's `<=` on
    the error; the best-weights file keeps the earlier of two equal epochs.

    The state is a function of the finished epochs in `history.json`, so a resumed run continues with
    the same learning rate and count. The learning rate of each epoch is logged as `learning_rate`
    (TensorBoard's `epoch_learning_rate`).

    Args:
        history: the run's `EpochHistory` (put this callback before it).
        learning_rate: the initial learning rate.
        best_path: the best-weights file (written by the `ModelCheckpoint` placed before this callback).
        monitor: the dev metric, higher is better.
        factor: the multiplier of each halving.
        max_halvings: halvings allowed before stopping (None: never stop).
    """

    def __init__(self, history, learning_rate, best_path, monitor="val_accuracy", factor=0.5, max_halvings=7):
        super().__init__()
        self.history = history
        self.initial = float(learning_rate)
        self.best_path = best_path
        self.monitor = monitor
        self.factor = float(factor)
        self.max_halvings = max_halvings
        self.best, self.halvings, self._started = None, 0, False

    @property
    def learning_rate(self):
        return self.initial * self.factor ** self.halvings

    def _update(self, value):
        """Returns whether `value` is an improvement (and records it)."""
        if value is None:
            return True
        if self.best is None or value >= self.best:
            self.best = value
            return True
        self.halvings += 1
        return False

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._started = True
            self.best, self.halvings = None, 0
            for entry in self.history.epochs:
                if entry["epoch"] <= epoch:
                    self._update(entry.get(self.monitor))
        self.model.optimizer.learning_rate.assign(self.learning_rate)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = self.learning_rate  # the rate this epoch trained with
        if self._update(logs.get(self.monitor)):
            return
        print(f"[train] no {self.monitor} improvement: learning rate halved to {self.learning_rate:.3g} "
              f"(halving {self.halvings}), best weights reloaded", flush=True)
        if os.path.exists(self.best_path):
            self.model.load_weights(self.best_path)
        if self.max_halvings is not None and self.halvings > self.max_halvings:
            self.model.stop_training = True
            print(f"[train] early stopping: {self.halvings} halvings (more than {self.max_halvings})", flush=True)


# Resumable bookkeeping ----------------------------------------------------------------------------
class EpochHistory(keras.callbacks.Callback):
    """Keeps `history.json`: one entry of logs per finished epoch, and `"finished"` after fit().

    On resume, entries of epochs that are trained again are dropped (the first epoch begun tells
    which epoch training restarts from).

    Args:
        path: the history file.
    """

    def __init__(self, path):
        super().__init__()
        self.path = path
        self.state = read_json(path, {"epochs": [], "finished": False})
        self._started = False

    @property
    def epochs(self):
        """Entries `{"epoch": 1-based, metric: value, ...}` of the finished epochs."""
        return self.state["epochs"]

    def on_epoch_begin(self, epoch, logs=None):
        if not self._started:
            self._started = True
            self.state["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch]
            if epoch > 0:
                print(f"[train] resuming from epoch {epoch + 1}", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        entry = {"epoch": epoch + 1, "time": time.time()}
        entry.update({k: float(v) for k, v in (logs or {}).items() if np.ndim(v) == 0})
        self.state["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch] + [entry]
        write_json(self.path, self.state)

    def on_train_end(self, logs=None):
        self.state["finished"] = True
        write_json(self.path, self.state)


def best_of(history, monitor="val_accuracy"):
    """The best (highest) value of `monitor` in history entries, or None."""
    values = [e[monitor] for e in history if monitor in e]
    return max(values) if values else None


class ResumableEarlyStopping(keras.callbacks.Callback):
    """Stops when `monitor` (higher is better) has not improved for `patience` epochs, counting the
    epochs of the history before a resume.

    Args:
        history: the `EpochHistory` callback of the run (read at the first epoch).
        monitor: the metric, e.g. `"val_accuracy"`.
        patience: epochs without improvement before stopping; None or 0 never stops.
    """

    def __init__(self, history, monitor="val_accuracy", patience=3):
        super().__init__()
        self.history = history
        self.monitor = monitor
        self.patience = patience
        self.best = None
        self.wait = 0
        self.stopped_epoch = None

    def on_train_begin(self, logs=None):
        self.best, self.wait = None, 0
        self._replayed = False

    def on_epoch_begin(self, epoch, logs=None):
        if not self._replayed:
            self._replayed = True
            for entry in self.history.epochs:
                if entry["epoch"] <= epoch:
                    self._update(entry.get(self.monitor))

    def _update(self, value):
        if value is None:
            return
        if self.best is None or value > self.best:
            self.best, self.wait = value, 0
        else:
            self.wait += 1

    def on_epoch_end(self, epoch, logs=None):
        self._update((logs or {}).get(self.monitor))
        if self.patience and self.wait >= self.patience:
            self.stopped_epoch = epoch + 1
            self.model.stop_training = True
            print(f"[train] early stopping: no {self.monitor} improvement for {self.patience} epochs",
                  flush=True)


class EpochMarker(keras.callbacks.Callback):
    """Prints `[train] epoch N done` once an epoch's state is saved (put it after BackupAndRestore).

    Args:
        pause: seconds to sleep after each epoch (a test hook to interrupt training between epochs).
    """

    def __init__(self, pause=0.0):
        super().__init__()
        self.pause = pause

    def on_epoch_end(self, epoch, logs=None):
        print(f"[train] epoch {epoch + 1} done", flush=True)
        sys.stdout.flush()
        if self.pause:
            time.sleep(self.pause)


# Drawing ------------------------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_to_image(figure):
    """A matplotlib figure as a uint8 RGBA tensor `[1, H, W, 4]` for `tf.summary.image` (closes it)."""
    plt = _pyplot()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    image = tf.image.decode_png(buffer.getvalue(), channels=4)
    return tf.expand_dims(image, 0)


def plot_attention(weights, premise_tokens, hypothesis_tokens, title=""):
    """A heatmap of attention weights like the papers' figures: premise words on top, hypothesis
    words down the side, darker = more weight.

    Args:
        weights: float `[rows, len(premise_tokens)]` (rows = hypothesis tokens, or one row).
        premise_tokens: premise words (columns).
        hypothesis_tokens: hypothesis words (rows), or one label per row.
        title: figure title.

    Returns:
        the matplotlib figure.
    """
    plt = _pyplot()
    weights = np.asarray(weights, dtype="float32")
    rows, cols = weights.shape
    figure, axes = plt.subplots(figsize=(1.0 + 0.38 * cols, 1.2 + 0.38 * rows))
    axes.imshow(weights, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")  # absolute, as in the papers
    axes.set_xticks(range(cols))
    axes.set_xticklabels(premise_tokens, rotation=90)
    axes.xaxis.tick_top()
    axes.set_yticks(range(rows))
    axes.set_yticklabels(hypothesis_tokens)
    if title:
        axes.set_xlabel(title)
    figure.tight_layout()
    return figure


def plot_confusion(matrix, labels, title=""):
    """A confusion matrix figure (rows gold, columns predicted) with counts in the cells.

    Args:
        matrix: int counts `[C, C]`.
        labels: class names.
        title: figure title.

    Returns:
        the matplotlib figure.
    """
    plt = _pyplot()
    matrix = np.asarray(matrix)
    figure, axes = plt.subplots(figsize=(4.2, 3.8))
    axes.imshow(matrix, cmap="Blues")
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=30)
    axes.set_yticks(range(len(labels)))
    axes.set_yticklabels(labels)
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    threshold = matrix.max() / 2 if matrix.size else 0
    for (i, j), count in np.ndenumerate(matrix):
        axes.text(j, i, str(count), ha="center", va="center",
                  color="white" if count > threshold else "black")
    if title:
        axes.set_title(title)
    figure.tight_layout()
    return figure


def write_confusion_image(writer, matrix, labels, tag, step, title=""):
    """Writes a confusion-matrix image summary with `writer`."""
    with writer.as_default(), tf.summary.record_if(True):
        tf.summary.image(tag, figure_to_image(plot_confusion(matrix, labels, title)), step=step)
    writer.flush()


# TensorBoard callbacks ----------------------------------------------------------------------------
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


class AttentionImages(keras.callbacks.Callback):
    """Draws the attention of a few fixed dev pairs after each epoch (skipped for models that do not
    attend). Each image is cropped to the real tokens and labelled with them.

    Models with more to show get more: Luo et al.'s models draw the unmatchedness u_b of each hypothesis
    word as an extra column "u" beside the attention (their Figure 1), and the match-LSTMs draw their
    input, forget and output gates per hypothesis word (mean over the d units; Wang & Jiang §3.3) under
    the tag `gates/pair_<i>`.

    Args:
        logdir: TensorBoard directory; images go to its `images` run, tags `attention/pair_<i>`.
        inputs: `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}` of the pairs.
        premise_tokens: the premise words of each pair (as tokenized).
        hypothesis_tokens: the hypothesis words of each pair.
        labels: gold label names of the pairs (shown under the image).
    """

    GATES = ("input_gate", "forget_gate", "output_gate")

    def __init__(self, logdir, inputs, premise_tokens, hypothesis_tokens, labels=None):
        super().__init__()
        self.logdir = logdir
        self.inputs = inputs
        self.premise_tokens = premise_tokens
        self.hypothesis_tokens = hypothesis_tokens
        self.gold = labels or [""] * len(premise_tokens)
        self.writer = None
        self.enabled = True

    def on_epoch_end(self, epoch, logs=None):
        if not self.enabled:
            return
        outputs = self.model.explain(self.inputs)
        if "attention" not in outputs:
            self.enabled = False
            print("[train] the model has no attention: no attention images", flush=True)
            return
        self.write(epoch, {key: np.asarray(value) for key, value in outputs.items()})

    def write(self, step, outputs):
        """Writes the images of every pair for `step` from the model's `explain()` outputs (numpy).

        A map over tree nodes (the outputs hold node masks `premise_mask`) uses the in-order layout of
        `zoo.data.trees` (word t at node 2t, the phrase joining words t and t + 1 at node 2t + 1, Chen et
        al. Figure 3 c): words are labelled with their tokens, phrase nodes with "•"
        (`zoo.data.trees.element_labels`).
        """
        from zoo.data import LABELS

        attention = outputs["attention"].astype("float32")
        over_nodes = "premise_mask" in outputs
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(os.path.join(self.logdir, "images"))
        with self.writer.as_default(), tf.summary.record_if(True):
            for i, (premise, hypothesis) in enumerate(zip(self.premise_tokens, self.hypothesis_tokens)):
                lp = int(np.count_nonzero(self.inputs["premise"][i]))
                lh = int(np.count_nonzero(self.inputs["hypothesis"][i]))
                premise, hypothesis = _fit_tokens(premise, lp), _fit_tokens(hypothesis, lh)
                hypothesis_labels = hypothesis
                weights = attention[i]
                if over_nodes:  # tree nodes or Paria's S_e elements: as many as the masks' real entries
                    lp, lh = int(outputs["premise_mask"][i].sum()), int(outputs["hypothesis_mask"][i].sum())
                    premise, hypothesis = element_labels(premise, lp), element_labels(hypothesis, lh)
                premise_labels = _fit_tokens(premise, lp)
                if getattr(self.model, "attention_null_column", False):
                    # Wang & Jiang's NULL premise position is column 0 of the map.
                    weights, premise_labels = weights[:, :lp + 1], ["NULL"] + premise_labels
                    lp += 1
                rows = weights.shape[0]
                if rows == 1 and lh != 1:
                    weights, row_labels = weights[:1, :lp], ["(final)"]
                else:
                    weights, row_labels = weights[:lh, :lp], _fit_tokens(hypothesis, lh)
                if "unmatchedness_b" in outputs and not over_nodes:
                    # Luo et al. Figure 1: u of each hypothesis word, in [1/ℓ_a, 1], beside its attention row.
                    u = outputs["unmatchedness_b"][i, :lh].astype("float32")
                    weights, premise_labels = np.concatenate([weights, u[:, None]], axis=1), premise_labels + ["u"]
                predicted = LABELS[int(np.argmax(outputs["probabilities"][i]))]
                title = f"gold: {self.gold[i]}   predicted: {predicted}"
                figure = plot_attention(weights, premise_labels, row_labels, title)
                tf.summary.image(f"attention/pair_{i}", figure_to_image(figure), step=step)
                if all(gate in outputs for gate in self.GATES):
                    means = np.stack([outputs[gate][i, :len(hypothesis_labels)].mean(-1) for gate in self.GATES])
                    figure = plot_attention(means.T, ["input", "forget", "output"], hypothesis_labels,
                                            f"mean gate value per word; {title}")
                    tf.summary.image(f"gates/pair_{i}", figure_to_image(figure), step=step)
        self.writer.flush()


def _fit_tokens(tokens, length):
    """`tokens` cut or padded (with `?`) to `length` labels."""
    tokens = list(tokens)[:length]
    return tokens + ["?"] * (length - len(tokens))


class ConfusionImages(keras.callbacks.Callback):
    """Draws the dev confusion matrix after each epoch (tag `confusion_matrix/dev`, `images` run).

    Args:
        logdir: TensorBoard directory.
        dataset: a dev dataset of `(features, labels, weights)` (a capped subset keeps this cheap).
        labels: class names.
    """

    def __init__(self, logdir, dataset, labels):
        super().__init__()
        self.logdir = logdir
        self.dataset = dataset
        self.labels = labels
        self.writer = None

    def on_epoch_end(self, epoch, logs=None):
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(os.path.join(self.logdir, "images"))
        gold, predicted = predict_labels(self.model, self.dataset)
        matrix = confusion_matrix(gold, predicted, len(self.labels))
        write_confusion_image(self.writer, matrix, self.labels, "confusion_matrix/dev", epoch,
                              f"dev, epoch {epoch + 1}")


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
