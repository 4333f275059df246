"""What a model attended to, shown: the alignment of one pair's `Explanation` as a labelled grid, a text
heatmap, or a PNG (`predict.py --show-attention`, `--attention-png`).

Example:
```python
from zoo.predictors import open_predictor
explanation = open_predictor("runs/rocktaschel_wbw").explain("A man plays.", "A man sleeps.")
print(text_heatmap(*alignment_grid(explanation)))
```
"""

import logging

import numpy as np

from zoo.plotting import plot_attention, pyplot

notes = logging.getLogger(__name__).getChild("note")  # what the maps say of the model: `[note] ...`

SHADES = " ░▒▓█"


def alignment_grid(explanation, name="attention"):
    """The weights of one map with its column and row labels.

    Args:
        explanation: an `Explanation`.
        name: `"attention"` (rows hypothesis, columns premise) or `"attention_reverse"`.

    Returns:
        `(weights [rows, cols], column labels, row labels)`.

    Raises:
        KeyError: the model has no such map.
    """
    weights = explanation.maps[name]
    premise, hypothesis = explanation.labels["premise"], explanation.labels["hypothesis"]
    if name == "attention_reverse":
        return weights, hypothesis, premise
    columns = (["[NULL]"] if explanation.null_column else []) + premise
    rows = ["(final)"] if weights.shape[0] == 1 else hypothesis
    return weights, columns, rows


# Near-uniform attention: every row's strongest weight at most this many times the even share (1 / columns).
# An untrained or barely trained model spreads its attention about evenly; a trained one puts most of a
# row's weight on a few words.
NEAR_UNIFORM_RATIO = 1.5


def near_uniform(weights):
    """Whether an attention map is near uniform: no row gives its strongest column more than
    `NEAR_UNIFORM_RATIO` times the even share."""
    weights = np.asarray(weights, dtype="float32")
    if weights.ndim != 2 or weights.shape[1] < 2 or not weights.size:
        return False
    return bool(np.all(weights.max(axis=1) * weights.shape[1] <= NEAR_UNIFORM_RATIO))


def uniform_note(explanation):
    """One line where the explanation's maps are all near uniform ("" otherwise)."""
    if not explanation.maps or not all(near_uniform(w) for w in explanation.maps.values()):
        return ""
    return ("the attention is near uniform (no word gets more than "
            f"{NEAR_UNIFORM_RATIO:g}x the even share): the model has not learned where to look yet; train it on "
            "SNLI (nli-zoo train --model NAME) for maps like the papers'")


def say_if_uniform(explanation):
    """Says `uniform_note(explanation)` where there is one (a WARNING of the `[note]` logger); returns it."""
    line = uniform_note(explanation)
    if line:
        notes.warning(line)
    return line


def text_heatmap(weights, columns, rows):
    """The alignment as a text heatmap: one line per row, two characters per column (darker = more
    weight, over the map's own range from its lowest to its highest weight, as the PNG's colours), followed
    by the row's strongest column and its weight, and a last line giving the range.

    Args:
        weights: float `[len(rows), len(columns)]`.
        columns: column labels (listed with their numbers above the grid).
        rows: row labels.

    Returns:
        the heatmap as a multi-line string.
    """
    weights = np.asarray(weights, dtype="float32")
    low, high = (float(weights.min()), float(weights.max())) if weights.size else (0.0, 0.0)
    scaled = (weights - low) / (high - low) if high > low else np.zeros_like(weights)
    width = max([len(r) for r in rows] + [4])
    lines = ["columns: " + "  ".join(f"{i}={c}" for i, c in enumerate(columns)),
             " " * (width + 2) + "".join(f"{i % 100:<2d}" for i in range(len(columns)))]
    for label, row, shades in zip(rows, weights, scaled):
        cells = "".join(SHADES[min(len(SHADES) - 1, int(round(w * (len(SHADES) - 1))))] * 2 for w in shades)
        best = int(np.argmax(row)) if len(row) else 0
        strongest = f"  -> {columns[best]} {row[best]:.2f}" if len(row) else ""
        lines.append(f"{label:>{width}} |{cells}|{strongest}")
    lines.append(f"shades: '{SHADES[0]}' = {low:.3f} to '{SHADES[-1]}' = {high:.3f} (this map's range)"
                 if high > low else f"every weight is {high:.3f}")
    return "\n".join(lines)


def save_attention_png(explanation, path, name="attention"):
    """Draws one map as a PNG (premise words on top, hypothesis words down the side).

    Returns:
        `path`.
    """
    weights, columns, rows = alignment_grid(explanation, name)
    title = f"predicted: {explanation.label} ({explanation.probabilities[explanation.label]:.2f})"
    figure = plot_attention(weights, columns, rows, title)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    pyplot().close(figure)
    return path
