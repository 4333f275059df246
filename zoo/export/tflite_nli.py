"""`TFLiteNLI`: a TFLite export (`zoo.export.tflite`) run on raw sentence pairs by the LiteRT interpreter.

The pairs are tokenized with the run's tokenizer in Python, looked up in the shipped `vocab.txt`, padded to
the model's fixed lengths and cut into batches of its fixed batch size. Every file is checked against the
SHA-256 the export's `manifest.json` records (`tflite.json` and `metadata.json` too: labels or a tokenizer
setting changed there would change the answers), and `model.tflite` and `vocab.txt` against those
`tflite.json` records: files of two exports mixed, or changed since, are refused in one line, never answered.
"""

import contextlib
import os

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from zoo import fileio
from zoo.constants import PAD_NODE
from zoo.data.pipeline import encode_pairs
from zoo.data.tokenizer import Tokenizer
from zoo.data.trees import pair_tree_inputs
from zoo.data.vocab import PAD_ID, Vocabulary
from zoo.quiet import quieted
from zoo.runs.kinds import TFLITE_METADATA_FILE as METADATA_FILE
from zoo.runs.kinds import TFLITE_MODEL_FILE as MODEL_FILE
from zoo.runs.layout import VOCAB_FILE
from zoo.runs.pairs import check_pairs

MANIFEST_FILE = "manifest.json"  # the SHA-256 of the export's other files, written last
sha256_of = fileio.sha256_file


class TFLiteNLI:
    """Runs an exported `model.tflite` on raw sentence pairs with the LiteRT interpreter.

    Args:
        path: the export directory, or its `model.tflite`.
        num_threads: interpreter threads (None: LiteRT's default).
        staged: the folder of an export being written (no manifest yet; `tflite.json`'s checksums still
            checked).

    Example:
    ```python
    nli = TFLiteNLI("models/bowman_lstm_tflite")
    nli.predict([("A man plays a guitar.", "A person makes music.")])
    # [{"label": ..., "probabilities": {"entailment": ..., "neutral": ..., "contradiction": ...}}]
    ```
    """

    def __init__(self, path, num_threads=None, staged=False):
        path = os.fspath(path)
        directory = os.path.dirname(path) if path.endswith(".tflite") else path
        self.directory = directory
        if not staged:  # (an export being written checks its files before its manifest exists)
            check_manifest(directory)
        self.metadata = _read_export_json(os.path.join(directory, METADATA_FILE))
        self.labels = tuple(self.metadata["labels"])
        self.batch_size = int(self.metadata["batch_size"])
        self.lengths = {"premise": self.metadata["max_premise_length"],
                        "hypothesis": self.metadata["max_hypothesis_length"]}
        self.tokenizer = Tokenizer.from_config(self.metadata["tokenizer"])
        _check_whole(directory, self.metadata)
        self.vocab = Vocabulary.load(os.path.join(directory, VOCAB_FILE))
        size = self.metadata.get("vocabulary_size")
        if size is not None and len(self.vocab) != size:
            raise ValueError(f"{os.path.join(directory, VOCAB_FILE)} has {len(self.vocab):,} tokens, {METADATA_FILE} "
                             f"says {size:,}: {_MIXED}")
        self.interpreter = Interpreter(model_path=os.path.join(directory, MODEL_FILE), num_threads=num_threads)
        self._runner = self.interpreter.get_signature_runner()
        self._ran = False

    def encode(self, pairs):
        """Inputs of `[(premise, hypothesis), ...]`, truncated and padded to the model's fixed lengths.

        For a model that reads parse trees, pairs may carry their parses as in `zoo.load(run).encode`
        (`(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)`; blank: complete tree).

        Returns:
            `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}`, plus `"premise_tree"` and
            `"hypothesis_tree"` when the model takes them.
        """
        pairs = check_pairs(pairs)
        ids = encode_pairs([pair[:2] for pair in pairs], self.vocab, self.tokenizer,
                           max_premise_length=self.lengths["premise"], max_hypothesis_length=self.lengths["hypothesis"])
        inputs = {key: np.pad(value, [[0, 0], [0, self.lengths[key] - value.shape[1]]],
                              constant_values=PAD_ID).astype(np.int32)
                  for key, value in ids.items()}
        if "premise_tree" in self.metadata["inputs"]:
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
            try:
                # the first call applies LiteRT's XNNPACK delegate, which says so on stderr: filtered (zoo.quiet)
                with quieted() if not self._ran else contextlib.nullcontext():
                    result = self._runner(**batch)
                self._ran = True
            except (RuntimeError, ValueError) as error:  # e.g. "gather index out of bounds": files not of one export
                first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
                raise ValueError(f"{os.path.join(self.directory, MODEL_FILE)} failed ({first}): {_MIXED}") from None
            for name in outputs:
                chunks[name].append(result[name][:rows])
        return {name: np.concatenate(values).astype(np.float32) for name, values in chunks.items()}

    def predict_probabilities(self, pairs):
        """Class probabilities `float32 [N, 3]` of `[(premise, hypothesis), ...]`.

        Raises:
            zoo.runs.pairs.PairError: a pair that is not 2 to 4 strings (one line naming it).
        """
        pairs = check_pairs(pairs)
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
        (pair,) = check_pairs([pair])
        batches = self.run_batches([pair], ["probabilities"] + self.map_names)
        outputs = {name: value[0] for name, value in batches.items()}
        tokens = [self.tokenizer.tokenize(pair[i])[:self.lengths[key]]
                  for i, key in enumerate(("premise", "hypothesis"))]
        return outputs, tokens


_MIXED = ("the export's files do not belong together (an interrupted or mixed export?): export again with "
          "--overwrite")


def _read_export_json(path):
    """`tflite.json`, or one line saying why it cannot be read."""
    try:
        value = fileio.read_json(path, remedy="export again with --overwrite")
    except fileio.CorruptFileError as error:
        raise ValueError(str(error)) from None
    if value is None:
        raise FileNotFoundError(f"{os.path.dirname(path)!r} is not a TFLite export of export.py (no {METADATA_FILE})")
    return value


def check_manifest(directory):
    """Checks the export's files against its `manifest.json` (exports written before it existed have none and
    are checked by `tflite.json`'s SHA-256 alone, unless `tflite.json` says they keep one).

    Raises:
        zoo.fileio.ManifestError: a file changed, missing or not listed, or the manifest missing or damaged.
    """
    path = os.path.join(directory, MANIFEST_FILE)
    remedy = "the export was changed or damaged since it was written: export again with --overwrite"
    recorded = fileio.read_manifest(path, remedy)
    if recorded is None:
        try:
            says = (fileio.read_json(os.path.join(directory, METADATA_FILE)) or {}).get("manifest")
        except fileio.CorruptFileError:
            says = None  # reported when tflite.json is read
        if says:
            raise fileio.ManifestError(f"{path} is missing, so the export's files cannot be checked: {remedy}", path,
                                       MANIFEST_FILE)
        return
    names = sorted(set(recorded) | {n for n in os.listdir(directory) if n != MANIFEST_FILE and not n.startswith(".")})
    fileio.verify_files(directory, recorded, names, lambda name: remedy, MANIFEST_FILE)


def _check_whole(directory, metadata):
    """Checks `model.tflite` and `vocab.txt` against the SHA-256 `tflite.json` records (exports written since
    the records exist; older ones are taken as they are)."""
    for name, expected in (metadata.get("sha256") or {}).items():
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{directory!r} is not a whole TFLite export (no {name}): export again with "
                                    "--overwrite")
        if sha256_of(path) != expected:
            raise ValueError(f"{path} is not the file {METADATA_FILE} was written with: {_MIXED}")
