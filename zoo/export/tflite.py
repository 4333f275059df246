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
OUT/vocab.txt      # the run's vocabulary (line number = id)
OUT/tflite.json    # model name, tokenizer config, labels, batch size, padded lengths
```

Example:
```python
from zoo.export.tflite import TFLiteNLI, export_tflite
export_tflite(zoo.load("runs/bowman_lstm"), "models/bowman_lstm_tflite")
TFLiteNLI("models/bowman_lstm_tflite").predict([("A man plays.", "A person plays.")])
```
"""

import json
import os
import shutil
import tempfile

import keras
import numpy as np
import tensorflow as tf

from zoo.constants import PAD_NODE
from zoo.data.vocab import PAD_ID
from zoo.export.saved_model import ExportError, INPUT_NAMES, max_lengths
from zoo.runs.layout import VOCAB_FILE

MODEL_FILE = "model.tflite"
METADATA_FILE = "tflite.json"


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


def convert(run, batch_size=1):
    """Converts a run's model to a TFLite flatbuffer with builtin ops only.

    The model goes through a `keras.export.ExportArchive` SavedModel (which freezes the variables
    read inside the recurrent loops) and `tf.lite.TFLiteConverter.from_saved_model`.

    Args:
        run: a `zoo.runs.Run`.
        batch_size: the fixed number of pairs per invocation.

    Returns:
        `(flatbuffer bytes, lengths)` with `lengths = {"premise": Lp, "hypothesis": Lh}`.

    Raises:
        ExportError: a bad batch size, no fixed length, or a conversion failure.
    """
    if batch_size < 1:
        raise ExportError(f"the TFLite batch size must be positive, got {batch_size}")
    lengths = _fixed_lengths(run.config)
    model = run.model
    shapes = input_shapes(model, batch_size, lengths)
    spec = [tf.TensorSpec(shape, tf.int32, name=name) for name, shape in shapes.items()]

    def serve(*inputs):
        outputs = model.explain(dict(zip(shapes, inputs)))
        return {"probabilities": tf.cast(outputs["probabilities"], tf.float32)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", serve, input_signature=spec)
    with tempfile.TemporaryDirectory() as saved_model_dir:
        archive.write_out(saved_model_dir, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        try:
            return converter.convert(), lengths
        except Exception as error:  # the converter raises ConverterError with an MLIR trace
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ExportError(f"TFLite conversion of {run.config['model']!r} failed: {first}") from error


def export_tflite(run, out_dir, batch_size=1, overwrite=False):
    """Writes `model.tflite`, `vocab.txt` and `tflite.json` into `out_dir`.

    Args:
        run: a `zoo.runs.Run`.
        out_dir: the output directory.
        batch_size: the fixed number of pairs per invocation.
        overwrite: replace an existing `model.tflite`.

    Returns:
        the path of `model.tflite`.

    Raises:
        ExportError: existing output, no fixed length or conversion failure.
    """
    path = os.path.join(out_dir, MODEL_FILE)
    if os.path.exists(path) and not overwrite:
        raise ExportError(f"{path} already exists; choose another --out")
    flatbuffer, lengths = convert(run, batch_size)
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(os.path.join(run.run_dir, VOCAB_FILE), os.path.join(out_dir, VOCAB_FILE))
    metadata = {"model": run.config["model"], "tokenizer": run.tokenizer.get_config(),
                "labels": list(run.labels), "batch_size": int(batch_size),
                "max_depth": run.model.max_depth if run.model.reads_parse_trees else None,
                "max_premise_length": lengths["premise"], "max_hypothesis_length": lengths["hypothesis"],
                "inputs": {name: {"dtype": "int32", "shape": shape}
                           for name, shape in input_shapes(run.model, batch_size, lengths).items()},
                "outputs": {"probabilities": {"dtype": "float32", "shape": [batch_size, len(run.labels)]}}}
    with open(os.path.join(out_dir, METADATA_FILE), "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=2)
        f.write("\n")
    with open(path, "wb") as f:
        f.write(flatbuffer)
    return path


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

    def predict_probabilities(self, pairs):
        """Class probabilities `float32 [N, 3]` of `[(premise, hypothesis), ...]`."""
        pairs = list(pairs)
        if not pairs:
            return np.zeros((0, len(self.labels)), np.float32)
        ids = self.encode(pairs)
        chunks = []
        for start in range(0, len(pairs), self.batch_size):
            batch = {key: value[start:start + self.batch_size] for key, value in ids.items()}
            rows = len(batch["premise"])
            batch = {key: np.pad(value, [[0, self.batch_size - rows]] + [[0, 0]] * (value.ndim - 1),
                                 constant_values=PAD_ID if value.ndim == 2 else PAD_NODE)
                     for key, value in batch.items()}
            chunks.append(self._runner(**batch)["probabilities"][:rows])
        return np.concatenate(chunks).astype(np.float32)

    def predict(self, pairs):
        """Labels of `[(premise, hypothesis), ...]`, as `zoo.load(run_dir).predict`.

        Returns:
            a list of `{"label": name, "probabilities": {name: float}}`.
        """
        return [{"label": self.labels[int(np.argmax(p))],
                 "probabilities": {name: float(v) for name, v in zip(self.labels, p)}}
                for p in self.predict_probabilities(pairs)]
