"""Images drawn after every Nth epoch and after the last: attention heatmaps of fixed dev pairs, the dev
confusion matrix (`RunConfig.images_every`, `train.py --images-every`)."""

import logging
import os

import keras
import numpy as np
import tensorflow as tf

from zoo.data import LABELS
from zoo.data.trees import element_labels
from zoo.plotting import ATTENTION_SCALES, attention_scale, plot_attention
from zoo.runs.evaluation import confusion_matrix, predict_labels
from zoo.training.callbacks.tensorboard import figure_to_image, write_confusion_image

logger = logging.getLogger(__name__)


class EveryNthEpoch(keras.callbacks.Callback):
    """A callback that draws (`draw(epoch)`) after every `every`-th epoch (1-based: epochs N, 2N, ...) and
    once more at the end of training for the last epoch when that one was not drawn, so that a run always
    ends with the images of its final weights; `every` 0 draws nothing. On a small data set an epoch is
    short and the images (a prediction pass, matplotlib, PNG encoding) can take a fifth of it; on SNLI they
    are a rounding error, at any N. The run's default N is `RunConfig.images_every`'s."""

    def __init__(self, every):
        super().__init__()
        self.every = int(every)
        self.last_epoch = self.drawn = None

    def on_epoch_end(self, epoch, logs=None):
        self.last_epoch = epoch
        if self.every and (epoch + 1) % self.every == 0:
            self.drawn = epoch
            self.draw(epoch)

    def on_train_end(self, logs=None):
        if self.every and self.last_epoch is not None and self.drawn != self.last_epoch:
            self.drawn = self.last_epoch
            self.draw(self.last_epoch)

    def draw(self, epoch):
        raise NotImplementedError


class AttentionImages(EveryNthEpoch):
    """Draws the attention of a few fixed dev pairs after every `every`-th epoch and the last
    (`EveryNthEpoch`; skipped for models that do not attend). Each image is cropped to the real tokens and labelled
    with them.

    Models with more to show get more: Luo et al.'s models draw the unmatchedness u_b of each hypothesis
    word as an extra column "u" beside the attention (their Figure 1), and the match-LSTMs draw their
    input, forget and output gates per hypothesis word (mean over the d units; Wang & Jiang §3.3) under
    the tag `gates/pair_<i>`.

    Args:
        logdir: TensorBoard directory; images go to its `images` run, tags `attention/pair_<i>`, at step
            N after epoch N (1-based, as the console and `history.json` count).
        inputs: `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}` of the pairs.
        premise_tokens: the premise words of each pair (as tokenized).
        hypothesis_tokens: the hypothesis words of each pair.
        labels: gold label names of the pairs (shown in the image's title).
        scale: the colour scale of the maps: "relative" (each map's own range, with a colour bar) or
            "absolute" (the papers' 0-1 grey scale); see `zoo.plotting.plot_attention`.
        every: draw after every `every`-th epoch and the last (`EveryNthEpoch`).
    """

    GATES = ("input_gate", "forget_gate", "output_gate")

    def __init__(self, logdir, inputs, premise_tokens, hypothesis_tokens, labels=None, scale="relative",
                 *, every):
        super().__init__(every)
        if scale not in ATTENTION_SCALES:
            raise ValueError(f"attention scale must be one of {', '.join(ATTENTION_SCALES)}, got {scale!r}")
        self.scale = scale
        self.logdir = logdir
        self.inputs = inputs
        self.premise_tokens = premise_tokens
        self.hypothesis_tokens = hypothesis_tokens
        self.gold = labels or [""] * len(premise_tokens)
        self.writer = None
        self.enabled = True

    def draw(self, epoch):
        if not self.enabled:
            return
        outputs = self.model.explain(self.inputs)
        if "attention" not in outputs:
            self.enabled = False
            logger.warning("the model has no attention: no attention images")
            return
        # Step N for epoch N, as the console, history.json and the image titles count.
        self.write(epoch + 1, {key: np.asarray(value) for key, value in outputs.items()})

    def write(self, step, outputs):
        """Writes the images of every pair for `step` from the model's `explain()` outputs (numpy).

        A map over tree nodes (the outputs hold node masks `premise_mask`) uses the in-order layout of
        `zoo.data.trees` (word t at node 2t, the phrase joining words t and t + 1 at node 2t + 1, Chen et
        al. Figure 3 c): words are labelled with their tokens, phrase nodes with "•"
        (`zoo.data.trees.element_labels`).
        """
        attention = outputs["attention"].astype("float32")
        over_nodes = "premise_mask" in outputs
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(os.path.join(self.logdir, "images"))
        with self.writer.as_default(), tf.summary.record_if(True), attention_scale(self.scale):
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


class ConfusionImages(EveryNthEpoch):
    """Draws the dev confusion matrix after every `every`-th epoch and the last (tag `confusion_matrix/dev`,
    `images` run, step N after epoch N).

    Args:
        logdir: TensorBoard directory.
        dataset: a dev dataset of `(features, labels, weights)` (a capped subset keeps this cheap).
        labels: class names.
        every: as `EveryNthEpoch`.
    """

    def __init__(self, logdir, dataset, labels, *, every):
        super().__init__(every)
        self.logdir = logdir
        self.dataset = dataset
        self.labels = labels
        self.writer = None

    def draw(self, epoch):
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(os.path.join(self.logdir, "images"))
        gold, predicted = predict_labels(self.model, self.dataset)
        matrix = confusion_matrix(gold, predicted, len(self.labels))
        write_confusion_image(self.writer, matrix, self.labels, "confusion_matrix/dev", epoch + 1,
                              f"dev, epoch {epoch + 1}")
