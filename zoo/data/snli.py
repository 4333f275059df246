"""SNLI loaders: tensorflow-datasets `snli`, the original `snli_1.0` folder or zip, and the shipped sample.

Example:
```python
from zoo.data.snli import load_snli
splits, report = load_snli("snli_sample")
splits["train"][0]["premise"], report["dropped_no_gold_label"]
```
"""

import os

from zoo.data.archives import DataFiles
from zoo.data.errors import DataFormatError, DataUnavailableError
from zoo.data.layout import NO_GOLD_LABEL, SNLI_FIELDS, Layout, read_split_files
from zoo.data.network import host_reachable as _host_reachable
from zoo.data.tfds_reader import read_tfds

__all__ = ["load_snli", "SAMPLE_DIR", "LAYOUT", "FILE_STEMS", "DataFormatError", "DataUnavailableError"]

SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample")
SPLIT_FILES = {"train": "train", "validation": "dev", "test": "test"}  # our split name -> file infix
FILE_STEMS = {split: f"snli_1.0_{infix}" for split, infix in SPLIT_FILES.items()}  # split -> file name less .jsonl/.txt
DOWNLOAD_HOST = ("nlp.stanford.edu", 443)
# SNLI's records: the three sentences fields are required, the pair id and the binary parses read when present.
LAYOUT = Layout(SNLI_FIELDS, optional=("pair_id", "premise_binary_parse", "hypothesis_binary_parse"))


def load_snli(source, data_dir=None, keep_raw=False):
    """Loads SNLI as lists of examples, dropping pairs without a gold label (`-`).

    Args:
        source: `"snli"` (tensorflow-datasets), `"snli_sample"` (rows shipped in the package) or a path
            to an `snli_1.0` folder or `snli_1.0.zip` (jsonl files preferred, else the .txt files).
        data_dir: tensorflow-datasets data directory (only for `"snli"`).
        keep_raw: also keep each original record under `"raw"` (files only; costs memory).

    Returns:
        `(splits, report)`: `splits` maps `"train"`, `"validation"`, `"test"` to lists of examples
        `{"premise", "hypothesis", "label", "pair_id", "premise_binary_parse", "hypothesis_binary_parse"}`
        (label ids index `LABELS`; parses are "" when absent); `report` is
        `{"rows": {split: n}, "dropped_no_gold_label": {split: n}, "source": str}`.

    Raises:
        DataUnavailableError: `"snli"` is not prepared and the download host cannot be reached, or the
            path does not exist / lacks a split file / is neither a folder nor a zip.
        DataFormatError: a malformed line or record (the message names file and line); a corrupt or
            truncated `snli_1.0.zip`, or a member of it failing its CRC check (the message names the zip
            and the member).
    """
    if source == "snli":
        return _load_tfds(data_dir)
    if source == "snli_sample":
        splits, report = _load_path(SAMPLE_DIR, keep_raw)
        report["source"] = "snli_sample"
        return splits, report
    source = os.fspath(source)
    if not os.path.exists(source):
        raise DataUnavailableError(
            f"unknown data set or missing path {source!r}: use 'snli', 'snli_sample' or the path of an "
            "snli_1.0 folder or snli_1.0.zip")
    return _load_path(source, keep_raw)


def _offline_message(detail):
    return (f"SNLI from tensorflow-datasets is not available: {detail}. Offline options: "
            "--data-dir DIR (an snli_1.0 folder or snli_1.0.zip from https://nlp.stanford.edu/projects/snli/) "
            "or --dataset snli_sample (1,289 real SNLI rows shipped with the zoo).")


def _load_tfds(data_dir=None):
    splits, skipped = read_tfds("snli", list(SPLIT_FILES), data_dir, DOWNLOAD_HOST, _offline_message,
                                reachable=_host_reachable)  # looked up at call time: tests replace it
    return splits, _report("tfds:snli", splits, skipped)


def _report(source, splits, skipped):
    return {"rows": {split: len(examples) for split, examples in splits.items()},
            "dropped_no_gold_label": {split: skipped[split][NO_GOLD_LABEL] for split in splits}, "source": source}


def _load_path(path, keep_raw):
    """Reads the three splits from an snli_1.0 folder (or its parent) or zip (jsonl preferred over txt)."""
    if os.path.isdir(os.path.join(path, "snli_1.0")):
        path = os.path.join(path, "snli_1.0")
    with DataFiles(path) as files:
        splits, skipped, _ = read_split_files(files, FILE_STEMS, LAYOUT, keep_raw)
    return splits, _report(os.fspath(path), splits, skipped)
