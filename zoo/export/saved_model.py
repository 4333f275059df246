"""SavedModel export for TF Serving: raw strings in, labels, probabilities and attention out.

The graph tokenizes with the run's `Tokenizer` (`tf_tokenize`, the very ops used in training), looks
the tokens up in a table initialized from the vocabulary shipped as an asset (`assets/vocab.txt`),
truncates to the preset's `max_premise_length` / `max_hypothesis_length` and runs the model.

Signatures (see docs/serving.md):
- `serving_default`: `premise`, `hypothesis` tf.string `[B]` -> `probabilities` float32 `[B, 3]`,
  `label` tf.string `[B]`, `label_id` int32 `[B]`.
- `explain`: the same inputs -> the outputs of `serving_default` plus `logits`, `attention` (and
  `attention_reverse` and other model-specific maps where the model has them, float32) and
  `premise_tokens` `[B, Lp]`, `hypothesis_tokens` `[B, Lh]` (tf.string, right-padded with "").

Example:
```python
import zoo
from zoo.export import export_saved_model
path = export_saved_model(zoo.load("runs/rocktaschel_wbw"), "models/rocktaschel_wbw")  # .../1
```
"""

import fnmatch
import json
import os
import shutil
import tempfile

import keras
import tensorflow as tf

from zoo.data.vocab import PAD_ID, UNK_ID
from zoo.training.runs import VOCAB_FILE

METADATA_PATH = os.path.join("assets.extra", "zoo.json")

INPUT_NAMES = ("premise", "hypothesis")
SERVING_OUTPUTS = ("probabilities", "label", "label_id")
EXPLAIN_SIGNATURE = "explain"
# Models that read parse trees: their export is not implemented yet.
TREE_MODEL_PATTERNS = ("*tree*", "him", "paria*")


class ExportError(ValueError):
    """A user-facing export error (unsupported model, existing version, bad path)."""


def check_exportable(model_name):
    """Raises `ExportError` for models this exporter does not handle (the tree-based ones).

    Args:
        model_name: a registered model name.
    """
    if any(fnmatch.fnmatch(model_name, pattern) for pattern in TREE_MODEL_PATTERNS):
        raise ExportError(f"model {model_name!r} reads parse trees; only sequence models can be "
                          "exported so far")


def next_version(model_dir):
    """The next free TF Serving version number under `model_dir` (1 when there is none).

    Args:
        model_dir: `MODELS/NAME`, holding numeric version directories.

    Returns:
        int, one more than the largest existing version.
    """
    if not os.path.isdir(model_dir):
        return 1
    versions = [int(name) for name in os.listdir(model_dir) if name.isdigit()]
    return max(versions, default=0) + 1


def version_dir(model_dir, version=None):
    """The directory `MODELS/NAME/N` to export into.

    Args:
        model_dir: `MODELS/NAME`.
        version: a version number, or None for the next free one.

    Returns:
        the path (not yet existing).

    Raises:
        ExportError: the version is not a positive integer or already exists.
    """
    if version is None:
        version = next_version(model_dir)
    if int(version) < 1:
        raise ExportError(f"--version must be a positive integer, got {version}")
    path = os.path.join(model_dir, str(int(version)))
    if os.path.exists(path):
        raise ExportError(f"{path} already exists; choose another --version or leave it out "
                          "for the next free one")
    return path


class InGraphEncoder(tf.Module):
    """Raw strings -> padded token ids and tokens, in graph (tokenizer, vocabulary table, truncation).

    Args:
        tokenizer: the run's `Tokenizer`.
        vocab_path: the `vocab.txt` (one token per line, line number = id) the table is built from;
            saved as an asset of the SavedModel.
        vocab_size: the number of tokens (checked against the file).
        max_lengths: `{"premise": int or None, "hypothesis": int or None}` (truncation as in training).
    """

    def __init__(self, tokenizer, vocab_path, vocab_size, max_lengths):
        super().__init__(name="encoder")
        self.tokenizer = tokenizer
        self.max_lengths = dict(max_lengths)
        # The initializer wraps the file in a `tf.saved_model.Asset`: it is copied to `assets/vocab.txt`
        # and the table is rebuilt from there when the SavedModel is loaded.
        initializer = tf.lookup.TextFileInitializer(
            vocab_path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
            tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER, vocab_size=vocab_size)
        self.table = tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)

    def encode(self, texts, key):
        """Tokenizes and looks up one side of the pairs.

        Args:
            texts: tf.string `[B]`.
            key: `"premise"` or `"hypothesis"` (selects the maximum length).

        Returns:
            `(ids, tokens)`: int32 `[B, L]` right-padded with PAD_ID and tf.string `[B, L]` padded with "",
            with `L >= 1` (a batch of empty sentences has one PAD column, as in training).
        """
        tokens = self.tokenizer.tf_tokenize(texts)
        max_length = self.max_lengths.get(key)
        if max_length is not None:
            tokens = tokens[:, :max_length]
        ids = tf.ragged.map_flat_values(lambda t: tf.cast(self.table.lookup(t), tf.int32), tokens)
        return (_at_least_one_column(ids.to_tensor(default_value=PAD_ID), PAD_ID),
                _at_least_one_column(tokens.to_tensor(default_value=""), ""))


def _at_least_one_column(x, value):
    return tf.pad(x, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(x)[1])]], constant_values=value)


def max_lengths(config):
    """The truncation lengths of a run: `{"premise": n, "hypothesis": n}` (None = no truncation)."""
    data = config["preset"]["data"]
    return {"premise": data.get("max_premise_length"), "hypothesis": data.get("max_hypothesis_length")}


def _serving_outputs(outputs, labels):
    """Probabilities, label and label id from the model's `explain()` outputs (all float maps float32)."""
    outputs = {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in outputs.items()}
    label_id = tf.argmax(outputs["probabilities"], axis=-1, output_type=tf.int32)
    outputs["label_id"] = label_id
    outputs["label"] = tf.gather(tf.constant(list(labels), dtype=tf.string), label_id)
    return outputs


def build_archive(run):
    """The `keras.export.ExportArchive` of a run with its `serving_default` and `explain` endpoints.

    Args:
        run: a `zoo.training.runs.Run` (see `zoo.load`).

    Returns:
        the archive (call `.write_out(path)`).

    Raises:
        ExportError: for a model that cannot be exported.
    """
    check_exportable(run.config["model"])
    model, labels = run.model, run.labels
    encoder = InGraphEncoder(run.tokenizer, os.path.abspath(os.path.join(run.run_dir, VOCAB_FILE)),
                             len(run.vocab), max_lengths(run.config))
    spec = [tf.TensorSpec([None], tf.string, name=name) for name in INPUT_NAMES]

    @tf.function(input_signature=spec)
    def explain(premise, hypothesis):
        premise_ids, premise_tokens = encoder.encode(premise, "premise")
        hypothesis_ids, hypothesis_tokens = encoder.encode(hypothesis, "hypothesis")
        outputs = _serving_outputs(model.explain({"premise": premise_ids, "hypothesis": hypothesis_ids}),
                                   labels)
        outputs.update(premise_tokens=premise_tokens, hypothesis_tokens=hypothesis_tokens)
        return outputs

    def serve(premise, hypothesis):
        outputs = explain(premise, hypothesis)  # one trace of the model serves both signatures
        return {name: outputs[name] for name in SERVING_OUTPUTS}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(encoder.table)
    archive.add_endpoint("serving_default", serve, input_signature=spec)
    archive.add_endpoint(EXPLAIN_SIGNATURE, explain)
    archive.encoder = encoder  # keeps the asset alive until write_out
    return archive


def write_metadata(saved_model_dir, run):
    """Writes `assets.extra/zoo.json` (model name, labels, tokenizer, truncation, run directory): files in
    `assets.extra/` ride along with a SavedModel without being part of the graph."""
    metadata = {"model": run.config["model"], "labels": list(run.labels), "tokenizer": run.tokenizer.get_config(),
                "max_lengths": max_lengths(run.config), "run_dir": os.path.abspath(run.run_dir)}
    os.makedirs(os.path.join(saved_model_dir, "assets.extra"), exist_ok=True)
    with open(os.path.join(saved_model_dir, METADATA_PATH), "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=2, sort_keys=True)
        f.write("\n")


def read_metadata(saved_model_dir):
    """The `assets.extra/zoo.json` of an exported SavedModel (labels default to `zoo.data.LABELS`)."""
    from zoo.data import LABELS

    path = os.path.join(saved_model_dir, METADATA_PATH)
    if not os.path.exists(path):
        return {"labels": list(LABELS)}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def export_saved_model(run, model_dir, version=None):
    """Writes the run's SavedModel into the TF Serving layout `model_dir/N/`.

    The SavedModel is written to a temporary directory beside it and renamed into place, so that a
    server watching `model_dir` never sees a half-written version.

    Args:
        run: a `zoo.training.runs.Run`.
        model_dir: `MODELS/NAME`.
        version: the version number (default: the next free one).

    Returns:
        the version directory written.

    Raises:
        ExportError: unsupported model or existing version.
    """
    path = version_dir(model_dir, version)
    archive = build_archive(run)
    os.makedirs(model_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".export-", dir=model_dir)
    try:
        archive.write_out(tmp, verbose=False)
        write_metadata(tmp, run)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
    return path
