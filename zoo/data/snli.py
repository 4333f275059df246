"""SNLI loaders: tensorflow-datasets `snli`, the original `snli_1.0` folder or zip, and the shipped sample.

Example:
```python
from zoo.data.snli import load_snli
splits, report = load_snli("snli_sample")
splits["train"][0]["premise"], report["dropped_no_gold_label"]
```
"""

import csv
import io
import json
import os
import socket
import zipfile

from zoo.data import LABELS

SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample")
SPLIT_FILES = {"train": "train", "validation": "dev", "test": "test"}  # our split name -> file infix
DOWNLOAD_HOST = ("nlp.stanford.edu", 443)
_REQUIRED = ("gold_label", "sentence1", "sentence2")


class DataUnavailableError(RuntimeError):
    """The requested data set cannot be had here (not prepared and no network, or no such path)."""


class DataFormatError(ValueError):
    """A data file is malformed; the message starts with "FILE:LINE:"."""


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
            path does not exist / lacks a split file.
        DataFormatError: a malformed line or record (the message names file and line).
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


def _host_reachable(address=DOWNLOAD_HOST, timeout=3.0):
    """Returns whether a TCP connection to `address` opens within `timeout` seconds."""
    try:
        socket.create_connection(address, timeout=timeout).close()
        return True
    except OSError:
        return False


def _load_tfds(data_dir=None):
    import tensorflow_datasets as tfds

    builder = tfds.builder("snli", data_dir=data_dir)
    if not builder.is_prepared():
        if not _host_reachable():
            raise DataUnavailableError(_offline_message(
                f"not prepared in {builder.data_dir} and {DOWNLOAD_HOST[0]} cannot be reached"))
        builder.download_and_prepare()
    splits, report = {}, _new_report("tfds:snli")
    for split in SPLIT_FILES:
        examples, dropped = [], 0
        for i, ex in enumerate(tfds.as_numpy(builder.as_dataset(split=split))):
            label = int(ex["label"])
            if label < 0:
                dropped += 1
                continue
            examples.append(_example(ex["premise"].decode("utf-8"), ex["hypothesis"].decode("utf-8"), label,
                                     f"{split}-{i}", "", ""))
        splits[split] = examples
        report["rows"][split] = len(examples)
        report["dropped_no_gold_label"][split] = dropped
    return splits, report


def _new_report(source):
    return {"rows": {}, "dropped_no_gold_label": {}, "source": source}


def _example(premise, hypothesis, label, pair_id, premise_parse, hypothesis_parse):
    return {"premise": premise, "hypothesis": hypothesis, "label": label, "pair_id": pair_id,
            "premise_binary_parse": premise_parse, "hypothesis_binary_parse": hypothesis_parse}


def _load_path(path, keep_raw):
    """Reads the three splits from an snli_1.0 folder or zip (jsonl preferred over txt)."""
    if zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        members = {os.path.basename(n): n for n in archive.namelist()
                   if not n.startswith("__MACOSX") and not n.endswith("/")}
        opener = lambda name: io.TextIOWrapper(archive.open(members[name]), encoding="utf-8")  # noqa: E731
        available = set(members)
    else:
        if os.path.isdir(os.path.join(path, "snli_1.0")):
            path = os.path.join(path, "snli_1.0")
        archive = None
        opener = lambda name: open(os.path.join(path, name), encoding="utf-8")  # noqa: E731
        available = set(os.listdir(path))
    splits, report = {}, _new_report(os.fspath(path))
    try:
        for split, infix in SPLIT_FILES.items():
            stem = f"snli_1.0_{infix}"
            if stem + ".jsonl" in available:
                name, reader = stem + ".jsonl", _jsonl_records
            elif stem + ".txt" in available:
                name, reader = stem + ".txt", _txt_records
            else:
                raise DataUnavailableError(f"{path}: neither {stem}.jsonl nor {stem}.txt found")
            with opener(name) as f:
                splits[split], dropped = _examples(reader(f, name), name, keep_raw)
            report["rows"][split] = len(splits[split])
            report["dropped_no_gold_label"][split] = dropped
    finally:
        if archive is not None:
            archive.close()
    return splits, report


def _jsonl_records(f, name):
    """Yields (line number, record dict) of a jsonl file."""
    for lineno, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"{name}:{lineno}: invalid JSON ({e})") from None
        if not isinstance(record, dict):
            raise DataFormatError(f"{name}:{lineno}: expected a JSON object, got {type(record).__name__}")
        yield lineno, record


def _txt_records(f, name):
    """Yields (line number, record dict) of a tab-separated file with a header line."""
    reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    if header is None:
        raise DataFormatError(f"{name}:1: empty file, expected a header line")
    for fields in reader:
        lineno = reader.line_num
        if not fields:
            continue
        if len(fields) > len(header):
            raise DataFormatError(f"{name}:{lineno}: {len(fields)} tab-separated fields, header has {len(header)}")
        yield lineno, dict(zip(header, fields))


def _examples(records, name, keep_raw):
    """Turns records into examples; returns (examples, number dropped for gold label '-')."""
    examples, dropped = [], 0
    for lineno, record in records:
        for field in _REQUIRED:
            if not isinstance(record.get(field), str):
                raise DataFormatError(f"{name}:{lineno}: missing or non-string field {field!r}")
        gold = record["gold_label"]
        if gold == "-":
            dropped += 1
            continue
        if gold not in LABELS:
            raise DataFormatError(f"{name}:{lineno}: unknown gold_label {gold!r}")
        ex = _example(record["sentence1"], record["sentence2"], LABELS.index(gold), record.get("pairID") or "",
                      record.get("sentence1_binary_parse") or "", record.get("sentence2_binary_parse") or "")
        if keep_raw:
            ex["raw"] = record
        examples.append(ex)
    return examples, dropped
