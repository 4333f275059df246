"""Run directories: the config written by `train.py`, its consistency checks, and `load_run`.

A run directory holds (see docs/architecture.md):
```
RUN/
  config.json       # model name, preset, vocabulary size, embedding dim, embeddings source, tokenizer, ...
  vocab.txt
  best.weights.h5   # weights of the best dev accuracy
  backup/           # BackupAndRestore state (resume after kill)
  history.json      # one entry per finished epoch; "finished" once fit() returned
  results.json      # test accuracy, per-class accuracy, confusion matrix
  logs/             # TensorBoard
```

Example:
```python
import zoo
run = zoo.load("runs/bowman_lstm")
run.predict([("A man plays a guitar.", "A person makes music.")])
# [{"label": "entailment", "probabilities": {"entailment": 0.9, "neutral": 0.07, "contradiction": 0.03}}]
```
"""

import json
import os
import shutil

import numpy as np

CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
BEST_WEIGHTS_FILE = "best.weights.h5"
BACKUP_DIR = "backup"
HISTORY_FILE = "history.json"
RESULTS_FILE = "results.json"
LOGS_DIR = "logs"

# Config entries that must match for a rerun to resume the run in the same directory (plus
# "embedding_dim" with random vectors).
IDENTITY_KEYS = ("model", "preset", "embeddings", "data", "seed")


def default_run_dir(model_name, root="runs"):
    """The run directory used when `--run-dir` is not given: `runs/MODEL` (deterministic, so that
    rerunning the same command resumes)."""
    return os.path.join(root, model_name)


def read_json(path, default=None):
    """Reads a JSON file, or returns `default` when it does not exist."""
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, value):
    """Writes `value` as indented JSON atomically (write to a temporary file, then rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def load_config(run_dir):
    """The `config.json` of a run.

    Raises:
        FileNotFoundError: when `run_dir` has no config.
    """
    path = os.path.join(run_dir, CONFIG_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{run_dir!r} is not a run directory (no {CONFIG_FILE})")
    return read_json(path)


def save_config(run_dir, config):
    """Writes `config.json` into `run_dir` (created when missing)."""
    os.makedirs(run_dir, exist_ok=True)
    write_json(os.path.join(run_dir, CONFIG_FILE), config)


def config_differences(old, new):
    """The entries of `new` (identity entries, see `IDENTITY_KEYS`) on which `old` differs, as readable lines."""
    lines = []
    for key in new:
        a, b = old.get(key), new.get(key)
        if key == "preset" and isinstance(a, dict) and isinstance(b, dict):
            for section in sorted(set(a) | set(b)):
                sa, sb = a.get(section, {}), b.get(section, {})
                for name in sorted(set(sa) | set(sb)):
                    if sa.get(name) != sb.get(name):
                        lines.append(f"{section}.{name}: {sa.get(name)!r} -> {sb.get(name)!r}")
        elif a != b:
            lines.append(f"{key}: {a!r} -> {b!r}")
    return lines


def prepare_run_dir(run_dir, identity, overwrite=False):
    """Decides what to do with `run_dir` for a run whose identity entries are `identity`.

    Args:
        run_dir: the run directory.
        identity: `{key: value}` for `IDENTITY_KEYS`.
        overwrite: delete an existing run whose settings differ (or that finished) and start again.

    Returns:
        `"new"` (nothing to resume), `"resume"` (same settings, training unfinished) or `"evaluate"`
        (same settings, training finished but no results yet) or `"finished"` (results exist).

    Raises:
        RunConflictError: when the directory holds a run with other settings and not `overwrite`.
    """
    old = read_json(os.path.join(run_dir, CONFIG_FILE))
    if old is None:
        # "workers" holds the scratch directories of multi-worker training, created by other processes
        if os.path.isdir(run_dir) and set(os.listdir(run_dir)) - {"workers"} and not overwrite:
            raise RunConflictError(f"{run_dir} exists and is not a run directory; "
                                   "choose another --run-dir or pass --overwrite")
        if os.path.isdir(run_dir) and overwrite:
            clear_run_dir(run_dir)
        return "new"
    differences = config_differences(old, identity)
    finished = os.path.exists(os.path.join(run_dir, RESULTS_FILE))
    if differences or (finished and overwrite):
        if not overwrite:
            raise RunConflictError(
                f"{run_dir} holds a run with other settings ({'; '.join(differences)}); rerun with the "
                "same settings to resume, choose another --run-dir, or pass --overwrite to start again")
        clear_run_dir(run_dir)
        return "new"
    if finished:
        return "finished"
    history = read_json(os.path.join(run_dir, HISTORY_FILE), {})
    return "evaluate" if history.get("finished") else "resume"


def clear_run_dir(run_dir):
    """Deletes a run directory's content, but not `workers/`: other workers of a multi-worker run may be
    writing there right now (each resets its own folder from the chief's state when it starts)."""
    for name in os.listdir(run_dir):
        if name == "workers":
            continue
        path = os.path.join(run_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


class RunConflictError(ValueError):
    """The run directory holds a run with other settings."""


# Model settings added after runs were written, with the value those runs were trained with: a run
# whose config lacks one gets this value, not the current preset's.
LEGACY_MODEL_SETTINGS = {"classifier_activation": "linear", "complete_trees": "carried"}


def build_model(config):
    """Builds (with weights created, not loaded) the model a run config describes.

    A setting the run's config lacks takes the value runs had before it existed (`LEGACY_MODEL_SETTINGS`),
    so an older run loads as it was trained.

    Args:
        config: a run's `config.json` content.

    Returns:
        the `NLIModel`.
    """
    import zoo

    settings = dict(config["preset"]["model"])
    preset = zoo.get_preset(config["model"])["model"]
    for key, value in LEGACY_MODEL_SETTINGS.items():
        if key in preset and key not in settings:
            settings[key] = value
    return zoo.create_model(
        config["model"], vocabulary_size=config["vocabulary_size"], embedding_dim=config["embedding_dim"],
        tunable_words=config["tunable_words"], num_tunable=config["num_tunable"], **settings)


class Run:
    """A trained run: model with its best weights, vocabulary, tokenizer and config.

    Args:
        run_dir: the run directory.
        model: the `NLIModel` with its weights loaded.
        vocab: the `Vocabulary`.
        tokenizer: the `Tokenizer`.
        config: the `config.json` content.
    """

    def __init__(self, run_dir, model, vocab, tokenizer, config):
        self.run_dir = run_dir
        self.model = model
        self.vocab = vocab
        self.tokenizer = tokenizer
        self.config = config

    @property
    def labels(self):
        """Label names by id."""
        from zoo.data import LABELS

        return tuple(self.config.get("labels", LABELS))

    @property
    def results(self):
        """The run's `results.json` content (None before the test evaluation)."""
        return read_json(os.path.join(self.run_dir, RESULTS_FILE))

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
        """
        from zoo.data.pipeline import encode_pairs

        pairs = [tuple(pair) for pair in pairs]
        data = self.config["preset"]["data"]
        max_lengths = {"premise": data.get("max_premise_length"), "hypothesis": data.get("max_hypothesis_length")}
        inputs = encode_pairs([pair[:2] for pair in pairs], self.vocab, self.tokenizer,
                              max_premise_length=max_lengths["premise"],
                              max_hypothesis_length=max_lengths["hypothesis"])
        if self.model.reads_parse_trees:
            from zoo.data.trees import pair_tree_inputs

            inputs.update(pair_tree_inputs(
                pairs, self.tokenizer, {key: inputs[key].shape[1] for key in max_lengths}, max_lengths,
                max_depth=self.model.max_depth, pair_ids=pair_ids))
        return inputs

    def predict_probabilities(self, pairs, batch_size=256):
        """Class probabilities `float32 [N, 3]` of `[(premise, hypothesis), ...]` (parses as in `encode`)."""
        pairs = list(pairs)
        if not pairs:
            return np.zeros((0, len(self.labels)), "float32")
        chunks = []
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start:start + batch_size]
            inputs = self.encode(chunk, pair_ids=list(range(start, start + len(chunk))))
            logits = np.asarray(self.model(inputs, training=False), dtype="float32")
            chunks.append(_softmax(logits))
        return np.concatenate(chunks)

    def evaluate(self, examples, batch_size=None, verbose=0):
        """Accuracy, per-class accuracy, confusion matrix (and per genre) on labelled examples.

        Args:
            examples: dicts with `premise`, `hypothesis`, `label` (and parses, `genre`), as
                `zoo.data.corpora.load_corpus` gives them.
            batch_size: pairs per batch (default: the run's).
            verbose: 1 shows a progress bar.

        Returns:
            `zoo.training.evaluation.scores`' dict.
        """
        from zoo.training.evaluation import evaluate_examples

        return evaluate_examples(self.model, list(examples), self.vocab, self.tokenizer, self.config["preset"],
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


def _softmax(logits):
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

    Raises:
        FileNotFoundError: when the config, vocabulary or weights are missing.
    """
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    config = load_config(run_dir)
    for name in (VOCAB_FILE, weights):
        if not os.path.exists(os.path.join(run_dir, name)):
            raise FileNotFoundError(f"run {run_dir!r} has no {name} (is training finished?)")
    vocab = Vocabulary.load(os.path.join(run_dir, VOCAB_FILE))
    if len(vocab) != config["vocabulary_size"]:
        raise ValueError(f"{VOCAB_FILE} has {len(vocab)} tokens, config.json says {config['vocabulary_size']}")
    tokenizer = Tokenizer.from_config(config["tokenizer"])
    model = build_model(config)
    model.load_weights(os.path.join(run_dir, weights))
    return Run(run_dir, model, vocab, tokenizer, config)
