"""SavedModel export for TF Serving: raw strings in, labels, probabilities and attention out.

The graph tokenizes with the run's `Tokenizer` (`tf_tokenize`, the very ops used in training), looks
the tokens up in a table initialized from the vocabulary shipped as an asset (`assets/vocab.txt`),
truncates to the preset's `max_premise_length` / `max_hypothesis_length` and runs the model.

Signatures (see docs/serving.md):
- `serving_default`: `premise`, `hypothesis` tf.string `[B]` -> `probabilities` float32 `[B, 3]`,
  `label` tf.string `[B]`, `label_id` int32 `[B]`. A model that reads parse trees
  (`syntactic_tree_lstm`, `him`) also takes `premise_binary_parse`, `hypothesis_binary_parse` tf.string
  `[B]` (SNLI's `sentence1_binary_parse` / `sentence2_binary_parse`), parsed in graph by
  `zoo.data.trees.tf_parse_trees`; a blank parse gets the complete binary tree over the sentence's
  tokens, and a malformed one fails the request with `premise_binary_parse[ROW]: REASON`.
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

import json
import os
import shutil
import tempfile

import keras
import tensorflow as tf

from zoo.data.vocab import PAD_ID, UNK_ID
from zoo.runs.layout import VOCAB_FILE

METADATA_PATH = os.path.join("assets.extra", "zoo.json")

INPUT_NAMES = ("premise", "hypothesis")
PARSE_INPUT_NAMES = ("premise_binary_parse", "hypothesis_binary_parse")
SERVING_OUTPUTS = ("probabilities", "label", "label_id")
EXPLAIN_SIGNATURE = "explain"


class ExportError(ValueError):
    """A user-facing export error (existing version, bad path, failed conversion)."""


def input_names(model):
    """The string inputs of the exported signatures: the sentences, and the parses for a model that reads them."""
    return INPUT_NAMES + (PARSE_INPUT_NAMES if model.reads_parse_trees else ())


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
            `(ids, tokens, all_tokens)`: int32 `[B, L]` right-padded with PAD_ID and tf.string `[B, L]`
            padded with "", with `L >= 1` (a batch of empty sentences has one PAD column, as in
            training), and the ragged tokens before truncation.
        """
        all_tokens = self.tokenizer.tf_tokenize(texts)
        tokens = all_tokens
        max_length = self.max_lengths.get(key)
        if max_length is not None:
            tokens = tokens[:, :max_length]
        ids = tf.ragged.map_flat_values(lambda t: tf.cast(self.table.lookup(t), tf.int32), tokens)
        return (_at_least_one_column(ids.to_tensor(default_value=PAD_ID), PAD_ID),
                _at_least_one_column(tokens.to_tensor(default_value=""), ""), all_tokens)


def parse_tree_input(parses, ids, all_tokens, field, tokenizer, max_length, max_depth):
    """The tree input of one side from its binary parses, in graph.

    Rows with a blank parse get the complete binary tree over their tokens; any other parse error fails
    with `FIELD[ROW]: REASON` (`zoo.data.trees.tf_parse_error_check`).

    Returns:
        int32 `[B, 2L - 1, 3]` (L: the padded length of `ids`).
    """
    from zoo.data.trees import PARSE_BLANK, tf_parse_error_check, tf_parse_trees
    from zoo.layers.tree_lstm import complete_tree

    parsed, status = tf_parse_trees(parses, all_tokens, tf.shape(ids)[1], lowercase=tokenizer.lowercase,
                                    max_length=max_length, max_depth=max_depth)
    complete = complete_tree(tf.not_equal(ids, PAD_ID), max_depth)
    trees = tf.where(tf.reshape(tf.equal(status, PARSE_BLANK), [-1, 1, 1]), complete, parsed)
    with tf.control_dependencies([tf_parse_error_check(status, field)]):
        return tf.identity(trees)


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
        run: a `zoo.runs.Run` (see `zoo.load`).

    Returns:
        the archive (call `.write_out(path)`).

    """
    model, labels = run.model, run.labels
    encoder = InGraphEncoder(run.tokenizer, os.path.abspath(os.path.join(run.run_dir, VOCAB_FILE)),
                             len(run.vocab), max_lengths(run.config))
    names = input_names(model)
    spec = [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def explain_outputs(texts):
        inputs, outputs = {}, {}
        for key in INPUT_NAMES:
            inputs[key], outputs[f"{key}_tokens"], all_tokens = encoder.encode(texts[key], key)
            if model.reads_parse_trees:
                inputs[f"{key}_tree"] = parse_tree_input(
                    texts[f"{key}_binary_parse"], inputs[key], all_tokens, f"{key}_binary_parse", run.tokenizer,
                    encoder.max_lengths.get(key), model.max_depth)
        outputs.update(_serving_outputs(model.explain(inputs), labels))
        return outputs

    @tf.function(input_signature=spec)
    def explain(*texts):  # the signature's inputs are named by `spec`
        return explain_outputs(dict(zip(names, texts)))

    def serve(*texts):
        outputs = explain(*texts)  # one trace of the model serves both signatures
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
        run: a `zoo.runs.Run`.
        model_dir: `MODELS/NAME`.
        version: the version number (default: the next free one).

    Returns:
        the version directory written.

    Raises:
        ExportError: existing version.
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
