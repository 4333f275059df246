"""Figures of what a model does: attention heatmaps like the papers' figures, confusion matrices.

matplotlib only (Agg backend, imported when a figure is drawn); TensorBoard images
(`zoo.training.callbacks`), `predict.py --attention-png` and the diagnostics draw with these.
"""

import numpy as np


def pyplot():
    """matplotlib.pyplot on the Agg backend (files, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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
    plt = pyplot()
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
    plt = pyplot()
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
