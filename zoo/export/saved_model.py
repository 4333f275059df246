"""SavedModel export for TF Serving: raw strings in, labels, probabilities and attention out.

The graph tokenizes with the run's `Tokenizer` (`tf_tokenize`, the very ops used in training), looks
the tokens up in a table initialized from the vocabulary shipped as an asset (`assets/vocab.txt`),
truncates to the preset's `max_premise_length` / `max_hypothesis_length` and runs the model.

Signatures (see docs/serving.md):
- `serving_default`: `premise`, `hypothesis` tf.string `[B]` -> `probabilities` float32 `[B, 3]`,
  `label` tf.string `[B]`, `label_id` int32 `[B]`. A model that reads parse trees
  (`syntactic_tree_lstm`, `him`) also takes `premise_binary_parse`, `hypothesis_binary_parse` tf.string
  `[B]` (SNLI's `sentence1_binary_parse` / `sentence2_binary_parse`), parsed in graph by
  `zoo.data.tree_graph.tf_parse_trees`; a blank parse gets the complete binary tree over the sentence's
  tokens, and a malformed one fails the request with `premise_binary_parse[ROW]: REASON`.
- `explain`: the same inputs -> the outputs of `serving_default` plus `logits`, `attention` (and
  `attention_reverse` and other model-specific maps where the model has them, float32) and
  `premise_tokens` `[B, Lp]`, `hypothesis_tokens` `[B, Lh]` (tf.string, right-padded with "").

Speed (`ServingModel`, see docs/serving.md, "Speed on a CPU"): `serving_default` runs a batch of more
than `chunk_size` pairs (default 32, `export.py --chunk-size`) sorted by sentence length in chunks of
`chunk_size` pairs, each padded only to its own longest sentences, and puts the rows back in order. With
`xla_max_batch=N` (`export.py --xla-max-batch N`), batches of at most N pairs run an XLA-compiled copy of
the model (`tf.function(jit_compile=True)`; tokenization stays outside it), their token ids padded up to
the run's length grid and the batch up to a power of two, so the compilations are a few shape classes,
all met by the warm-up requests. TF Serving compiles on a CPU only with `--xla_cpu_compilation_enabled=true`.
`explain`, and every signature of a model that reads parse trees, runs the plain graph.

Beside the SavedModel, `export_saved_model` writes TF Serving's deployment files: the warm-up requests
(`assets.extra/tf_serving_warmup_requests`), `batching_parameters.txt` and `models.config` (version
labels stable / canary) in the model folder (`zoo.export.serving_files`).

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

import keras
import tensorflow as tf

from zoo import fileio
from zoo.data.vocab import PAD_ID, UNK_ID
from zoo.layers.recurrent import packed_inference
from zoo.runs.layout import VOCAB_FILE

METADATA_PATH = os.path.join("assets.extra", "zoo.json")

INPUT_NAMES = ("premise", "hypothesis")
PARSE_INPUT_NAMES = ("premise_binary_parse", "hypothesis_binary_parse")
SERVING_OUTPUTS = ("probabilities", "label", "label_id")
EXPLAIN_SIGNATURE = "explain"
DEFAULT_CHUNK_SIZE = 32  # serving_default: larger batches run length-sorted in chunks of this many pairs


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
    with `FIELD[ROW]: REASON` (`zoo.data.tree_graph.tf_parse_error_check`).

    Returns:
        int32 `[B, 2L - 1, 3]` (L: the padded length of `ids`).
    """
    from zoo.data.tree_graph import PARSE_BLANK, tf_parse_error_check, tf_parse_trees
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


def grid_length(length, boundaries):
    """The first of `boundaries` (increasing ints) holding `length`, in graph (`length` itself beyond all)."""
    bounds = tf.constant(boundaries, tf.int32)
    index = tf.searchsorted(bounds, tf.reshape(length, [1]), side="left")[0]
    return tf.where(index < len(boundaries), tf.gather(bounds, tf.minimum(index, len(boundaries) - 1)), length)


def next_power_of_two(n):
    """The smallest power of two >= `n` (int32 scalar tensor >= 1), in graph."""
    n = tf.maximum(n, 1)
    exponent = tf.math.ceil(tf.math.log(tf.cast(n, tf.float32)) / tf.math.log(2.0))
    power = tf.cast(tf.pow(2.0, exponent), tf.int32)
    return tf.where(power < n, power * 2, power)  # float rounding just below an exact power


def length_boundaries(config):
    """The closed boundaries of the run's length grid per side: `{"premise": [...], "hypothesis": [...]}`."""
    from zoo.data.batching import LengthGrid

    data = config["preset"]["data"]
    grid = LengthGrid.for_max_lengths(data.get("max_premise_length"), data.get("max_hypothesis_length"))
    return {"premise": [b for b in grid.premise_boundaries if b is not None],
            "hypothesis": [b for b in grid.hypothesis_boundaries if b is not None]}


class ServingModel(tf.Module):
    """The probabilities of `serving_default` from token ids, by the fastest of three ways on a CPU.

    - `xla_max_batch`: batches of at most this many pairs run an XLA-compiled copy of the model, their ids
      padded up to the run's length grid and the batch up to a power of two (all-padding rows), so the
      compilations are a few shape classes (met by the warm-up requests); XLA removes the per-op overhead
      that dominates small batches.
    - `chunk_size`: larger batches are sorted by sentence length and run in chunks of this many pairs, each
      cropped to its own longest sentences, so that little of the work goes to padding (a batch of 256
      SNLI pairs padded to its longest sentences is about 60% padding); the rows are put back in order.
    - otherwise the plain graph, as `explain`.

    Every row is computed by the same model on its own tokens (padding is masked), so the answers are the
    plain graph's (the tests hold them to the Keras model within 1e-5).

    Args:
        model: the `NLIModel`.
        boundaries: `{"premise": [...], "hypothesis": [...]}`, the lengths XLA pads the ids up to.
        xla_max_batch: the largest batch run through XLA (0: none).
        chunk_size: pairs per chunk of a larger batch (0: no chunks).
        explain_fn: the `tf.function` of `model.explain` the `explain` signature calls (one trace of the
            model then serves both signatures and every chunk).
    """

    def __init__(self, model, boundaries, xla_max_batch=0, chunk_size=0, explain_fn=None):
        super().__init__(name="serving_model")
        self.boundaries = boundaries
        self.xla_max_batch = int(xla_max_batch)
        self.chunk_size = int(chunk_size)
        self.model = model
        self.explain_fn = explain_fn or tf.function(model.explain)
        self.compiled = tf.function(lambda inputs: tf.cast(model.explain(inputs)["probabilities"], tf.float32),
                                    jit_compile=True) if self.xla_max_batch else None

    def plain(self, inputs):
        return tf.cast(self.explain_fn(inputs)["probabilities"], tf.float32)

    def pad(self, inputs):
        """Ids padded up to the grid's lengths and the batch up to a power of two (all-padding rows)."""
        batch = tf.shape(inputs["premise"])[0]
        rows = next_power_of_two(batch) - batch
        padded = {}
        for key in INPUT_NAMES:
            length = tf.shape(inputs[key])[1]
            columns = grid_length(length, self.boundaries[key]) - length
            padded[key] = tf.pad(inputs[key], [[0, rows], [0, columns]], constant_values=PAD_ID)
        return padded

    def chunked(self, inputs):
        """The probabilities of a batch run in length-sorted chunks of `chunk_size` pairs."""
        lengths = {key: tf.reduce_sum(tf.cast(tf.not_equal(inputs[key], PAD_ID), tf.int32), axis=1)
                   for key in INPUT_NAMES}
        batch = tf.shape(inputs["premise"])[0]
        key = lengths["premise"] * (tf.shape(inputs["hypothesis"])[1] + 1) + lengths["hypothesis"]
        order = tf.argsort(key, stable=True)
        ids = {name: tf.gather(inputs[name], order) for name in INPUT_NAMES}
        lengths = {name: tf.gather(lengths[name], order) for name in INPUT_NAMES}
        chunks = (batch + self.chunk_size - 1) // self.chunk_size

        def body(i, results):
            start = i * self.chunk_size
            stop = tf.minimum(start + self.chunk_size, batch)
            chunk = {name: ids[name][start:stop, :tf.maximum(1, tf.reduce_max(lengths[name][start:stop]))]
                     for name in INPUT_NAMES}
            return i + 1, results.write(i, self.plain(chunk))

        results = tf.TensorArray(tf.float32, size=chunks, infer_shape=False,
                                 element_shape=tf.TensorShape([None, self.model.num_classes]))
        _, results = tf.while_loop(lambda i, _: i < chunks, body, (tf.constant(0), results))
        return tf.gather(results.concat(), tf.math.invert_permutation(order))

    def probabilities(self, inputs):
        """float32 `[B, classes]` of padded token ids."""
        batch = tf.shape(inputs["premise"])[0]
        rest = self.plain
        if self.chunk_size:
            rest = lambda x: tf.cond(batch > self.chunk_size, lambda: self.chunked(x),  # noqa: E731
                                     lambda: self.plain(x))
        if not self.xla_max_batch:
            return rest(inputs)
        return tf.cond(batch <= self.xla_max_batch, lambda: self.compiled(self.pad(inputs))[:batch],
                       lambda: rest(inputs))


def same_batch(texts):
    """`texts` once every input has as many rows as `premise`; otherwise the request fails with an assertion
    naming the field (TF Serving answers with it) instead of an op's shape error deep in the graph."""
    rows = tf.shape(texts["premise"])[0]
    checks = [tf.debugging.assert_equal(tf.shape(value)[0], rows, message=f"{name} must have as many rows as "
                                        "premise (one per pair)") for name, value in texts.items() if name != "premise"]
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in texts.items()}


def _serving_outputs(outputs, labels):
    """Probabilities, label and label id from the model's `explain()` outputs (all float maps float32)."""
    outputs = {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in outputs.items()}
    label_id = tf.argmax(outputs["probabilities"], axis=-1, output_type=tf.int32)
    outputs["label_id"] = label_id
    outputs["label"] = tf.gather(tf.constant(list(labels), dtype=tf.string), label_id)
    return outputs


def build_archive(run, xla_max_batch=0, chunk_size=0):
    """The `keras.export.ExportArchive` of a run with its `serving_default` and `explain` endpoints.

    Args:
        run: a `zoo.runs.Run` (see `zoo.load`).
        xla_max_batch: run `serving_default` batches up to this size through XLA (0: never).
        chunk_size: run larger `serving_default` batches sorted by length in chunks of this many pairs (0:
            whole); models that read parse trees always run whole.

    Returns:
        the archive (call `.write_out(path)`).

    Raises:
        ExportError: XLA asked for a model that reads parse trees.
    """
    model, labels = run.model, run.labels
    encoder = InGraphEncoder(run.tokenizer, os.path.abspath(os.path.join(run.run_dir, VOCAB_FILE)),
                             len(run.vocab), max_lengths(run.config))
    names = input_names(model)
    spec = [tf.TensorSpec([None], tf.string, name=name) for name in names]
    # traced once for [B, Lp], [B, Lh] ids, called by both signatures; bi-LSTMs on packed sequences on a CPU
    # (no work on padding: zoo.layers.recurrent.packed_inference); the XLA path traces the model apart
    model_explain = tf.function(packed_inference(model.explain))

    def explain_outputs(texts):
        texts = same_batch(texts)
        inputs, outputs = {}, {}
        for key in INPUT_NAMES:
            inputs[key], outputs[f"{key}_tokens"], all_tokens = encoder.encode(texts[key], key)
            if model.reads_parse_trees:
                inputs[f"{key}_tree"] = parse_tree_input(
                    texts[f"{key}_binary_parse"], inputs[key], all_tokens, f"{key}_binary_parse", run.tokenizer,
                    encoder.max_lengths.get(key), model.max_depth)
        outputs.update(_serving_outputs(model_explain(inputs), labels))
        return outputs

    @tf.function(input_signature=spec)
    def explain(*texts):  # the signature's inputs are named by `spec`
        return explain_outputs(dict(zip(names, texts)))

    def serve(*texts):
        outputs = explain(*texts)  # one trace of the model serves both signatures
        return {name: outputs[name] for name in SERVING_OUTPUTS}

    fast = None
    if (xla_max_batch or chunk_size) and not model.reads_parse_trees:
        fast = ServingModel(model, length_boundaries(run.config), xla_max_batch, chunk_size, model_explain)

        def serve(*texts):  # noqa: F811 (serving_default through XLA and / or sorted chunks)
            texts = same_batch(dict(zip(names, texts)))
            inputs = {key: encoder.encode(texts[key], key)[0] for key in INPUT_NAMES}
            outputs = _serving_outputs({"probabilities": fast.probabilities(inputs)}, labels)
            return {name: outputs[name] for name in SERVING_OUTPUTS}
    elif xla_max_batch:
        raise ExportError(f"--xla-max-batch: {run.config['model']} reads parse trees, which the XLA path "
                          "does not pad; export it without XLA")

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(encoder.table)
    archive.add_endpoint("serving_default", serve, input_signature=spec)
    archive.add_endpoint(EXPLAIN_SIGNATURE, explain)
    _save_each_variable_once(archive)
    archive.encoder = encoder  # keeps the asset alive until write_out
    if fast is not None:
        archive.fast = fast
    return archive


def _save_each_variable_once(archive):
    """Lists the archive's tracked variables as the `tf.Variable`s the endpoints capture.

    `track()` lists the Keras variables, and writing the archive lists the `tf.Variable`s its functions
    capture (`_all_variables`); the checkpoint then holds every weight twice (an ESIM with a 40,000-word
    table: 94 MB of variables instead of 47). With the same objects in both lists each is saved once, and
    `loaded.variables` still lists the weights.
    """
    trackable = getattr(archive, "_tf_trackable", None)
    for name in ("variables", "trainable_variables", "non_trainable_variables"):
        if trackable is not None and hasattr(trackable, name):
            setattr(trackable, name, [getattr(v, "value", v) for v in getattr(trackable, name)])


def write_metadata(saved_model_dir, run, extra=None):
    """Writes `assets.extra/zoo.json` (model name, labels, tokenizer, truncation, run directory, and `extra`):
    files in `assets.extra/` ride along with a SavedModel without being part of the graph."""
    metadata = {"model": run.config["model"], "labels": list(run.labels), "tokenizer": run.tokenizer.get_config(),
                "max_lengths": max_lengths(run.config), "run_dir": os.path.abspath(run.run_dir), **(extra or {})}
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


def export_saved_model(run, model_dir, version=None, serving_files=True, batch_sizes=None, base_path=None,
                       stable_version=None, xla_max_batch=0, model_name=None, chunk_size=DEFAULT_CHUNK_SIZE):
    """Writes the run's SavedModel into the TF Serving layout `model_dir/N/`, with TF Serving's files.

    The SavedModel (with its warm-up requests) is written to a temporary directory beside it and renamed
    into place, so that a server watching `model_dir` never sees a half-written version; then
    `batching_parameters.txt` and `models.config` are (re)written in `model_dir`
    (`zoo.export.serving_files`).

    Args:
        run: a `zoo.runs.Run`.
        model_dir: `MODELS/NAME`.
        version: the version number (default: the next free one).
        serving_files: write the warm-up requests, `batching_parameters.txt` and `models.config`.
        batch_sizes: TF Serving's allowed batch sizes (default `serving_files.DEFAULT_BATCH_SIZES`), which
            the warm-up requests cover.
        base_path: the model folder as TF Serving sees it (default `/models/<folder name>`).
        stable_version: the version labelled `stable` in `models.config` (default: the previous highest;
            the new version is the `canary`).
        xla_max_batch: run `serving_default` batches of up to this many pairs through XLA (0: never).
        chunk_size: run larger `serving_default` batches sorted by sentence length in chunks of this many
            pairs (0: whole batches).
        model_name: the served name (default: the folder name of `model_dir`).

    Returns:
        the version directory written.

    Raises:
        ExportError: existing version, a stable version that does not exist, too many warm-up requests.
    """
    from zoo.export import serving_files as files

    path = version_dir(model_dir, version)
    batch_sizes = tuple(sorted(set(int(b) for b in (batch_sizes or files.DEFAULT_BATCH_SIZES))))
    if batch_sizes[0] < 1:
        raise ExportError(f"batch sizes must be positive, got {batch_sizes}")
    model_name = model_name or os.path.basename(os.path.normpath(model_dir))
    if stable_version is not None and int(stable_version) not in files.existing_versions(model_dir):
        raise ExportError(f"--stable-version {stable_version} is not a version under {model_dir}")
    archive = build_archive(run, xla_max_batch, chunk_size)
    os.makedirs(model_dir, exist_ok=True)
    # a killed export's folder (`.N.tmp-PID...`, its process gone) is removed; this one is renamed into place
    # whole, so TF Serving never sees a half-written version
    fileio.clean_stale_temporaries(model_dir, on_remove=lambda p: print(f"[export] removed {p}, left by an "
                                                                        "interrupted export", flush=True))
    tmp = fileio.temporary_name(path)
    try:
        archive.write_out(tmp, verbose=False)
        write_metadata(tmp, run, {"xla_max_batch": int(xla_max_batch), "chunk_size": int(chunk_size)})
        if serving_files:
            classes = files.length_classes(run.config)
            try:
                records = files.warmup_records(model_name, input_names(run.model),
                                               files.filler_words(run.vocab, run.tokenizer), classes, batch_sizes)
            except ValueError as error:
                raise ExportError(str(error)) from None
            files.write_warmup(tmp, records)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
    if serving_files:
        specs = [tf.TensorSpec([None], tf.string)] * len(input_names(run.model))
        files.write_model_files(model_dir, model_name, int(os.path.basename(path)), base_path=base_path,
                                stable=stable_version, batch_sizes=batch_sizes,
                                pad_variable_length_inputs=files.needs_padding(specs))
    return path
