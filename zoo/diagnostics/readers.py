"""Readers of the diagnostic sets, each in its release's own layout (see docs/diagnostics.md).

Every reader returns examples `{"premise", "hypothesis", "label", "pair_id", ...}` with the label as a name
(`entailment`, `neutral`, `contradiction`; HANS: `entailment`, `non-entailment`) plus the set's own
grouping fields (`category`, `heuristic`/`subcase`/`template`, ...). A row that does not fit its set's
schema raises `DataFormatError` (a `ValueError`) with one line `FILE:LINE: ...` naming the field; a path
that is not there, or a folder without the expected files, raises `DataUnavailableError` (a
`RuntimeError`).
"""

import os
import re
import zipfile

from zoo.data import LABELS
from zoo.data.readers import (
    DataFiles,
    DataFormatError,
    DataUnavailableError,
    delimited_records,
    host_reachable,
    jsonl_records,
    text_lines,
)

NO_GOLD = ("-", "")  # SNLI-style "no annotator majority": such rows are skipped and counted

# Breaking NLI (Glockner et al. 2018): dataset.jsonl, SNLI's fields plus `category`.
BREAKING_NLI_FIELDS = {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label",
                       "category": "category"}
# HANS (McCoy et al. 2019): heuristics_evaluation_set.txt, tab-separated, this header (in this order).
HANS_COLUMNS = ("gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
                "sentence2_parse", "sentence1", "sentence2", "pairID", "heuristic", "subcase", "template")
HANS_REQUIRED = ("gold_label", "sentence1", "sentence2", "pairID", "heuristic", "subcase", "template")
HANS_LABELS = ("entailment", "non-entailment")
# SNLI and MultiNLI's jsonl fields (SNLI hard, the stress tests).
SNLI_FIELDS = {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"}
# ANLI (Nie et al. 2020): R1|R2|R3/{train,dev,test}.jsonl.
ANLI_FIELDS = {"premise": "context", "hypothesis": "hypothesis", "label": "label"}
ANLI_LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}
ANLI_ROUNDS = ("R1", "R2", "R3")
ANLI_SPLITS = ("train", "dev", "test")
ANLI_TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
ANLI_HOST = ("dl.fbaipublicfiles.com", 443)
# Naik et al. 2018: the folders of the Stress_Tests release, in the paper's order.
STRESS_TESTS = ("Antonym", "Numerical_Reasoning", "Word_Overlap", "Negation", "Length_Mismatch", "Spelling_Error")
STRESS_PREFIX = "multinli_0.9_"
STRESS_ROOTS = ("Stress_Tests", "StressTests", "Stress-Tests")


def _check_path(path, what):
    path = os.path.expanduser(os.fspath(path))
    if not os.path.exists(path):
        raise DataUnavailableError(f"{what}: no such file or folder {path!r}")
    return path


def _lines(path):
    """The lines of a plain file as UTF-8 (`DataFormatError` `FILE:LINE:` on bad bytes)."""
    files = DataFiles(os.path.dirname(path) or ".")
    return files.lines(os.path.basename(path))


def _text(record, field, where, what):
    value = record.get(field)
    if not isinstance(value, str):
        present = ", ".join(map(repr, record)) or "none"
        state = "missing" if value is None and field not in record else f"not a text ({type(value).__name__})"
        raise DataFormatError(f"{where}: field {field!r} ({what}) is {state}; the record has {present}")
    return value


def _label(record, field, where, names):
    """The label name of a record (case-insensitive), or None for no gold label."""
    raw = record.get(field)
    if field not in record:
        _text(record, field, where, "the gold label")
    if raw is None or (isinstance(raw, str) and raw.strip() in NO_GOLD):
        return None
    key = raw.strip().casefold() if isinstance(raw, str) else None
    if key not in names:
        known = ", ".join(dict.fromkeys(names.values()))
        raise DataFormatError(f"{where}: field {field!r} is {raw!r}, expected one of {known}")
    return names[key]


def _snli_labels():
    return {name.casefold(): name for name in LABELS}


def _examples(records, fields, names, extra=(), optional=(), id_field=None):
    """Examples of `(where, record)` pairs: premise, hypothesis, label (`names`: key -> label name), the
    `extra` fields (required texts: {field: what}) and `optional` ones; and the count of unlabelled rows."""
    examples, skipped = [], 0
    for where, record in records:
        example = {"premise": _text(record, fields["premise"], where, "the premise"),
                   "hypothesis": _text(record, fields["hypothesis"], where, "the hypothesis")}
        label = _label(record, fields["label"], where, names)
        if label is None:
            skipped += 1
            continue
        example["label"] = label
        for field, what in dict(extra).items():
            example[field] = _text(record, field, where, what)
        for field in optional:
            if isinstance(record.get(field), str):
                example[field] = record[field]
        pair_id = record.get(id_field) if id_field else None
        example["pair_id"] = str(pair_id) if pair_id not in (None, "") else where.rsplit("/", 1)[-1]
        examples.append(example)
    return examples, skipped


def _jsonl(path, lines):
    for lineno, record in jsonl_records(lines, path):
        yield f"{path}:{lineno}", record


def read_jsonl(path, fields=SNLI_FIELDS, names=None, extra=(), id_field="pairID", what="file"):
    """Examples of a JSON-lines file in SNLI's schema (or `fields`), with the `extra` fields required.

    Returns:
        `(examples, skipped)`: skipped counts the rows without gold label (`-` or empty).

    Raises:
        DataUnavailableError: no such file. DataFormatError: a malformed row (`FILE:LINE:`).
    """
    path = _check_path(path, what)
    with _lines(path) as lines:
        return _examples(_jsonl(path, lines), fields, names or _snli_labels(), extra=extra, id_field=id_field)


def read_breaking_nli(path):
    """Breaking NLI's `dataset.jsonl` (Glockner et al. 2018): SNLI's fields plus `category`.

    Returns:
        `(examples, skipped)`; each example has `category` (e.g. `antonyms`, `cardinals`).
    """
    return read_jsonl(path, BREAKING_NLI_FIELDS, extra={"category": "the word category of Breaking NLI"},
                      what="Breaking NLI")


def read_snli_hard(path):
    """SNLI hard (`snli_1.0_test_hard.jsonl`, Gururangan et al. 2018): SNLI's jsonl schema."""
    return read_jsonl(path, what="SNLI hard")


def read_hans(path):
    """HANS's `heuristics_evaluation_set.txt` (McCoy et al. 2019): tab-separated, header `HANS_COLUMNS`.

    Columns are found by name, so another order is read too; `HANS_REQUIRED` must be present.

    Returns:
        `(examples, 0)`; labels `entailment` / `non-entailment`, with `heuristic`, `subcase`, `template`.

    Raises:
        DataFormatError: a header without a required column (`FILE:1:`), a short row, or a gold label other
            than entailment / non-entailment (`FILE:LINE:` naming the field).
    """
    path = _check_path(path, "HANS")
    names = {label: label for label in HANS_LABELS}
    examples = []
    with _lines(path) as lines:
        lines = iter(lines)
        first = next(lines, "")
        header = first.rstrip("\r\n").split("\t")
        absent = [c for c in HANS_REQUIRED if c not in header]
        if absent:
            raise DataFormatError(f"{path}:1: the header has no field {absent[0]!r}; HANS's tab-separated header "
                                  f"is {' '.join(HANS_COLUMNS)}")

        def again():
            yield first
            yield from lines

        for lineno, record in delimited_records(again(), path):
            where = f"{path}:{lineno}"
            missing = [c for c in HANS_REQUIRED if c not in record]
            if missing:
                raise DataFormatError(f"{where}: missing field {missing[0]!r} (the row has {len(record)} of the "
                                      f"header's {len(header)} tab-separated fields)")
            example = {"premise": record["sentence1"], "hypothesis": record["sentence2"],
                       "label": _label(record, "gold_label", where, names)}
            if example["label"] is None:
                raise DataFormatError(f"{where}: field 'gold_label' is empty, expected entailment or non-entailment")
            for field in ("heuristic", "subcase", "template"):
                if not record[field].strip():
                    raise DataFormatError(f"{where}: field {field!r} is empty")
                example[field] = record[field].strip()
            example["pair_id"] = record["pairID"]
            examples.append(example)
    return examples, 0


# Stress tests ----------------------------------------------------------------------------------------
def _stress_root(path):
    for name in STRESS_ROOTS:
        if os.path.isdir(os.path.join(path, name)):
            return os.path.join(path, name)
    return path


def stress_test_files(path):
    """The files of Naik et al.'s stress tests under `path` (the `Stress_Tests` folder or its parent).

    Each test folder (`Antonym`, ..., `Spelling_Error`) holds `multinli_0.9_*.jsonl` files (the
    tab-separated `.txt` twin is read where a file has no `.jsonl`). A name ending `_matched` /
    `_mismatched` is that MultiNLI genre subset; `Numerical_Reasoning/multinli_0.9_quant_hard.jsonl` is
    neither (`all`). The variant is the name between the prefix and the subset, e.g. `antonym`,
    `taut2`, `dev_gram_keyboard`.

    Returns:
        `[{"test", "variant", "subset", "path"}]`, tests in the paper's order then others alphabetically.

    Raises:
        DataUnavailableError: no such folder, or no test files in it.
    """
    root = _stress_root(_check_path(path, "stress tests"))
    if not os.path.isdir(root):
        raise DataUnavailableError(f"stress tests: {root} is not a folder; give the Stress_Tests folder of Naik et "
                                   "al.'s release (or its parent)")
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    folders = [d for d in STRESS_TESTS if d in folders] + [d for d in folders if d not in STRESS_TESTS]
    found = []
    for test in folders:
        names = sorted(os.listdir(os.path.join(root, test)))
        stems = sorted({os.path.splitext(n)[0] for n in names
                        if n.startswith(STRESS_PREFIX) and n.endswith((".jsonl", ".txt"))})
        for stem in stems:
            name = stem + (".jsonl" if stem + ".jsonl" in names else ".txt")
            variant, subset = stem[len(STRESS_PREFIX):], "all"
            for suffix in ("mismatched", "matched"):
                if variant.endswith("_" + suffix):
                    variant, subset = variant[:-len(suffix) - 1], suffix
                    break
            found.append({"test": test, "variant": variant, "subset": subset, "path": os.path.join(root, test, name)})
    if not found:
        raise DataUnavailableError(
            f"stress tests: no {STRESS_PREFIX}*.jsonl files in the folders of {root} (expected "
            f"{', '.join(STRESS_TESTS)} as in Naik et al.'s Stress_Tests release); found: "
            f"{', '.join(folders) or 'no folders'}")
    return found


def read_stress_file(path):
    """One stress-test file: MultiNLI's jsonl schema (`.txt`: its tab-separated twin).

    Returns:
        `(examples, skipped)`.
    """
    if path.endswith(".txt"):
        with _lines(path) as lines:
            records = ((f"{path}:{n}", r) for n, r in delimited_records(lines, path))
            return _examples(records, SNLI_FIELDS, _snli_labels(), id_field="pairID")
    return read_jsonl(path, what="stress test")


# ANLI -------------------------------------------------------------------------------------------------
_ANLI_MEMBER = re.compile(r"(?:^|/)(R[123])/(train|dev|test)\.jsonl$")


def _anli_round(path):
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return parent if parent in ANLI_ROUNDS else os.path.splitext(os.path.basename(path))[0]


def _read_anli_lines(display, lines):
    return _examples(_jsonl(display, lines), ANLI_FIELDS, ANLI_LABELS, optional=("reason",), id_field="uid")


def read_anli(source, split="test", data_dir=None, reachable=host_reachable):
    """ANLI's rounds (Nie et al. 2020).

    Args:
        source: the release folder holding `R1/`, `R2/`, `R3/` (or a folder above it), its zip, one round's
            file (`R2/test.jsonl`: that round only), or `"tfds"` (tensorflow-datasets `anli/r1`..`r3`).
        split: `train`, `dev` or `test` (not used for a single file).
        data_dir: the tensorflow-datasets data dir (`"tfds"` only).
        reachable: the host check before a tfds download (tests replace it).

    Returns:
        `({round: examples}, {round: skipped})`; labels e / n / c become the three names; `reason` kept.

    Raises:
        DataUnavailableError: no such path, no round files, or tfds not prepared and its host unreachable.
        DataFormatError: a malformed row (`FILE:LINE:`), e.g. a label other than e, n, c.
    """
    if split not in ANLI_SPLITS:
        raise ValueError(f"ANLI split {split!r}: expected one of {', '.join(ANLI_SPLITS)}")
    if str(source) == "tfds":
        return _read_anli_tfds(split, data_dir, reachable)
    path = _check_path(source, "ANLI")
    rounds, skipped = {}, {}
    if os.path.isfile(path) and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = {}
            for member in archive.namelist():
                match = _ANLI_MEMBER.search(member)
                if match and match.group(2) == split and "__MACOSX" not in member:
                    members.setdefault(match.group(1), member)
            for name in sorted(members):
                display = f"{path}/{members[name]}"
                with archive.open(members[name]) as binary:
                    lines = text_lines(binary, display, lambda m=members[name]: archive.open(m))
                    rounds[name], skipped[name] = _read_anli_lines(display, lines)
    elif os.path.isfile(path):
        name = _anli_round(path)
        with _lines(path) as lines:
            rounds[name], skipped[name] = _read_anli_lines(path, lines)
    else:
        for directory, subdirs, files in os.walk(path):
            subdirs.sort()
            name = os.path.basename(directory)
            if name in ANLI_ROUNDS and f"{split}.jsonl" in files and name not in rounds:
                file = os.path.join(directory, f"{split}.jsonl")
                with _lines(file) as lines:
                    rounds[name], skipped[name] = _read_anli_lines(file, lines)
    if not rounds:
        raise DataUnavailableError(f"ANLI: no R1/, R2/ or R3/ {split}.jsonl under {path} (expected the release's "
                                   "anli_v1.0 folder or zip, one round's file, or 'tfds')")
    order = sorted(rounds)
    return {k: rounds[k] for k in order}, {k: skipped[k] for k in order}


def _read_anli_tfds(split, data_dir, reachable):
    import tensorflow_datasets as tfds  # here: only ANLI through tfds needs it (0.5 s to import, more with TF)

    rounds, skipped = {}, {}
    for name in ANLI_ROUNDS:
        builder = tfds.builder(f"anli/{name.lower()}", data_dir=data_dir)
        if not builder.is_prepared():
            if not reachable(ANLI_HOST):
                raise DataUnavailableError(
                    f"ANLI from tensorflow-datasets is not prepared in {builder.data_dir} and {ANLI_HOST[0]} cannot "
                    "be reached; give the release instead (--anli DIR: the anli_v1.0 folder or zip from "
                    "https://github.com/facebookresearch/anli)")
            builder.download_and_prepare()
        names = builder.info.features["label"].names  # e, n, c
        examples = []
        for ex in tfds.as_numpy(builder.as_dataset(split=ANLI_TFDS_SPLITS[split])):
            examples.append({"premise": ex["context"].decode("utf-8"), "hypothesis": ex["hypothesis"].decode("utf-8"),
                             "label": ANLI_LABELS[names[int(ex["label"])]], "pair_id": ex["uid"].decode("utf-8")})
        rounds[name], skipped[name] = examples, 0
    return rounds, skipped
