"""What the demo page shows of one model's `Explanation`: its attention maps as heatmap images with
captions (drawn by `zoo.plotting.plot_attention`, as `predict --attention-png` draws them) and, for tree
models, the trees they read as text drawings.

Example:
```python
explanation = predictor.explain("A man plays a guitar.", "A man sleeps.")
for image, caption in heatmaps(explanation, "rocktaschel_wbw"):
    image.save(...)
print(tree_drawings(explanation, reads_parse_trees=False, parses=("", "")))
```
"""

import io

from PIL import Image

from zoo.data.trees import complete_tree, parse_binary_parse, truncate
from zoo.plotting import plot_attention, pyplot
from zoo.runs.alignment import alignment_grid

PARSE_FREE = "complete binary tree over the tokens"


def describe_map(explanation, name):
    """The caption of one map: what its rows and columns are, and the NULL column where there is one."""
    weights = explanation.maps[name]
    if name == "attention_reverse":
        if weights.shape[0] == 1:
            return "attention of the last premise state over the hypothesis (sums to 1)"
        return "premise → hypothesis (rows: premise, columns: hypothesis; each row sums to 1)"
    if weights.shape[0] == 1:
        text = "attention of the last hypothesis state over the premise (sums to 1)"
    else:
        text = "hypothesis → premise (rows: hypothesis, columns: premise; each row sums to 1)"
    if explanation.null_column:
        text += "; column [NULL]: a hypothesis word aligned with no premise word"
    if is_over_tree_nodes(explanation):
        text += "; • = the phrase joining its neighbours"
    elif len(explanation.labels["premise"]) == 2 * len(explanation.premise_tokens) > 0:
        text += "; s: = a word's vector, v: = its bi-LSTM state (Paria et al.'s S_e)"
    return text


def heatmaps(explanation, title=""):
    """The explanation's attention maps as images.

    Args:
        explanation: a `zoo.export.predictor.Explanation`.
        title: put before the predicted label in each image's title (the model's name).

    Returns:
        a list of `(PIL.Image, caption)`, `attention` first; empty for a model without attention.
    """
    plt = pyplot()
    out = []
    for name in explanation.maps:
        weights, columns, rows = alignment_grid(explanation, name)
        if len(rows) != weights.shape[0]:  # a one-row reverse map (`*_attention_two_way`): the final state's
            rows = ["(final)"]
        label = explanation.label
        heading = f"{title + ': ' if title else ''}{label} ({explanation.probabilities[label]:.2f})"
        figure = plot_attention(weights, columns, rows, heading)
        if name == "attention_reverse":  # plot_attention names the axes of the forward map
            figure.axes[0].set_xlabel("hypothesis")
            figure.axes[0].set_ylabel("premise")
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        plt.close(figure)
        buffer.seek(0)
        image = Image.open(buffer)
        image.load()
        out.append((image, describe_map(explanation, name)))
    return out


def is_over_tree_nodes(explanation):
    """Whether the maps are over tree nodes (`2n - 1` elements for `n` tokens: a tree model's)."""
    n = len(explanation.premise_tokens)
    return n > 1 and len(explanation.labels["premise"]) == 2 * n - 1


def tree_text(tree):
    """A nested tree (`zoo.data.trees`) drawn as text lines, root first; "•" marks a phrase node."""
    lines = []
    stack = [(tree, "", "")]  # (node, prefix of its own line, prefix of its children's lines)
    while stack:
        node, own, below = stack.pop()
        lines.append(own + (node if isinstance(node, str) else "•"))
        if not isinstance(node, str):
            stack.append((node[1], below + "└─ ", below + "   "))
            stack.append((node[0], below + "├─ ", below + "│  "))
    return "\n".join(lines)


def sentence_tree(tokens, parse, reads_parse_trees):
    """`(tree, where it comes from)` of one sentence as the model reads it: its parse (cut to the tokens
    the model kept) for a model that reads parses, else the complete binary tree over the tokens."""
    if reads_parse_trees and parse.strip():
        return truncate(parse_binary_parse(parse), len(tokens)), "your parse"
    return complete_tree(len(tokens), leaf=tokens.__getitem__), PARSE_FREE


def tree_drawings(explanation, reads_parse_trees, parses):
    """The premise's and the hypothesis's trees as one text (empty for a model without trees).

    Args:
        explanation: the pair's `Explanation`.
        reads_parse_trees: whether the model reads binary parses.
        parses: `(premise_binary_parse, hypothesis_binary_parse)` ("" where none was given).
    """
    if not (reads_parse_trees or is_over_tree_nodes(explanation)):
        return ""
    parts = []
    for side, tokens, parse in (("premise", explanation.premise_tokens, parses[0]),
                                ("hypothesis", explanation.hypothesis_tokens, parses[1])):
        if not tokens:
            continue
        tree, where = sentence_tree(tokens, parse, reads_parse_trees)
        parts.append(f"{side} ({where}):\n{tree_text(tree)}")
    return "\n\n".join(parts)
