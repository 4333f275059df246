"""The one predictor interface: whatever answers NLI pairs (a run, a SavedModel, a TFLite export, a preset, a
baseline) answers them the same way, so `evaluate`, `predict`, the diagnostics and the demo need not know which.

`Predictor` (abstract):
- `kind`: `"run"`, `"saved_model"`, `"tflite"`, `"preset"` (or a baseline's name); `path`: where it came from.
- `labels`: the label names, in the order of the probabilities' columns.
- `predict_probabilities(pairs, batch_size=256)` -> float32 `[N, len(labels)]`.
- `predict(pairs, batch_size=256)` -> `[{"label": name, "probabilities": {name: float}}]` (the format of
  `zoo.load(run).predict`).
- `evaluate(examples, batch_size=None, verbose=0)` -> `zoo.runs.evaluation.scores` of labelled examples.
- `can_explain` and `explain(premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse="")` ->
  an `Explanation` (tokens as the model saw them, label, probabilities, attention maps).
- `describe()` -> one line: what it is and where it came from.
- `length_notes(pairs)` -> the pairs the model's maximum lengths cut and the empty sentences, counted as a
  run counts its data (`zoo.runs.datasets.length_notes`), from the predictor's own tokenizer and lengths
  (`input_limits()`); None for a predictor that does not know them.

A pair is `(premise, hypothesis)` or `(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)`
(strings; the parses matter to the models that read parse trees, a blank one means the complete binary tree);
`check_pairs` refuses anything else in one line naming the pair.

`RunPredictor` (a run directory) lives here; the export's predictors are in `zoo.export.predictor`, the
factory that recognises any of them from a path is `zoo.predictors.open_predictor`.
"""

import abc
import os

import numpy as np

from zoo.data.trees import element_labels
from zoo.fileio import CorruptFileError
from zoo.runs.evaluation import evaluate_saved_model
from zoo.runs.pairs import check_pairs
from zoo.settings import DataSettings


def probability_dicts(labels, probabilities):
    """`[{"label": name, "probabilities": {name: float}}]` of float `[N, len(labels)]` probabilities."""
    return [{"label": labels[int(np.argmax(p))], "probabilities": {name: float(v) for name, v in zip(labels, p)}}
            for p in np.asarray(probabilities)]


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

    def __repr__(self):
        maps = ", ".join(f"{name} {weights.shape[0]}x{weights.shape[1]}" for name, weights in self.maps.items())
        return (f"Explanation({self.label} {self.probabilities[self.label]:.2f}; premise "
                f"{' '.join(self.premise_tokens)!r}; hypothesis {' '.join(self.hypothesis_tokens)!r}; "
                f"maps: {maps or 'none'}{'; column 0 of attention is NULL' if self.null_column else ''})")

    @classmethod
    def from_outputs(cls, outputs, premise_tokens, hypothesis_tokens, labels):
        """The explanation of one pair from a model's `explain()` outputs without the batch axis (plus
        `padded_premise_length`, the premise length the maps are padded to) and the tokens it saw."""
        maps, null_column, names = crop_maps(outputs, premise_tokens, hypothesis_tokens)
        probabilities = np.asarray(outputs["probabilities"], "float32")
        return cls(premise_tokens, hypothesis_tokens, labels[int(np.argmax(probabilities))],
                   dict(zip(labels, map(float, probabilities))), maps, null_column, names)


def crop_maps(outputs, premise_tokens, hypothesis_tokens):
    """The attention maps of one pair (`[rows, cols]` arrays with padding) cropped to the real tokens, or
    to the real elements (tree nodes, Paria's S_e) where the outputs hold their masks `premise_mask`.

    Returns:
        `(maps, null_column, labels)`: labels `{"premise": [...], "hypothesis": [...]}` of the columns
        and rows of `attention` (the tokens, or `zoo.data.trees.element_labels` over elements).
    """
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


class Predictor(abc.ABC):
    """What answers NLI pairs (see the module docstring). Subclasses set `kind`, `path` and `labels` and
    implement `predict_probabilities`; those that can show attention set `can_explain` and `explain`."""

    kind = "predictor"
    can_explain = False
    reads_parse_trees = False  # whether the model reads binary parses (then `explain` and pairs may give them)
    path = None
    labels = ()

    @abc.abstractmethod
    def predict_probabilities(self, pairs, batch_size=256):
        """Class probabilities float32 `[N, len(labels)]` of the pairs."""

    def predict(self, pairs, batch_size=256):
        """`[{"label": name, "probabilities": {name: float}}]`, one per pair (`zoo.load(run).predict`'s format)."""
        return probability_dicts(self.labels, self.predict_probabilities(pairs, batch_size=batch_size))

    def evaluate(self, examples, batch_size=None, verbose=0):
        """Accuracy, per-class accuracy, confusion matrix (and per genre) on labelled examples
        (`zoo.runs.evaluation.scores`)."""
        return evaluate_saved_model(self, list(examples), batch_size=batch_size or 256, verbose=verbose)

    def input_limits(self):
        """`(tokenizer, max_premise_length, max_hypothesis_length)`: the `zoo.data.tokenizer.Tokenizer` the
        model reads sentences with and the tokens it keeps of each (None: all); None where the predictor does
        not know them (then `length_notes` counts nothing)."""
        return None

    def length_notes(self, pairs):
        """Counts the pairs this model's maximum lengths cut and the empty sentences (no tokens) among `pairs`,
        as a run counts its data: both are answered, so the counts say how many answers that concerns.

        Returns:
            `zoo.runs.datasets.length_notes`'s dict (`pairs`, `premises_cut`, `hypotheses_cut`,
            `empty_premises`, `empty_hypotheses`, `max_premise_length`, `max_hypothesis_length`; one phrase
            by `describe_length_notes`), or None where `input_limits()` is None.
        """
        limits = self.input_limits()
        if limits is None:
            return None
        # Here: tf.data and the tokenizer's ops (TensorFlow), which the interface itself does not import.
        from zoo.runs.datasets import length_notes

        tokenizer, max_premise_length, max_hypothesis_length = limits
        examples = [{"premise": pair[0], "hypothesis": pair[1]} for pair in check_pairs(pairs)]
        return length_notes(examples, tokenizer, DataSettings(max_premise_length=max_premise_length,
                                                              max_hypothesis_length=max_hypothesis_length))

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair.

        Raises:
            ValueError: this predictor cannot show what the model attended to.
        """
        raise ValueError(f"{self.describe()} cannot explain a pair (no attention maps)")

    def test_score(self):
        """The model's test accuracy as its files record it: `{"accuracy", "examples", "data"}` (examples and
        data None where not recorded), or None where they record none (a SavedModel, an unfinished run)."""
        return None

    @property
    def name(self):
        """A short name: the model's, else the folder's."""
        return os.path.basename(os.path.normpath(self.path)) if self.path else self.kind

    def describe(self):
        """One line: what it is and where it came from."""
        return f"{self.kind.replace('_', ' ')} {self.path or ''} ({self.name})".replace("  ", " ")

    def __repr__(self):
        return f"<{type(self).__name__} {self.describe()}>"


def describe_score(score):
    """A `Predictor.test_score()` in words: "test accuracy 0.389 on 144 pairs of snli_sample"."""
    if score is None:
        return "test accuracy not recorded"
    examples = f" on {score['examples']:,} pairs" if score.get("examples") else ""
    data = f" of {score['data']}" if score.get("data") else ""
    return f"test accuracy {score['accuracy']:.3f}{examples}{data}"


class RunPredictor(Predictor):
    """Predictions with the Keras model of a run directory (`zoo.load`).

    Args:
        run: the run directory, or a loaded `zoo.runs.Run`.
    """

    kind = "run"
    can_explain = True

    def __init__(self, run):
        # Here: `zoo.runs.run` imports TensorFlow and keras (about 6 s), which the interface itself and the
        # predictors of other kinds do not need (the diagnostics import this module without a run).
        from zoo.runs.run import Run, load_run

        self.run = run if isinstance(run, Run) else load_run(os.fspath(run))
        self.path = self.run.run_dir
        self.labels = self.run.labels

    @property
    def name(self):
        return self.run.record.model

    @property
    def reads_parse_trees(self):
        return bool(self.run.model.reads_parse_trees)

    def predict_probabilities(self, pairs, batch_size=256):
        return self.run.predict_probabilities(check_pairs(pairs), batch_size=batch_size)

    def input_limits(self):
        """The run's tokenizer and the maximum lengths of its data settings (those it was trained with)."""
        data = self.run.settings.data
        return self.run.tokenizer, data.max_premise_length, data.max_hypothesis_length

    def test_score(self):
        """The run's test accuracy (`results.json`) and its data (`config.json`); None where results.json is
        missing or damaged (reading it for a note must not stop a prediction)."""
        try:
            results = self.run.results
        except (OSError, ValueError, CorruptFileError):
            return None
        if results is None or results.test_accuracy is None:
            return None
        data = self.run.record.data
        return {"accuracy": results.test_accuracy, "examples": results.test.get("examples"),
                "data": None if data is None else data.source}

    def evaluate(self, examples, batch_size=None, verbose=0):
        """Scored by the run's Keras model on batches of its length grid (`Run.evaluate`)."""
        return self.run.evaluate(examples, batch_size=batch_size, verbose=verbose)

    def explain(self, premise, hypothesis, premise_binary_parse="", hypothesis_binary_parse=""):
        """The `Explanation` of one pair (the parses matter to models that read parse trees)."""
        run = self.run
        (pair,) = check_pairs([(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)])
        ids = run.encode([pair])
        outputs = {k: np.asarray(v)[0] for k, v in run.model.explain(ids).items()}
        data = run.settings.data
        premise_tokens = run.tokenizer.tokenize(premise)[:data.max_premise_length]
        hypothesis_tokens = run.tokenizer.tokenize(hypothesis)[:data.max_hypothesis_length]
        outputs["padded_premise_length"] = ids["premise"].shape[1]
        return Explanation.from_outputs(outputs, premise_tokens, hypothesis_tokens, self.labels)
