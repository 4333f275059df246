"""TFLite (LiteRT) export: token ids in, probabilities out, and `TFLiteNLI` to run it from raw text.

TFLite has no builtin ops to split strings, so the `.tflite` model takes token ids; `TFLiteNLI`
tokenizes with the run's `Tokenizer`, looks the tokens up in the shipped `vocab.txt` and runs the
LiteRT interpreter. The graph has a fixed shape so that the recurrent loops lower to TFLite builtin
ops (`WHILE` with static tensor lists): `batch_size` pairs per invocation (default 1; `TFLiteNLI`
pads the last chunk with empty rows) and sentences right-padded to the preset's
`max_premise_length` / `max_hypothesis_length` (the training truncation). The models mask padding,
so the padded length does not change the probabilities. A model that reads parse trees takes their
tree arrays as two more inputs, which `TFLiteNLI` builds from the pairs' binary parses in Python
(`zoo.data.trees.pair_tree_inputs`; a blank parse gets the complete binary tree), since parsing
strings needs ops TFLite does not have.

Files written into the output directory:
```
OUT/model.tflite   # inputs premise, hypothesis int32 [batch_size, L]; output probabilities float32 [batch_size, 3]
                   # (+ premise_tree, hypothesis_tree int32 [batch_size, 2L - 1, 3] for syntactic tree models)
                   # (+ the attention maps, float32, for TFLiteNLI.explain)
OUT/vocab.txt      # the exported vocabulary (line number = id)
OUT/tflite.json    # model name, tokenizer config, labels, batch size, padded lengths, inputs, outputs
OUT/metadata.json  # quantization, vocabulary cut, size, accuracy on the run's test split against the float model
OUT/manifest.json  # the SHA-256 of the four files above, written last
```
The folder is written whole: built beside `OUT` (`.NAME.tmp-PID-...`), checked there, then renamed into
place (an existing `OUT` set aside first and removed after, `zoo.fileio.publish_folder`), under the run's
lock and the folder's lock (`.NAME.lock` beside it): a kill leaves the old export or the new one, and a
second export into `OUT` at the same time is refused. An existing export is swapped with the new one in one
step where the system can (`zoo.fileio.exchange`), so a kill never leaves `OUT` without an export.
`manifest.json` records the SHA-256 of the other four files (and `tflite.json` that of `model.tflite` and
`vocab.txt`), so `TFLiteNLI` refuses, in one line, files that do not belong together or changed since.

Fitting a device: `max_vocabulary` keeps the run's first N ids (its training words first, most frequent
first; `zoo.export.vocabulary`), the other words reading as [UNK]; `quantize` applies the converter's
post-training quantization: `"dynamic-range"` (`tf.lite.Optimize.DEFAULT`: int8 weights, float
activations) or `"float16"` (`Optimize.DEFAULT` with `target_spec.supported_types = [tf.float16]`).
`check_accuracy` scores the written model on the run's test split beside the run's float Keras model
(what the SavedModel answers, within 1e-5) and records the difference in `metadata.json`.

Example:
```python
from zoo.export.tflite import TFLiteNLI, export_tflite
export_tflite(zoo.load("runs/bowman_lstm"), "models/bowman_lstm_tflite")
TFLiteNLI("models/bowman_lstm_tflite").predict([("A man plays.", "A person plays.")])
```
"""

import hashlib
import json
import logging
import os
import tempfile

import numpy as np
import tensorflow as tf

from zoo import fileio
from zoo.data.corpora import by_role, load_corpus
from zoo.export.archive import ServingArchive
from zoo.export.exporting import ExportError, exporting
from zoo.export.saved_model import INPUT_NAMES, max_lengths
from zoo.export.tflite_nli import MANIFEST_FILE, METADATA_FILE, MODEL_FILE, TFLiteNLI, sha256_of
from zoo.export.vocabulary import changed_tokens, cut_vocabulary
from zoo.registry import get_spec
from zoo.runs.layout import VOCAB_FILE
from zoo.runs.record import DataSource

logger = logging.getLogger(__name__)

REPORT_FILE = "metadata.json"
QUANTIZATIONS = ("none", "dynamic-range", "float16")
ACCURACY_TARGET_POINTS = 0.5  # the largest accepted accuracy drop of a variant, in points


def _fixed_lengths(data):
    """The padded lengths of the TFLite inputs: the preset's maximum lengths.

    Raises:
        ExportError: when the preset does not truncate a side (no fixed length to pad to).
    """
    lengths = max_lengths(data)
    missing = [key for key, value in lengths.items() if not value]
    if missing:
        raise ExportError(f"the preset has no max_{missing[0]}_length; TFLite needs a fixed padded length "
                          f"(train with --set max_{missing[0]}_length=N)")
    return {key: int(value) for key, value in lengths.items()}


def input_shapes(model, batch_size, lengths):
    """`{name: shape}` of the TFLite inputs: the token ids, and the tree arrays for a model that reads
    parse trees (`premise_tree` int32 `[batch_size, 2Lp - 1, 3]`, ...; `TFLiteNLI` builds them)."""
    shapes = {name: [batch_size, lengths[name]] for name in INPUT_NAMES}
    if model.reads_parse_trees:
        shapes.update({f"{name}_tree": [batch_size, 2 * lengths[name] - 1, 3] for name in INPUT_NAMES})
    return shapes


def map_outputs(run):
    """The attention maps the TFLite model returns beside the probabilities (for `TFLiteNLI.explain`): the
    model's registered maps, and the element masks of models that attend over tree nodes."""
    names = list(get_spec(run.record.model).attention)
    if names and run.record.model in _MASKED_MAP_MODELS:
        names += ["premise_mask", "hypothesis_mask"]
    return names


# Models whose maps are over tree nodes or elements, with masks `premise_mask` / `hypothesis_mask` in explain().
_MASKED_MAP_MODELS = ("esim_tree", "him", "paria_bilstm", "paria_btree", "syntactic_tree_lstm")


def convert(run, batch_size=1, quantize="none", maps=True):
    """Converts a run's model to a TFLite flatbuffer with builtin ops only.

    The model goes through a SavedModel (`zoo.export.archive`; the converter freezes the variables
    read inside the recurrent loops) and `tf.lite.TFLiteConverter.from_saved_model`.

    Args:
        run: a `zoo.runs.Run`.
        batch_size: the fixed number of pairs per invocation.
        quantize: `"none"`, `"dynamic-range"` (int8 weights) or `"float16"` (float16 weights).
        maps: also return the attention maps (`map_outputs`).

    Returns:
        `(flatbuffer bytes, lengths, outputs)` with `lengths = {"premise": Lp, "hypothesis": Lh}` and
        `outputs = {name: shape}`.

    Raises:
        ExportError: a bad batch size or quantization, no fixed length, or a conversion failure.
    """
    if batch_size < 1:
        raise ExportError(f"the TFLite batch size must be positive, got {batch_size}")
    quantize = quantize or "none"
    if quantize not in QUANTIZATIONS:
        raise ExportError(f"--quantize must be one of {', '.join(QUANTIZATIONS)}, got {quantize!r}")
    lengths = _fixed_lengths(run.settings.data)
    model = run.model
    shapes = input_shapes(model, batch_size, lengths)
    spec = [tf.TensorSpec(shape, tf.int32, name=name) for name, shape in shapes.items()]
    names = ["probabilities"] + (map_outputs(run) if maps else [])

    output_shapes = {}

    def serve(*inputs):
        outputs = model.explain(dict(zip(shapes, inputs)), xla=True)  # fixed shapes: no packed loop
        outputs = {name: tf.cast(outputs[name], tf.float32) for name in names if name in outputs}
        # the shapes, read when the save traces this (its one trace: zoo.export.archive)
        output_shapes.update({name: list(value.shape) for name, value in outputs.items()})
        return outputs

    archive = ServingArchive(model)
    archive.add_endpoint("serving_default", serve, input_signature=spec)
    with tempfile.TemporaryDirectory() as saved_model_dir:
        archive.write_out(saved_model_dir)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        try:
            return converter.convert(), lengths, output_shapes
        except Exception as error:  # the converter raises ConverterError with an MLIR trace
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ExportError(f"TFLite conversion of {run.record.model!r} failed: {first}") from error


EXPORT_FILES = (MODEL_FILE, VOCAB_FILE, METADATA_FILE, REPORT_FILE, MANIFEST_FILE)


def export_tflite(run, out_dir, batch_size=1, overwrite=False, max_vocabulary=None, quantize="none",
                  test_examples=None, log=None):
    """Writes `model.tflite`, `vocab.txt`, `tflite.json`, `metadata.json` and `manifest.json` into `out_dir`, whole.

    Args:
        run: a `zoo.runs.Run`.
        out_dir: the output directory.
        batch_size: the fixed number of pairs per invocation.
        overwrite: replace an existing export.
        max_vocabulary: keep only the run's first N ids (`zoo.export.vocabulary.cut_vocabulary`).
        quantize: `"none"`, `"dynamic-range"` or `"float16"`.
        test_examples: labelled examples (dicts with `premise`, `hypothesis`, `label`) to check the
            written model's accuracy on against the run's float model (`check_accuracy`); None: no check.
        log: a function printing progress lines (default: none).

    Returns:
        the path of `model.tflite` (the report is in `metadata.json` beside it, `read_report`).

    Raises:
        ExportError: existing output, a folder holding other files, no fixed length, a conversion failure,
            the run or the folder in use by another process.
    """
    log = log or logger.info
    path = os.path.join(out_dir, MODEL_FILE)
    with exporting(run.run_dir, out_dir, what="TFLite export folder", lock_file=fileio.sibling_lock_file(out_dir)):
        fileio.recover_folder(out_dir, on_notice=log)
        _check_target(out_dir, overwrite)
        exported, vocabulary = cut_vocabulary(run, max_vocabulary)
        report = {"model": run.record.model, "quantize": quantize or "none", "batch_size": int(batch_size),
                  "vocabulary": dict(vocabulary, run_size=len(run.vocab))}
        if test_examples is not None:
            report["vocabulary"]["test_tokens"] = changed_tokens(run.tokenizer, run.vocab, exported.vocab,
                                                                 test_examples, max_lengths(run.settings.data))
        if vocabulary["cut"]:
            log(_cut_line(run, vocabulary, report))
        flatbuffer, lengths, outputs = convert(exported, batch_size, quantize)
        staged = fileio.staging_folder(out_dir)
        try:
            _write_files(staged, run, exported, flatbuffer, lengths, outputs, batch_size, quantize, report,
                         test_examples, log)
            log(f"{path}: {len(flatbuffer) / 1e6:.2f} MB ({report['quantize']})")
            fileio.publish_folder(staged, out_dir, overwrite=overwrite, fault_step="export:tflite")
        except BaseException:
            fileio.atomic.remove(staged)
            raise
    return path


def _check_target(out_dir, overwrite):
    """Refuses an existing export without `overwrite`, and a folder holding anything but an export's files
    (it is replaced whole)."""
    try:
        present = sorted(name for name in os.listdir(out_dir) if not name.startswith("."))
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise ExportError(f"{out_dir} is a file: --out must be a folder") from None
    others = [name for name in present if name not in EXPORT_FILES]
    if others:
        raise ExportError(f"{out_dir} holds files other than a TFLite export ({', '.join(others[:3])}); it would be "
                          "replaced whole: choose another --out")
    if present and not overwrite:
        what = (f"{os.path.join(out_dir, MODEL_FILE)} already exists" if MODEL_FILE in present
                else f"{out_dir} holds an incomplete TFLite export ({', '.join(present)})")
        raise ExportError(f"{what}; pass --overwrite to replace it, or choose another --out")


def _cut_line(run, vocabulary, report):
    line = (f"vocabulary: kept the first {vocabulary['kept']:,} of {len(run.vocab):,} ids"
            + (f" (training words: {vocabulary['training_words']:,}, {vocabulary['training_words_cut']:,} of "
               f"them cut)" if vocabulary["training_words"] is not None else ""))
    if "test_tokens" in report["vocabulary"]:
        tokens = report["vocabulary"]["test_tokens"]
        line += f"; test tokens now [UNK]: {tokens['changed']:,} of {tokens['tokens']:,}"
    return line


def _write_files(folder, run, exported, flatbuffer, lengths, outputs, batch_size, quantize, report, test_examples,
                 log):
    """Writes the export's four files into the staging `folder` (kill hooks between the writes) and checks
    the accuracy of the written model there."""
    vocab_path = os.path.join(folder, VOCAB_FILE)
    exported.vocab.save(vocab_path)
    fileio.fault_point("export:tflite:vocab-written")
    metadata = {"model": run.record.model, "tokenizer": run.tokenizer.get_config(),
                "labels": list(run.labels), "batch_size": int(batch_size),
                "max_depth": run.model.max_depth if run.model.reads_parse_trees else None,
                "max_premise_length": lengths["premise"], "max_hypothesis_length": lengths["hypothesis"],
                "quantize": quantize or "none", "vocabulary_size": len(exported.vocab),
                "sha256": {MODEL_FILE: hashlib.sha256(flatbuffer).hexdigest(), VOCAB_FILE: sha256_of(vocab_path)},
                "manifest": MANIFEST_FILE,
                "inputs": {name: {"dtype": "int32", "shape": shape}
                           for name, shape in input_shapes(run.model, batch_size, lengths).items()},
                "outputs": {name: {"dtype": "float32", "shape": shape} for name, shape in outputs.items()}}
    fileio.write_json(os.path.join(folder, METADATA_FILE), metadata)
    fileio.fault_point("export:tflite:tflite-json-written")
    with fileio.atomic_write(os.path.join(folder, MODEL_FILE), "wb") as f:
        f.write(flatbuffer)
    fileio.fault_point("export:tflite:model-written")
    report["size_bytes"] = len(flatbuffer)
    if test_examples is not None:
        report["accuracy"] = check_accuracy(run, TFLiteNLI(folder, staged=True), test_examples)
        accuracy = report["accuracy"]
        log(f"test accuracy ({accuracy['examples']} pairs): float model {accuracy['reference']:.2%}, this export "
            f"{accuracy['tflite']:.2%}, difference {accuracy['difference_points']:+.2f} points "
            f"({'within' if accuracy['within_target'] else 'BEYOND'} the {ACCURACY_TARGET_POINTS} point target); "
            f"same label on {accuracy['agreement']:.2%} of the pairs, probabilities within "
            f"{accuracy['max_probability_difference']:.1e}")
    fileio.write_json(os.path.join(folder, REPORT_FILE), report)
    fileio.write_manifest(folder, [MODEL_FILE, VOCAB_FILE, METADATA_FILE, REPORT_FILE],
                          os.path.join(folder, MANIFEST_FILE))
    fileio.fault_point("export:tflite:staged")


def read_report(path):
    """The `metadata.json` of a TFLite export (its directory or its `model.tflite`)."""
    directory = os.path.dirname(path) if path.endswith(".tflite") else path
    with open(os.path.join(directory, REPORT_FILE), encoding="utf-8") as f:
        return json.load(f)


def test_examples_of(run, source=None):
    """The labelled test split of the run's data (its record's `DataSource`), or of `source` (a corpus name
    or path).

    Raises:
        ExportError: the data cannot be loaded or has no test split.
    """
    data = run.record.data if source is None else DataSource(source=source)
    if data is None or not data.source:
        raise ExportError("the run does not name its data; give --test-data")
    try:
        splits, report = load_corpus(data.source, fields=data.fields, labels=data.labels, roles=data.roles)
        return by_role(splits, report, required=("test",))["test"]
    except Exception as error:  # unreachable download, missing files, no test split
        raise ExportError(f"cannot load the test split of {data.source!r} for the accuracy check: {error} "
                          "(give --test-data, or --no-accuracy-check)") from None


def check_accuracy(run, nli, examples):
    """Accuracy of the exported model beside the run's float Keras model on labelled examples.

    Args:
        run: the `zoo.runs.Run` (full vocabulary, float32).
        nli: a `TFLiteNLI` of the exported model.
        examples: dicts with `premise`, `hypothesis`, `label` (and parses).

    Returns:
        `{"examples", "reference", "tflite", "difference_points", "agreement", "within_target",
        "max_probability_difference"}` (accuracies as fractions; the difference in points, export minus
        float; the largest absolute difference of one class probability over the examples).
    """
    pairs = [(e["premise"], e["hypothesis"], e.get("premise_binary_parse", ""), e.get("hypothesis_binary_parse", ""))
             for e in examples]
    gold = np.asarray([e["label"] for e in examples])
    reference_probabilities = run.predict_probabilities(pairs)
    exported_probabilities = nli.predict_probabilities(pairs)
    reference, exported = reference_probabilities.argmax(-1), exported_probabilities.argmax(-1)
    result = {"examples": len(pairs), "reference": float(np.mean(reference == gold)),
              "tflite": float(np.mean(exported == gold)), "agreement": float(np.mean(reference == exported))}
    result["difference_points"] = round(100 * (result["tflite"] - result["reference"]), 4)
    result["within_target"] = abs(result["difference_points"]) <= ACCURACY_TARGET_POINTS
    result["max_probability_difference"] = float(np.max(np.abs(exported_probabilities - reference_probabilities),
                                                        initial=0.0))
    return result
