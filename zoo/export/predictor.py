"""Predictions and alignments from a run directory, an exported SavedModel or a TFLite export (used by
`predict.py` and `evaluate.py`).

The backends (`RunPredictor`, `SavedModelPredictor`, `TFLitePredictor`) answer in the format of
`zoo.load(run_dir).predict`: a list of `{"label": name, "probabilities": {name: float}}`, and explain
one pair as an `Explanation` (tokens the model saw, label, probabilities, attention maps).

Example:
```python
predictor = open_predictor(saved_model="models/rocktaschel_wbw")   # or run_dir=..., tflite=...
predictor.predict([("A man plays a guitar.", "A person makes music.")])
print(text_heatmap(*alignment_grid(predictor.explain("A man plays.", "A man sleeps."))))
```
"""

import os

import numpy as np

ATTENTION_MAPS = ("attention", "attention_reverse")
SHADES = " ░▒▓█"


class Explanation:
    """One pair as the model saw it.

    Args:
        premise_tokens, hypothesis_tokens: the tokens after truncation (lists of str).
        label: the predicted label.
        probabilities: `{label: float}`.
        maps: `{"attention": float [rows, cols], "attention_reverse": ...}` for the maps the model has,
            cropped to the real tokens or tree nodes (plus the NULL column where the model has one).
        null_column: whether column 0 of `attention` is Wang & Jiang's NULL premise position.
        labels: `{"premise": [...], "hypothesis": [...]}`: what the maps' columns and rows are (the tokens,
            or tree nodes labelled by `zoo.data.trees.element_labels`); default the tokens.
    """

    def __init__(self, premise_tokens, hypothesis_tokens, label, probabilities, maps, null_column, labels=None):
        self.premise_tokens = list(premise_tokens)
        self.hypothesis_tokens = list(hypothesis_tokens)
        self.label = label
        self.probabilities = dict(probabilities)
        self.maps = maps
        self.null_column = null_column
        self.labels = labels or {"premise": self.premise_tokens, "hypothesis": self.hypothesis_tokens}


def _crop_maps(outputs, premise_tokens, hypothesis_tokens):
    """The attention maps of one pair (`[rows, cols]` arrays with padding) cropped to the real tokens, or
    to the real elements (tree nodes, Paria's S_e) where the outputs hold their masks `premise_mask`.

    Returns:
        `(maps, null_column, labels)`: labels `{"premise": [...], "hypothesis": [...]}` of the columns
        and rows of `attention` (the tokens, or `zoo.data.trees.element_labels` over elements).
    """
    from zoo.data.trees import element_labels

    lp, lh = len(premise_tokens), len(hypothesis_tokens)
    labels = {"premise": list(premise_tokens), "hypothesis": list(hypothesis_tokens)}
    if "premise_mask" in outputs and "hypothesis_mask" in outputs:
        lp, lh = int(np.sum(outputs["premise_mask"])), int(np.sum(outputs["hypothesis_mask"]))
        labels = {"premise": element_labels(premise_tokens, lp), "hypothesis": element_labels(hypothesis_tokens, lh)}
    maps, null_column = {}, False
    if "attention" in outputs:
        weights = np.asarray(outputs["attention"], "float32")
        padded_premise = outputs["padded_premise_length"]
        null_column = weights.shape[-1] == padded_premise + 1
        rows = 1 if weights.shape[0] == 1 else lh
        maps["attention"] = weights[:rows, :lp + int(null_column)]
    if "attention_reverse" in outputs:
        maps["attention_reverse"] = np.asarray(outputs["attention_reverse"], "float32")[:lp, :lh]
    return maps, null_column, labels


def _split(pairs):
    """Columns of `(premise, hypothesis[, premise_binary_parse, hypothesis_binary_parse])` pairs (blank
    parses where a pair has none)."""
    pairs = [tuple(pair) for pair in pairs]
    return {"premise": [p[0] for p in pairs], "hypothesis": [p[1] for p in pairs],
            "premise_binary_parse": [p[2] if len(p) > 2 and p[2] else "" for p in pairs],
            "hypothesis_binary_parse": [p[3] if len(p) > 3 and p[3] else "" for p in pairs]}


class RunPredictor:
    """Predictions with the Keras model of a run directory (`zoo.load`).

    Args:
        run_dir: the run directory.
    """

    def __init__(self, run_dir):
        from zoo.runs import load_run

        self.run = load_run(run_dir)
        self.labels = self.run.labels

    def predict(self, pairs, batch_size=256):
        """`zoo.load(run_dir).predict(pairs)`."""
        return self.run.predict(pairs, batch_size=batch_size)

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair (the parses matter to models that read parse trees)."""
        run = self.run
        ids = run.encode([(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)])
        outputs = {k: np.asarray(v)[0] for k, v in run.model.explain(ids).items()}
        data = run.config["preset"]["data"]
        premise_tokens = run.tokenizer.tokenize(premise)[:data.get("max_premise_length")]
        hypothesis_tokens = run.tokenizer.tokenize(hypothesis)[:data.get("max_hypothesis_length")]
        outputs["padded_premise_length"] = ids["premise"].shape[1]
        maps, null_column, labels = _crop_maps(outputs, premise_tokens, hypothesis_tokens)
        probabilities = np.asarray(outputs["probabilities"], "float32")
        return Explanation(premise_tokens, hypothesis_tokens, self.labels[int(np.argmax(probabilities))],
                           dict(zip(self.labels, map(float, probabilities))), maps, null_column, labels)


def resolve_saved_model(path):
    """A SavedModel directory: `path` itself, or its highest numeric version (TF Serving layout).

    Raises:
        FileNotFoundError: no `saved_model.pb` there.
    """
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = sorted((int(n) for n in os.listdir(path) if n.isdigit()), reverse=True) \
        if os.path.isdir(path) else []
    for version in versions:
        candidate = os.path.join(path, str(version))
        if os.path.exists(os.path.join(candidate, "saved_model.pb")):
            return candidate
    raise FileNotFoundError(f"{path!r} is neither a SavedModel nor a folder of numbered SavedModel versions")


class SavedModelPredictor:
    """Predictions with an exported SavedModel (`serving_default` and `explain` signatures).

    Args:
        path: a version directory `MODELS/NAME/N` or `MODELS/NAME` (latest version).
    """

    def __init__(self, path):
        import tensorflow as tf

        from zoo.export.saved_model import read_metadata

        self.path = resolve_saved_model(path)
        self.loaded = tf.saved_model.load(self.path)
        self.labels = tuple(read_metadata(self.path)["labels"])

    def _call(self, signature, pairs):
        """Runs a signature on pairs (with their parses where it takes them).

        Raises:
            ValueError: inputs the signature rejects (a malformed parse), with its message.
        """
        import tensorflow as tf

        from zoo.export.serving import signature_error

        fn = self.loaded.signatures[signature]
        columns = _split(pairs)
        inputs = {name: tf.constant(columns[name], tf.string, shape=[len(pairs)])
                  for name in fn.structured_input_signature[1]}
        try:
            return {k: v.numpy() for k, v in fn(**inputs).items()}
        except tf.errors.InvalidArgumentError as error:
            raise ValueError(signature_error(error)) from None

    def predict(self, pairs, batch_size=256):
        """Like `zoo.load(run_dir).predict(pairs)`."""
        pairs, results = list(pairs), []
        for start in range(0, len(pairs), batch_size):
            try:
                outputs = self._call("serving_default", pairs[start:start + batch_size])
            except ValueError as error:  # rows are numbered within the batch
                raise ValueError(f"in the batch of pairs from index {start}: {error}") from None
            for label, p in zip(outputs["label"], outputs["probabilities"]):
                results.append({"label": label.decode("utf-8"),
                                "probabilities": {name: float(v) for name, v in zip(self.labels, p)}})
        return results

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair (from the `explain` signature)."""
        pair = (premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)
        outputs = {k: v[0] for k, v in self._call("explain", [pair]).items()}
        premise_tokens = [t.decode("utf-8") for t in outputs["premise_tokens"] if t]
        hypothesis_tokens = [t.decode("utf-8") for t in outputs["hypothesis_tokens"] if t]
        outputs["padded_premise_length"] = len(outputs["premise_tokens"])
        maps, null_column, labels = _crop_maps(outputs, premise_tokens, hypothesis_tokens)
        return Explanation(premise_tokens, hypothesis_tokens, outputs["label"].decode("utf-8"),
                           dict(zip(self.labels, map(float, outputs["probabilities"]))), maps, null_column, labels)


class TFLitePredictor:
    """Predictions with a TFLite export (`export.py --format tflite`), run by the LiteRT interpreter.

    The pairs are tokenized with the run's tokenizer in Python and cut into batches of the model's fixed
    batch size (`zoo.export.tflite.TFLiteNLI`).

    Args:
        path: the export folder or its `model.tflite`.
        num_threads: interpreter threads (None: LiteRT's default).

    Raises:
        FileNotFoundError: no TFLite export there.
    """

    def __init__(self, path, num_threads=None):
        from zoo.export.tflite import METADATA_FILE, MODEL_FILE, TFLiteNLI

        directory = os.path.dirname(path) if path.endswith(".tflite") else path
        for name in (MODEL_FILE, METADATA_FILE):
            if not os.path.exists(os.path.join(directory, name)):
                raise FileNotFoundError(f"{path!r} is not a TFLite export of export.py (no {name})")
        self.path = directory
        self.nli = TFLiteNLI(directory, num_threads=num_threads)
        self.labels = self.nli.labels

    def predict(self, pairs, batch_size=256):
        """Like `zoo.load(run_dir).predict(pairs)` (`batch_size`: pairs tokenized at a time; the model runs
        its own fixed batch size)."""
        pairs, results = list(pairs), []
        for start in range(0, len(pairs), batch_size):
            results += self.nli.predict(pairs[start:start + batch_size])
        return results

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair (the maps the TFLite model returns; none from an export without them)."""
        pair = (premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)
        outputs, (premise_tokens, hypothesis_tokens) = self.nli.explain_outputs(pair)
        outputs["padded_premise_length"] = self.nli.lengths["premise"]
        maps, null_column, labels = _crop_maps(outputs, premise_tokens, hypothesis_tokens)
        probabilities = outputs["probabilities"]
        return Explanation(premise_tokens, hypothesis_tokens, self.labels[int(np.argmax(probabilities))],
                           dict(zip(self.labels, map(float, probabilities))), maps, null_column, labels)


def open_predictor(run_dir=None, saved_model=None, tflite=None):
    """A `RunPredictor`, `SavedModelPredictor` or `TFLitePredictor` (exactly one of the arguments)."""
    given = [value is not None for value in (run_dir, saved_model, tflite)]
    if sum(given) != 1:
        raise ValueError("give exactly one of run_dir, saved_model and tflite")
    if run_dir is not None:
        return RunPredictor(run_dir)
    return SavedModelPredictor(saved_model) if saved_model is not None else TFLitePredictor(tflite)


# Alignment display --------------------------------------------------------------------------------
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


def text_heatmap(weights, columns, rows):
    """The alignment as a text heatmap: one line per row, two characters per column (darker = more
    weight, on an absolute 0..1 scale), followed by the row's strongest column and its weight.

    Args:
        weights: float `[len(rows), len(columns)]`.
        columns: column labels (listed with their numbers above the grid).
        rows: row labels.

    Returns:
        the heatmap as a multi-line string.
    """
    weights = np.asarray(weights, dtype="float32")
    width = max([len(r) for r in rows] + [4])
    lines = ["columns: " + "  ".join(f"{i}={c}" for i, c in enumerate(columns)),
             " " * (width + 2) + "".join(f"{i % 100:<2d}" for i in range(len(columns)))]
    for label, row in zip(rows, weights):
        cells = "".join(SHADES[min(len(SHADES) - 1, int(round(w * (len(SHADES) - 1))))] * 2 for w in row)
        best = int(np.argmax(row)) if len(row) else 0
        strongest = f"  -> {columns[best]} {row[best]:.2f}" if len(row) else ""
        lines.append(f"{label:>{width}} |{cells}|{strongest}")
    return "\n".join(lines)


def save_attention_png(explanation, path, name="attention"):
    """Draws one map as a PNG (premise words on top, hypothesis words down the side).

    Returns:
        `path`.
    """
    from zoo.plotting import plot_attention, pyplot

    weights, columns, rows = alignment_grid(explanation, name)
    title = f"predicted: {explanation.label} ({explanation.probabilities[explanation.label]:.2f})"
    figure = plot_attention(weights, columns, rows, title)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    pyplot().close(figure)
    return path
