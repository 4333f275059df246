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

Speed (`ServingModel`, see docs/speed.md): `serving_default` runs a batch of more
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

import logging
import os
import sys

import tensorflow as tf

from zoo import fileio
from zoo.data.tree_graph import PARSE_BLANK, tf_parse_error_check, tf_parse_trees
from zoo.data.vocab import PAD_ID, UNK_ID
from zoo.export import serving_files as files
from zoo.export.archive import ServingArchive
from zoo.export.exporting import ExportError, exporting
from zoo.export.loop_tuning import loop_for
from zoo.export.serving_graph import INPUT_NAMES, ServingModel, length_boundaries
from zoo.export.version_files import (  # noqa: F401
    MANIFEST_PATH,
    METADATA_PATH,
    read_metadata,
    verify_saved_model,
    write_manifest,
    write_metadata_file,
)
from zoo.layers.loop_choice import DEFAULT_DESIGN_REQUEST
from zoo.layers.recurrent import few_rows_loop
from zoo.layers.tree_lstm import complete_tree
from zoo.quiet import quieted
from zoo.runs.datasets import length_grid
from zoo.runs.layout import VOCAB_FILE

logger = logging.getLogger(__name__)


PARSE_INPUT_NAMES = ("premise_binary_parse", "hypothesis_binary_parse")
SERVING_OUTPUTS = ("probabilities", "label", "label_id")
EXPLAIN_SIGNATURE = "explain"
DEFAULT_CHUNK_SIZE = 32  # serving_default: larger batches run length-sorted in chunks of this many pairs


def input_names(model):
    """The string inputs of the exported signatures: the sentences, and the parses for a model that reads them."""
    return INPUT_NAMES + (PARSE_INPUT_NAMES if model.reads_parse_trees else ())


def next_version(model_dir):
    """The next free TF Serving version number under `model_dir` (1 when there is none;
    `zoo.fileio.version_numbers`)."""
    return 1 + (fileio.latest_version(model_dir) or 0)


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
    parsed, status = tf_parse_trees(parses, all_tokens, tf.shape(ids)[1], lowercase=tokenizer.lowercase,
                                    max_length=max_length, max_depth=max_depth)
    complete = complete_tree(tf.not_equal(ids, PAD_ID), max_depth)
    trees = tf.where(tf.reshape(tf.equal(status, PARSE_BLANK), [-1, 1, 1]), complete, parsed)
    with tf.control_dependencies([tf_parse_error_check(status, field)]):
        return tf.identity(trees)


def _at_least_one_column(x, value):
    return tf.pad(x, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(x)[1])]], constant_values=value)


def max_lengths(data):
    """The truncation lengths of a run's `DataSettings`: `{"premise": n, "hypothesis": n}` (None = no truncation)."""
    return {"premise": data.max_premise_length, "hypothesis": data.max_hypothesis_length}


MAX_REQUEST_PAIRS = 65_536  # pairs of one request (zoo.settings.values.MAX_BATCH_SIZE): more are several requests


def checked_request(texts):
    """`texts` once the request is well formed, else the request fails with an assertion naming the field
    (TF Serving answers with it) instead of an op's shape error deep in the graph: every input a list of
    strings `[B]` (a scalar or a nested list is refused) of 1 to `MAX_REQUEST_PAIRS` rows, as many rows as
    `premise`, and valid UTF-8 (the first bad row named: `premise[3]: not valid UTF-8 text`)."""
    checks = []
    rows = {}
    for name, value in texts.items():
        # TF Serving feeds a request's tensor as it is, whatever the signature's shape: its first two
        # dimensions, -1 where it has none (a scalar has no first, a list of strings no second)
        dims = tf.concat([tf.shape(value), [-1, -1]], 0)
        rows[name] = tf.gather(dims, 0)
        checks.append(tf.debugging.assert_non_negative(rows[name], message=f"{name} must be a list of strings, one "
                                                       "per pair (a single pair is a list of one)"))
        checks.append(tf.debugging.assert_negative(tf.gather(dims, 1), message=f"{name} must be a list of strings, "
                                                   "one per pair, not a nested list (shape [B])"))
        checks.append(tf.debugging.assert_none_equal(rows[name], 0, message=f"{name} is an empty list: send at "
                                                     "least one pair"))
        too_many = f"{name} holds more than {MAX_REQUEST_PAIRS:,} pairs: send them in several requests"
        checks.append(tf.debugging.assert_less_equal(rows[name], MAX_REQUEST_PAIRS, message=too_many))
    with tf.control_dependencies(checks):
        checks = [tf.debugging.assert_equal(rows[name], rows["premise"], message=f"{name} must have as many rows as "
                                            "premise (one per pair)") for name in texts if name != "premise"]
    with tf.control_dependencies(checks):
        for name, value in texts.items():
            valid = tf.equal(tf.strings.unicode_transcode(value, "UTF-8", "UTF-8", errors="replace",
                                                          replacement_char=0xFFFD), value)
            row = tf.argmax(tf.cast(tf.logical_not(valid), tf.int32), output_type=tf.int32)
            message = tf.strings.join([name, "[", tf.strings.as_string(row), "]: not valid UTF-8 text"])
            checks.append(tf.debugging.Assert(tf.reduce_all(valid), [message]))
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in texts.items()}


def cut_notes(lengths, max_lengths_):
    """Per pair, what the model does not see: `{"tokens_cut": int32 [B] (tokens beyond the maximum lengths,
    both sentences), "empty_sentences": int32 [B] (0, 1 or 2 sentences without a token)}`, from the
    token counts `{"premise": [B], "hypothesis": [B]}` before truncation."""
    cut = empty = 0
    for key, length in lengths.items():
        limit = max_lengths_.get(key)
        if limit is not None:
            cut += tf.maximum(0, tf.cast(length, tf.int32) - limit)
        empty += tf.cast(tf.equal(length, 0), tf.int32)
    return {"tokens_cut": tf.zeros_like(tf.cast(lengths["premise"], tf.int32)) + cut, "empty_sentences": empty}


# The line `log_cut_notes` prints, as a regular expression.
CUT_NOTES_LINE = r"\[nli-zoo\] \d+ of \d+ pairs cut to .* tokens \(\d+ tokens dropped\); \d+ empty sentences"


def without_cut_notes():
    """A context in which the SavedModel's line about cut pairs and empty sentences (`log_cut_notes`, meant for
    a server's log) is kept off stderr: for a client that reports the same counts in its own words
    (`nli-zoo predict`, `evaluate`), so that one fact is one line."""
    return quieted(also=(CUT_NOTES_LINE,))


def log_cut_notes(notes, max_lengths_):
    """An op printing one line to the server's log (stderr) when some pair of the request was cut or has an
    empty sentence: `[nli-zoo] 2 of 8 pairs cut to 100/100 tokens (37 tokens dropped); 1 empty sentences`."""
    cut_pairs = tf.reduce_sum(tf.cast(notes["tokens_cut"] > 0, tf.int32))
    empty = tf.reduce_sum(notes["empty_sentences"])
    limits = f"{max_lengths_.get('premise')}/{max_lengths_.get('hypothesis')}"

    def log():
        line = tf.strings.format("[nli-zoo] {} of {} pairs cut to " + limits + " tokens ({} tokens dropped); {} "
                                 "empty sentences", (cut_pairs, tf.size(notes["tokens_cut"]),
                                                     tf.reduce_sum(notes["tokens_cut"]), empty))
        tf.print(line, output_stream=sys.stderr)
        return tf.constant(True)

    return tf.cond(tf.logical_or(cut_pairs > 0, empty > 0), log, lambda: tf.constant(False))


def _serving_outputs(outputs, labels):
    """Probabilities, label and label id from the model's `explain()` outputs (all float maps float32)."""
    outputs = {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in outputs.items()}
    label_id = tf.argmax(outputs["probabilities"], axis=-1, output_type=tf.int32)
    outputs["label_id"] = label_id
    outputs["label"] = tf.gather(tf.constant(list(labels), dtype=tf.string), label_id)
    return outputs


def build_archive(run, xla_max_batch=0, chunk_size=0):
    """The `zoo.export.archive.ServingArchive` of a run with its `serving_default` and `explain` endpoints.

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
                             len(run.vocab), max_lengths(run.settings.data))
    names = input_names(model)
    spec = [tf.TensorSpec([None], tf.string, name=name) for name in names]
    # traced once for [B, Lp], [B, Lh] ids, called by both signatures; bi-LSTMs on packed sequences on a CPU
    # (no work on padding: zoo.layers.loop_choice); the XLA path traces the model apart
    model_explain = tf.function(model.explain, autograph=False)

    def explain_outputs(texts):
        texts = checked_request(texts)
        inputs, outputs, lengths = {}, {}, {}
        for key in INPUT_NAMES:
            inputs[key], outputs[f"{key}_tokens"], all_tokens = encoder.encode(texts[key], key)
            lengths[key] = all_tokens.row_lengths()
            if model.reads_parse_trees:
                inputs[f"{key}_tree"] = parse_tree_input(
                    texts[f"{key}_binary_parse"], inputs[key], all_tokens, f"{key}_binary_parse", run.tokenizer,
                    encoder.max_lengths.get(key), model.max_depth)
        outputs.update(_serving_outputs(model_explain(inputs), labels))
        outputs.update(cut_notes(lengths, encoder.max_lengths))
        return outputs

    @tf.function(input_signature=spec, autograph=False)
    def explain(*texts):  # the signature's inputs are named by `spec`
        return explain_outputs(dict(zip(names, texts)))

    def serve(*texts):
        outputs = explain(*texts)  # one trace of the model serves both signatures
        with tf.control_dependencies([log_cut_notes(outputs, encoder.max_lengths)]):
            return {name: tf.identity(outputs[name]) for name in SERVING_OUTPUTS}

    fast = None
    if (xla_max_batch or chunk_size) and not model.reads_parse_trees:
        fast = ServingModel(model, length_boundaries(length_grid(run.settings.data)), xla_max_batch, chunk_size,
                            model_explain)

        def serve(*texts):  # noqa: F811 (serving_default through XLA and / or sorted chunks)
            texts = checked_request(dict(zip(names, texts)))
            inputs, lengths = {}, {}
            for key in INPUT_NAMES:
                inputs[key], _, all_tokens = encoder.encode(texts[key], key)
                lengths[key] = all_tokens.row_lengths()
            outputs = _serving_outputs({"probabilities": fast.probabilities(inputs)}, labels)
            with tf.control_dependencies([log_cut_notes(cut_notes(lengths, encoder.max_lengths), encoder.max_lengths)]):
                return {name: tf.identity(outputs[name]) for name in SERVING_OUTPUTS}
    elif xla_max_batch:
        raise ExportError(f"--xla-max-batch: {run.record.model} reads parse trees, which the XLA path "
                          "does not pad; export it without XLA")

    archive = ServingArchive(model)
    archive.track(encoder.table)
    archive.add_endpoint("serving_default", serve, input_signature=spec)
    archive.add_endpoint(EXPLAIN_SIGNATURE, explain)
    return archive


def write_metadata(saved_model_dir, run, extra=None):
    """Writes `assets.extra/zoo.json` (model name, labels, tokenizer, truncation, run directory, and `extra`):
    files in `assets.extra/` ride along with a SavedModel without being part of the graph. `"manifest"`
    says the version keeps `assets.extra/manifest.json` (`write_manifest`), so that a version without it is
    refused rather than read unchecked."""
    metadata = {"model": run.record.model, "labels": list(run.labels), "tokenizer": run.tokenizer.get_config(),
                "max_lengths": max_lengths(run.settings.data), "run_dir": os.path.abspath(run.run_dir),
                "manifest": MANIFEST_PATH, **(extra or {})}
    write_metadata_file(saved_model_dir, metadata)


def export_saved_model(run, model_dir, version=None, serving_files=True, batch_sizes=None, base_path=None,
                       stable_version=None, xla_max_batch=0, model_name=None, chunk_size=DEFAULT_CHUNK_SIZE,
                       log=None, loop=DEFAULT_DESIGN_REQUEST):
    """Writes the run's SavedModel into the TF Serving layout `model_dir/N/`, with TF Serving's files.

    Under the run's lock and the model folder's lock (`zoo.export.exporting`: a run that trains, or a second
    export into the folder, is refused in one line). The SavedModel (with its warm-up requests) is written
    to a temporary folder in `model_dir`, then the version is allocated (`zoo.fileio.allocate_version`) and
    the folder renamed onto it, so that a server watching `model_dir` never sees a half-written version;
    then `batching_parameters.txt` and `models.config` are (re)written in `model_dir`
    (`zoo.export.serving_files`). What a killed export left (its temporary folder, an empty version folder)
    is removed first.

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
        log: a function printing notices (what was cleaned up; default: print with `[export]`).
        loop: the few-rows loop of the bi-LSTMs at one pair (`zoo.export.loop_tuning.loop_for`): `"auto"`
            (this machine's `nli-zoo tune` choice, else the default), `"steps"` or `"kernel"`; the serving
            graph is traced under it, and `assets.extra/zoo.json` records it (`"loop"`).

    Returns:
        the version directory written.

    Raises:
        ExportError: existing version, a stable version that does not exist, too many warm-up requests, the
            run or the model folder in use.
        zoo.export.loop_tuning.TuningFileError: with `loop="auto"`, this machine's tuning record is damaged.
    """
    log = log or logger.info
    choice = loop_for(loop)
    if version is not None and int(version) < 1:
        raise ExportError(f"--version must be a positive integer, got {version}")
    batch_sizes = tuple(sorted(set(int(b) for b in (batch_sizes or files.DEFAULT_BATCH_SIZES))))
    if batch_sizes[0] < 1:
        raise ExportError(f"batch sizes must be positive, got {batch_sizes}")
    model_name = model_name or os.path.basename(os.path.normpath(model_dir))
    with exporting(run.run_dir, model_dir, what="export folder"):
        for path in fileio.remove_empty_versions(model_dir):
            log(f"removed {path}, an empty version folder left by an interrupted export")
        fileio.clean_stale_temporaries(model_dir, on_remove=lambda p: log(f"removed {p}, left by an interrupted "
                                                                          "export"))
        if version is not None and os.path.exists(os.path.join(model_dir, str(int(version)))):
            raise ExportError(f"{os.path.join(model_dir, str(int(version)))} already exists; choose another "
                              "--version or leave it out for the next free one")
        if stable_version is not None and int(stable_version) not in files.existing_versions(model_dir):
            raise ExportError(f"--stable-version {stable_version} is not a version under {model_dir}")
        logger.debug(f"few-rows loop: {choice.describe()}")
        with few_rows_loop(choice.design, choice.kernel_rows):  # read while the endpoints are traced (on write)
            archive = build_archive(run, xla_max_batch, chunk_size)
            path = _write_version(run, archive, model_dir, version, serving_files, batch_sizes, model_name,
                                  {"xla_max_batch": int(xla_max_batch), "chunk_size": int(chunk_size),
                                   "loop": choice.to_json()})
        if serving_files:
            specs = [tf.TensorSpec([None], tf.string)] * len(input_names(run.model))
            files.write_model_files(model_dir, model_name, int(os.path.basename(path)), base_path=base_path,
                                    stable=stable_version, batch_sizes=batch_sizes,
                                    pad_variable_length_inputs=files.needs_padding(specs))
    return path


def _write_version(run, archive, model_dir, version, serving_files, batch_sizes, model_name, extra):
    """Writes the SavedModel into a temporary folder of `model_dir`, then renames it onto a newly allocated
    version folder; on any failure nothing is left (the temporary folder and the reserved version removed)."""
    tmp = fileio.temporary_name(os.path.join(model_dir, "version"))
    path = None
    try:
        archive.write_out(tmp)
        fileio.fault_point("export:saved_model:graph-written")
        write_metadata(tmp, run, extra)
        if serving_files:
            classes = files.length_classes(length_grid(run.settings.data))
            try:
                records = files.warmup_records(model_name, input_names(run.model),
                                               files.filler_words(run.vocab, run.tokenizer), classes, batch_sizes)
            except ValueError as error:
                raise ExportError(str(error)) from None
            files.write_warmup(tmp, records)
        write_manifest(tmp)
        fileio.fault_point("export:saved_model:staged")
        try:
            path = os.path.join(model_dir, str(fileio.allocate_version(model_dir, version)))
        except fileio.VersionExistsError as error:
            raise ExportError(str(error)) from None
        fileio.fault_point("export:saved_model:version-reserved")
        fileio.publish_folder(tmp, path)
        fileio.fault_point("export:saved_model:version-in-place")
        return path
    except BaseException:
        fileio.atomic.remove(tmp)
        if path is not None and os.path.isdir(path) and not os.listdir(path):
            os.rmdir(path)
        raise
