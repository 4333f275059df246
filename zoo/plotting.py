"""Figures of what a model does: attention heatmaps like the papers' figures, confusion matrices.

matplotlib only (Agg backend, imported when a figure is drawn); TensorBoard images
(`zoo.training.callbacks`), `predict.py --attention-png` and the diagnostics draw with these. Attention maps
are coloured over their own range with a colour bar by default; the papers' absolute grey scale is
`scale="absolute"` (`train.py --attention-scale absolute`).
"""

import contextlib

import numpy as np

# How attention maps are coloured: "relative" (default) spreads the colour map over the map's own range, with
# a colour bar, so the weights of a briefly trained model (all near 1/length) stay readable; "absolute" is the
# papers' grey scale from 0 (white) to 1 (black), comparable across maps but near white early in training.
ATTENTION_SCALES = ("relative", "absolute")
_ATTENTION_SCALE = ["relative"]


@contextlib.contextmanager
def attention_scale(scale):
    """Draws attention maps on `scale` ("relative" or "absolute") within the `with` block.

    Raises:
        ValueError: for another scale.
    """
    if scale not in ATTENTION_SCALES:
        raise ValueError(f"attention scale must be one of {', '.join(ATTENTION_SCALES)}, got {scale!r}")
    previous, _ATTENTION_SCALE[0] = _ATTENTION_SCALE[0], scale
    try:
        yield
    finally:
        _ATTENTION_SCALE[0] = previous


def pyplot():
    """matplotlib.pyplot on the Agg backend (files, no display).

    Imported on first use: pyplot takes about 0.9 s to import, and every command imports this module.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_attention(weights, premise_tokens, hypothesis_tokens, title="", scale=None):
    """A heatmap of attention weights like the papers' figures: premise words on top, hypothesis
    words down the side, with a colour bar.

    Args:
        weights: float `[rows, len(premise_tokens)]` (rows = hypothesis tokens, or one row).
        premise_tokens: premise words (columns).
        hypothesis_tokens: hypothesis words (rows), or one label per row.
        title: figure title.
        scale: "relative" (the colour map over the map's own minimum to maximum: readable whatever the
            spread of the weights) or "absolute" (the papers' grey scale, white 0 to black 1); default
            "relative", or the scale of the enclosing `attention_scale(...)` block.

    Returns:
        the matplotlib figure.
    """
    scale = scale or _ATTENTION_SCALE[0]
    if scale not in ATTENTION_SCALES:
        raise ValueError(f"attention scale must be one of {', '.join(ATTENTION_SCALES)}, got {scale!r}")
    plt = pyplot()
    weights = np.asarray(weights, dtype="float32")
    rows, cols = weights.shape
    finite = weights[np.isfinite(weights)]
    if scale == "absolute":
        cmap, vmin, vmax, label = "Greys", 0.0, 1.0, "weight (0 to 1)"
    else:
        vmin = float(finite.min()) if finite.size else 0.0
        vmax = float(finite.max()) if finite.size else 1.0
        vmax = vmax if vmax > vmin else vmin + 1e-6  # a uniform map: one colour
        cmap, label = "viridis", "weight (this map's range)"
    figure, axes = plt.subplots(figsize=(max(4.8, 2.4 + 0.42 * cols), max(3.6, 1.9 + 0.42 * rows)))
    image = axes.imshow(weights, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    colorbar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.03)
    colorbar.set_label(label)
    axes.set_xticks(range(cols))
    axes.set_xticklabels(premise_tokens, rotation=90)
    axes.xaxis.tick_top()
    axes.set_yticks(range(rows))
    axes.set_yticklabels(hypothesis_tokens)
    axes.set_xlabel("premise")
    axes.xaxis.set_label_position("top")
    axes.set_ylabel("hypothesis")
    if title:
        axes.set_title(title, fontsize=10)
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
