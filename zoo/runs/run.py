"""A trained run loaded back: `Run` (model with its best weights, vocabulary, tokenizer) and `load_run`.

Example:
```python
import zoo
run = zoo.load("runs/bowman_lstm")
run.predict([("A man plays a guitar.", "A person makes music.")])
# [{"label": "entailment", "probabilities": {"entailment": 0.9, "neutral": 0.07, "contradiction": 0.03}}]
```
"""

import os

import numpy as np

from zoo.data.pipeline import encode_model_inputs
from zoo.data.tokenizer import Tokenizer
from zoo.data.vocab import Vocabulary
from zoo.registry import create_model
from zoo.runs.evaluation import evaluate_examples
from zoo.runs import layout
from zoo.runs.layout import BEST_WEIGHTS_FILE, VOCAB_FILE
from zoo.runs.manifest import check_run
from zoo.runs.record import CONFIG_FILE
from zoo.runs.pairs import check_pairs
from zoo.runs.record import load_record
from zoo.runs.results import read_results


def build_model(record):
    """Builds (with weights created, not loaded) the model a run's `RunRecord` describes (an older run's
    record carries the settings it was trained with: `zoo.runs.record.LEGACY_MODEL_SETTINGS`).

    Returns:
        the `NLIModel`.
    """
    return create_model(record.model, vocabulary_size=record.vocabulary_size, embedding_dim=record.embedding_dim,
                        tunable_words=record.tunable_words, num_tunable=record.num_tunable, **record.settings.model)


class Run:
    """A trained run: model with its best weights, vocabulary, tokenizer and record.

    Args:
        run_dir: the run directory.
        model: the `NLIModel` with its weights loaded.
        vocab: the `Vocabulary`.
        tokenizer: the `Tokenizer`.
        record: the run's `config.json`, typed (`zoo.runs.record.RunRecord`).
    """

    def __init__(self, run_dir, model, vocab, tokenizer, record):
        self.run_dir = run_dir
        self.model = model
        self.vocab = vocab
        self.tokenizer = tokenizer
        self.record = record

    @property
    def settings(self):
        """The paper preset the run trained with (`zoo.settings.RunSettings`)."""
        return self.record.settings

    @property
    def labels(self):
        """Label names by id."""
        return self.record.labels

    @property
    def unfinished(self):
        """Why the run is not finished (`"training"`: a process trains it now; `"stopped"`: training stopped before
        its results), or None for a finished run: its best weights so far are those loaded."""
        if os.path.exists(os.path.join(self.run_dir, layout.RESULTS_FILE)):
            return None
        return "training" if layout.holder(self.run_dir) else "stopped"

    def progress(self):
        """One line on an unfinished run (None when finished): whether it trains, the epochs it finished and the
        epoch of the best weights loaded."""
        why = self.unfinished
        if why is None:
            return None
        try:
            epochs = (layout.read_json(os.path.join(self.run_dir, layout.HISTORY_FILE), {}) or {}).get("epochs") or []
        except ValueError:
            epochs = []
        best = max(epochs, key=lambda e: e.get("val_accuracy", -1.0))["epoch"] if epochs else None
        doing = f"is being trained ({layout.holder(self.run_dir)})" if why == "training" else \
            "stopped before its results (rerun its train.py command to finish it)"
        return (f"{self.run_dir} is unfinished: it {doing}; {len(epochs)} of {self.settings.train.epochs} epochs done, "
                + (f"the best weights so far (epoch {best}) are used" if best else "its initial weights are used"))

    @property
    def results(self):
        """The run's `results.json` (`zoo.runs.results.RunResults`; None before the test evaluation)."""
        return read_results(self.run_dir)

    def encode(self, pairs, pair_ids=None):
        """Model inputs of `[(premise, hypothesis), ...]`, truncated like the training data.

        A model that reads parse trees (`model.reads_parse_trees`) also gets them: pairs may then be
        `(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)`, and a missing or blank
        parse gets the complete binary tree (as the exported SavedModel does). Other models ignore parses.

        Args:
            pairs: the pairs.
            pair_ids: names of the pairs in parse errors (default: their index).

        Returns:
            `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}`, plus `"premise_tree"` and
            `"hypothesis_tree"` (`zoo.data.trees.pair_tree_inputs`) for a model that reads parse trees.

        Raises:
            zoo.data.trees.TreeFormatError: a malformed parse (naming the pair).
            zoo.runs.pairs.PairError: a pair that is not 2 to 4 strings (naming it).
        """
        pairs = check_pairs(pairs)
        data = self.settings.data
        return encode_model_inputs(pairs, self.vocab, self.tokenizer, data.max_premise_length,
                                   data.max_hypothesis_length, parse_trees=self.model.reads_parse_trees,
                                   max_depth=getattr(self.model, "max_depth", None), pair_ids=pair_ids)

    def predict_probabilities(self, pairs, batch_size=256):
        """Class probabilities `float32 [N, 3]` of `[(premise, hypothesis), ...]` (parses as in `encode`)."""
        pairs = check_pairs(pairs)
        if not pairs:
            return np.zeros((0, len(self.labels)), "float32")
        chunks = []
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start:start + batch_size]
            inputs = self.encode(chunk, pair_ids=list(range(start, start + len(chunk))))
            logits = np.asarray(self.model(inputs, training=False), dtype="float32")
            chunks.append(softmax(logits))
        return np.concatenate(chunks)

    def evaluate(self, examples, batch_size=None, verbose=0):
        """Accuracy, per-class accuracy, confusion matrix (and per genre) on labelled examples.

        Args:
            examples: dicts with `premise`, `hypothesis`, `label` (and parses, `genre`), as
                `zoo.data.corpora.load_corpus` gives them.
            batch_size: pairs per batch (default: the run's).
            verbose: 1 shows a progress bar.

        Returns:
            `zoo.runs.evaluation.scores`' dict.
        """
        return evaluate_examples(self.model, list(examples), self.vocab, self.tokenizer, self.settings,
                                 batch_size=batch_size, verbose=verbose)

    def predict(self, pairs, batch_size=256):
        """Labels of `[(premise, hypothesis), ...]`.

        Returns:
            a list of `{"label": name, "probabilities": {name: float}}`, one per pair.
        """
        labels = self.labels
        return [{"label": labels[int(np.argmax(p))],
                 "probabilities": {name: float(v) for name, v in zip(labels, p)}}
                for p in self.predict_probabilities(pairs, batch_size)]


def softmax(logits):
    """Row-wise softmax in float32 NumPy (probabilities from a model's logits)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def load_run(run_dir, weights=BEST_WEIGHTS_FILE):
    """Loads a run written by `train.py`.

    Args:
        run_dir: the run directory.
        weights: weights file inside the run directory (default the best dev checkpoint).

    Returns:
        a `Run`.

    The run's files are checked against its manifest first (`zoo.runs.manifest`): a file of another run, or
    one changed since it was written, is refused in one line naming it and the remedy.

    Raises:
        FileNotFoundError: when the config, vocabulary or weights are missing.
        ValueError: a damaged config or weights file (one line naming it), a vocabulary of another size, a
            file that is not the one the run's manifest records (`zoo.fileio.ManifestError`).
    """
    record = load_record(run_dir)
    check_run(run_dir, [CONFIG_FILE, VOCAB_FILE, weights], expected=record.manifest,
              holder=lambda: layout.holder(run_dir))
    for name in (VOCAB_FILE, weights):
        if not os.path.exists(os.path.join(run_dir, name)):
            raise FileNotFoundError(f"run {run_dir!r} has no {name} (is training finished?)")
    vocab = Vocabulary.load(os.path.join(run_dir, VOCAB_FILE))
    if len(vocab) != record.vocabulary_size:
        raise ValueError(f"{VOCAB_FILE} has {len(vocab)} tokens, config.json says {record.vocabulary_size}")
    tokenizer = Tokenizer.from_config(record.tokenizer_config)
    model = build_model(record)
    path = os.path.join(run_dir, weights)
    try:
        model.load_weights(path)
    except Exception as error:  # h5py's OSError for a truncated file, Keras's ValueError for other weights
        detail = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise UnreadableWeightsError(f"{path} cannot be read ({detail}): the file is damaged or belongs to "
                                     "another model; a run still training writes it again from its backup when "
                                     "train.py is rerun on it, a finished run keeps no other copy: train it again "
                                     "with --overwrite") from None
    return Run(run_dir, model, vocab, tokenizer, record)


class UnreadableWeightsError(ValueError):
    """A run's weights file is damaged or does not fit its model."""
