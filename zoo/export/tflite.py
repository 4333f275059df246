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
```

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

import json
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from zoo import fileio
from zoo.constants import PAD_NODE
from zoo.data.vocab import PAD_ID
from zoo.export.saved_model import ExportError, INPUT_NAMES, max_lengths
from zoo.runs.layout import VOCAB_FILE

MODEL_FILE = "model.tflite"
METADATA_FILE = "tflite.json"
REPORT_FILE = "metadata.json"
QUANTIZATIONS = ("none", "dynamic-range", "float16")
ACCURACY_TARGET_POINTS = 0.5  # the largest accepted accuracy drop of a variant, in points


def _fixed_lengths(config):
    """The padded lengths of the TFLite inputs: the preset's maximum lengths.

    Raises:
        ExportError: when the preset does not truncate a side (no fixed length to pad to).
    """
    lengths = max_lengths(config)
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
    from zoo.registry import get_spec

    names = list(get_spec(run.config["model"]).attention)
    if names and run.config["model"] in _MASKED_MAP_MODELS:
        names += ["premise_mask", "hypothesis_mask"]
    return names


# Models whose maps are over tree nodes or elements, with masks `premise_mask` / `hypothesis_mask` in explain().
_MASKED_MAP_MODELS = ("esim_tree", "him", "paria_bilstm", "paria_btree", "syntactic_tree_lstm")


def convert(run, batch_size=1, quantize="none", maps=True):
    """Converts a run's model to a TFLite flatbuffer with builtin ops only.

    The model goes through a `keras.export.ExportArchive` SavedModel (which freezes the variables
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
    lengths = _fixed_lengths(run.config)
    model = run.model
    shapes = input_shapes(model, batch_size, lengths)
    spec = [tf.TensorSpec(shape, tf.int32, name=name) for name, shape in shapes.items()]
    names = ["probabilities"] + (map_outputs(run) if maps else [])

    def serve(*inputs):
        outputs = model.explain(dict(zip(shapes, inputs)))
        return {name: tf.cast(outputs[name], tf.float32) for name in names if name in outputs}

    output_shapes = {name: list(value.shape) for name, value in
                     tf.function(serve).get_concrete_function(*spec).structured_outputs.items()}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", serve, input_signature=spec)
    with tempfile.TemporaryDirectory() as saved_model_dir:
        archive.write_out(saved_model_dir, verbose=False)
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
            raise ExportError(f"TFLite conversion of {run.config['model']!r} failed: {first}") from error


def export_tflite(run, out_dir, batch_size=1, overwrite=False, max_vocabulary=None, quantize="none",
                  test_examples=None, log=None):
    """Writes `model.tflite`, `vocab.txt`, `tflite.json` and `metadata.json` into `out_dir`.

    Args:
        run: a `zoo.runs.Run`.
        out_dir: the output directory.
        batch_size: the fixed number of pairs per invocation.
        overwrite: replace an existing `model.tflite`.
        max_vocabulary: keep only the run's first N ids (`zoo.export.vocabulary.cut_vocabulary`).
        quantize: `"none"`, `"dynamic-range"` or `"float16"`.
        test_examples: labelled examples (dicts with `premise`, `hypothesis`, `label`) to check the
            written model's accuracy on against the run's float model (`check_accuracy`); None: no check.
        log: a function printing progress lines (default: none).

    Returns:
        the path of `model.tflite` (the report is in `metadata.json` beside it, `read_report`).

    Raises:
        ExportError: existing output, no fixed length or conversion failure.
    """
    from zoo.export.vocabulary import changed_tokens, cut_vocabulary

    log = log or (lambda line: None)
    path = os.path.join(out_dir, MODEL_FILE)
    if os.path.exists(path) and not overwrite:
        raise ExportError(f"{path} already exists; pass --overwrite to replace it, or choose another --out")
    exported, vocabulary = cut_vocabulary(run, max_vocabulary)
    report = {"model": run.config["model"], "quantize": quantize or "none", "batch_size": int(batch_size),
              "vocabulary": dict(vocabulary, run_size=len(run.vocab))}
    if test_examples is not None:
        report["vocabulary"]["test_tokens"] = changed_tokens(run.tokenizer, run.vocab, exported.vocab, test_examples,
                                                             max_lengths(run.config))
    if vocabulary["cut"]:
        line = (f"vocabulary: kept the first {vocabulary['kept']:,} of {len(run.vocab):,} ids"
                + (f" (training words: {vocabulary['training_words']:,}, {vocabulary['training_words_cut']:,} of "
                   f"them cut)" if vocabulary["training_words"] is not None else ""))
        if "test_tokens" in report["vocabulary"]:
            tokens = report["vocabulary"]["test_tokens"]
            line += f"; test tokens now [UNK]: {tokens['changed']:,} of {tokens['tokens']:,}"
        log(line)
    flatbuffer, lengths, outputs = convert(exported, batch_size, quantize)
    os.makedirs(out_dir, exist_ok=True)
    exported.vocab.save(os.path.join(out_dir, VOCAB_FILE))
    metadata = {"model": run.config["model"], "tokenizer": run.tokenizer.get_config(),
                "labels": list(run.labels), "batch_size": int(batch_size),
                "max_depth": run.model.max_depth if run.model.reads_parse_trees else None,
                "max_premise_length": lengths["premise"], "max_hypothesis_length": lengths["hypothesis"],
                "quantize": quantize or "none", "vocabulary_size": len(exported.vocab),
                "inputs": {name: {"dtype": "int32", "shape": shape}
                           for name, shape in input_shapes(run.model, batch_size, lengths).items()},
                "outputs": {name: {"dtype": "float32", "shape": shape} for name, shape in outputs.items()}}
    _write_json(os.path.join(out_dir, METADATA_FILE), metadata)
    with fileio.atomic_write(path, "wb") as f:
        f.write(flatbuffer)
    report["size_bytes"] = len(flatbuffer)
    log(f"{path}: {len(flatbuffer) / 1e6:.2f} MB ({report['quantize']})")
    if test_examples is not None:
        report["accuracy"] = check_accuracy(run, TFLiteNLI(out_dir), test_examples)
        accuracy = report["accuracy"]
        log(f"test accuracy ({accuracy['examples']} pairs): float model {accuracy['reference']:.2%}, this export "
            f"{accuracy['tflite']:.2%}, difference {accuracy['difference_points']:+.2f} points "
            f"({'within' if accuracy['within_target'] else 'BEYOND'} the {ACCURACY_TARGET_POINTS} point target); "
            f"same label on {accuracy['agreement']:.2%} of the pairs, probabilities within "
            f"{accuracy['max_probability_difference']:.1e}")
    _write_json(os.path.join(out_dir, REPORT_FILE), report)
    return path


def read_report(path):
    """The `metadata.json` of a TFLite export (its directory or its `model.tflite`)."""
    directory = os.path.dirname(path) if path.endswith(".tflite") else path
    with open(os.path.join(directory, REPORT_FILE), encoding="utf-8") as f:
        return json.load(f)


def _write_json(path, value):
    fileio.write_json(path, value)


def test_examples_of(run, source=None):
    """The labelled test split of the run's data (`config["data"]`), or of `source` (a corpus name or path).

    Raises:
        ExportError: the data cannot be loaded or has no test split.
    """
    from zoo.data.corpora import by_role, load_corpus

    data = run.config.get("data")
    options = data if isinstance(data, dict) else {"source": data}  # older runs name only the source
    if source is not None:
        options = {"source": source}
    if not options.get("source"):
        raise ExportError("the run does not name its data; give --test-data")
    try:
        splits, report = load_corpus(options["source"], fields=options.get("fields"), labels=options.get("labels"),
                                     roles=options.get("roles"))
        return by_role(splits, report, required=("test",))["test"]
    except Exception as error:  # unreachable download, missing files, no test split
        raise ExportError(f"cannot load the test split of {options['source']!r} for the accuracy check: {error} "
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


class TFLiteNLI:
    """Runs an exported `model.tflite` on raw sentence pairs with the LiteRT interpreter.

    Args:
        path: the export directory, or its `model.tflite`.
        num_threads: interpreter threads (None: LiteRT's default).

    Example:
    ```python
    nli = TFLiteNLI("models/bowman_lstm_tflite")
    nli.predict([("A man plays a guitar.", "A person makes music.")])
    # [{"label": ..., "probabilities": {"entailment": ..., "neutral": ..., "contradiction": ...}}]
    ```
    """

    def __init__(self, path, num_threads=None):
        from ai_edge_litert.interpreter import Interpreter

        from zoo.data.tokenizer import Tokenizer
        from zoo.data.vocab import Vocabulary

        directory = os.path.dirname(path) if path.endswith(".tflite") else path
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as f:
            self.metadata = json.load(f)
        self.labels = tuple(self.metadata["labels"])
        self.batch_size = int(self.metadata["batch_size"])
        self.lengths = {"premise": self.metadata["max_premise_length"],
                        "hypothesis": self.metadata["max_hypothesis_length"]}
        self.tokenizer = Tokenizer.from_config(self.metadata["tokenizer"])
        self.vocab = Vocabulary.load(os.path.join(directory, VOCAB_FILE))
        self.interpreter = Interpreter(model_path=os.path.join(directory, MODEL_FILE), num_threads=num_threads)
        self._runner = self.interpreter.get_signature_runner()

    def encode(self, pairs):
        """Inputs of `[(premise, hypothesis), ...]`, truncated and padded to the model's fixed lengths.

        For a model that reads parse trees, pairs may carry their parses as in `zoo.load(run).encode`
        (`(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)`; blank: complete tree).

        Returns:
            `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}`, plus `"premise_tree"` and
            `"hypothesis_tree"` when the model takes them.
        """
        from zoo.data.pipeline import encode_pairs

        pairs = [tuple(pair) for pair in pairs]
        ids = encode_pairs([pair[:2] for pair in pairs], self.vocab, self.tokenizer,
                           max_premise_length=self.lengths["premise"], max_hypothesis_length=self.lengths["hypothesis"])
        inputs = {key: np.pad(value, [[0, 0], [0, self.lengths[key] - value.shape[1]]],
                              constant_values=PAD_ID).astype(np.int32)
                  for key, value in ids.items()}
        if "premise_tree" in self.metadata["inputs"]:
            from zoo.data.trees import pair_tree_inputs

            inputs.update(pair_tree_inputs(pairs, self.tokenizer, self.lengths, self.lengths,
                                           max_depth=self.metadata.get("max_depth")))
        return inputs

    def run_batches(self, pairs, outputs=("probabilities",)):
        """`{name: float32 [N, ...]}` of the model's `outputs` for `pairs`, in batches of the fixed size."""
        pairs = list(pairs)
        ids = self.encode(pairs)
        chunks = {name: [] for name in outputs}
        for start in range(0, len(pairs), self.batch_size):
            batch = {key: value[start:start + self.batch_size] for key, value in ids.items()}
            rows = len(batch["premise"])
            batch = {key: np.pad(value, [[0, self.batch_size - rows]] + [[0, 0]] * (value.ndim - 1),
                                 constant_values=PAD_ID if value.ndim == 2 else PAD_NODE)
                     for key, value in batch.items()}
            result = self._runner(**batch)
            for name in outputs:
                chunks[name].append(result[name][:rows])
        return {name: np.concatenate(values).astype(np.float32) for name, values in chunks.items()}

    def predict_probabilities(self, pairs):
        """Class probabilities `float32 [N, 3]` of `[(premise, hypothesis), ...]`."""
        pairs = list(pairs)
        if not pairs:
            return np.zeros((0, len(self.labels)), np.float32)
        return self.run_batches(pairs)["probabilities"]

    def predict(self, pairs):
        """Labels of `[(premise, hypothesis), ...]`, as `zoo.load(run_dir).predict`.

        Returns:
            a list of `{"label": name, "probabilities": {name: float}}`.
        """
        return [{"label": self.labels[int(np.argmax(p))],
                 "probabilities": {name: float(v) for name, v in zip(self.labels, p)}}
                for p in self.predict_probabilities(pairs)]

    @property
    def map_names(self):
        """The attention maps (and their element masks) the model returns beside the probabilities."""
        return [name for name in self.metadata["outputs"] if name != "probabilities"]

    def explain_outputs(self, pair):
        """The model's outputs for one pair, `{name: float32 array}` without the batch axis (maps padded to
        the fixed lengths), and the tokens it saw `(premise_tokens, hypothesis_tokens)`."""
        pair = tuple(pair)
        outputs = {name: value[0] for name, value in self.run_batches([pair], ["probabilities"] + self.map_names).items()}
        tokens = [self.tokenizer.tokenize(pair[i])[:self.lengths[key]] for i, key in enumerate(("premise", "hypothesis"))]
        return outputs, tokens
